// Goal: each fault kind is described once, in the table of sim/world/fault_kinds.cpp,
// and the loader, the JSON Schema and the docs follow from it, so that adding a
// kind touches the table and the simulated service that applies it
// (docs/scenario-format.md "Adding a fault kind").
// Method: the schema's fault part and the docs' table of kinds are compared
// with what the table generates (a kind added to the table alone fails here
// until both files are regenerated, and an edit to either file alone fails
// too); the named FaultKind enumerators are checked against the table's
// positions; every kind's keys are exercised through the loader from the
// table itself (each required key removed, each key of another kind added),
// and every kind has the hooks its instant or lasting nature needs.
#include "sim/world/fault_kinds.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "model/token_client.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"
#include "sim/world/brokerage.hpp"

// The example entry names only the fields it sets (as the table does); GCC
// 12 warns about every omitted field of a designated initializer even so.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace rehearse::sim {
namespace {

using nlohmann::json;

std::string source_dir() {
  const char* dir = std::getenv("REHEARSE_SOURCE_DIR");
  if (dir == nullptr) ADD_FAILURE() << "REHEARSE_SOURCE_DIR is not set";
  return dir == nullptr ? std::string(".") : std::string(dir);
}

std::string read_text(const std::string& relative) {
  std::ifstream in(source_dir() + "/" + relative);
  EXPECT_TRUE(in.good()) << relative << " is missing";
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(FaultKinds, SchemaFaultPartIsWhatTheTableGenerates) {
  const json schema = json::parse(read_text("docs/schema/scenario.schema.json"));
  const json& defs = schema.at("$defs");
  const json generated = fault_kinds_schema();
  for (const auto& [name, def] : generated.items()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(defs.contains(name)) << "generated:\n" << def.dump(2);
    EXPECT_EQ(defs.at(name), def) << "in the file:\n"
                                  << defs.at(name).dump(2) << "\ngenerated:\n"
                                  << def.dump(2);
  }
  // And no fault kind lives in the schema alone.
  for (const auto& [name, def] : defs.items()) {
    if (name.rfind("fault_", 0) == 0 && name != "fault_time") {
      EXPECT_TRUE(generated.contains(name)) << name << " is in the schema but not in the table";
    }
  }
  // What to put in the file: these $defs entries, replacing the file's.
  if (HasFailure()) std::cout << "generated fault $defs:\n" << generated.dump(2) << "\n";
}

TEST(FaultKinds, DocsTableIsWhatTheTableGenerates) {
  const std::string doc = read_text("docs/scenario-format.md");
  const std::string begin = "<!-- fault kinds: generated from sim/world/fault_kinds.cpp -->\n";
  const std::string end = "<!-- end of fault kinds -->";
  const auto from = doc.find(begin);
  ASSERT_NE(from, std::string::npos) << "docs/scenario-format.md lacks the marker: " << begin;
  const auto to = doc.find(end, from);
  ASSERT_NE(to, std::string::npos) << "docs/scenario-format.md lacks the marker: " << end;
  const std::string table = doc.substr(from + begin.size(), to - from - begin.size());
  EXPECT_EQ(table, fault_kinds_markdown()) << "generated:\n" << fault_kinds_markdown();
}

TEST(FaultKinds, NamedEnumeratorsAreTheirTablePositions) {
  const std::vector<std::pair<FaultKind, std::string>> named{
      {FaultKind::quota_exhausted, "quota_exhausted"},
      {FaultKind::http_errors, "http_errors"},
      {FaultKind::timeouts, "timeouts"},
      {FaultKind::network_errors, "network_errors"},
      {FaultKind::token_revoked, "token_revoked"},
      {FaultKind::issues_deleted, "issues_deleted"},
      {FaultKind::issue_status, "issue_status"},
      {FaultKind::agent_removed, "agent_removed"},
      {FaultKind::agent_restored, "agent_restored"},
      {FaultKind::restart, "restart"},
      {FaultKind::state_corrupted, "state_corrupted"},
      {FaultKind::torn_write, "torn_write"},
      {FaultKind::messenger_down, "messenger_down"},
      {FaultKind::job_file_corrupted, "job_file_corrupted"},
      {FaultKind::clock_step, "clock_step"},
      {FaultKind::capacity, "capacity"}};
  for (const auto& [kind, name] : named) {
    EXPECT_EQ(fault_kinds().at(static_cast<std::size_t>(kind)).name, name);
    EXPECT_EQ(parse_fault_kind(name), kind);
    EXPECT_EQ(to_string(kind), name);
  }
  for (std::size_t i = 0; i < fault_kinds().size(); ++i) {
    const FaultKindSpec& spec = fault_kinds()[i];
    EXPECT_EQ(parse_fault_kind(spec.name), static_cast<FaultKind>(i));
    EXPECT_EQ(fault_has_duration(static_cast<FaultKind>(i)), spec.lasting);
    EXPECT_EQ(find_fault_kind(spec.name), &spec);
  }
  EXPECT_FALSE(parse_fault_kind("no_such_kind").has_value());
}

TEST(FaultKinds, EveryKindHasTheHooksItsNatureNeeds) {
  for (const FaultKindSpec& kind : fault_kinds()) {
    SCOPED_TRACE(std::string(kind.name));
    // A lasting kind acts through a window set up when the run is prepared;
    // an instant one acts at its instant or schedules its own event.
    if (kind.lasting) {
      EXPECT_TRUE(kind.schedule);
    } else {
      EXPECT_TRUE(kind.schedule || kind.at_instant);
    }
    EXPECT_FALSE(kind.meaning.empty());
    for (const FaultKeySpec& key : kind.keys) {
      SCOPED_TRACE(std::string(key.name));
      EXPECT_FALSE(key.doc.empty());
      EXPECT_NE(key.doc.find("`" + std::string(key.name) + "`"), std::string::npos)
          << "a key's docs text names the key";
      EXPECT_TRUE(key.store) << "every built-in key has its FaultSpec field";
    }
  }
}

// ------------------------------------------------- the loader, from the table

// A scenario that declares everything any fault kind may refer to, with one
// fault of `kind` holding `keys`.
json scenario_with(const std::string& kind, const json& keys) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "fault-kinds",
    "start": "2026-12-04T00:00:00Z", "until": "2026-12-05T00:00:00Z",
    "services": {
      "model-api": {}, "brokerage": {},
      "orchestrator": { "issues": [ { "id": "ISS-1", "status": "todo" } ],
                        "agents": [ { "id": "agent-1", "role": "dev" } ] },
      "messenger": { "targets": ["team"] },
      "partner-api": { "capacity": { "rate": 10 } }
    },
    "jobs": [ { "id": "j", "kind": "publish", "schedule": "0 * * * *", "targets": ["team"] } ]
  })");
  json fault = keys;
  fault["at"] = "+1h";
  fault["kind"] = kind;
  doc["faults"] = json::array({fault});
  return doc;
}

// A valid value for each key name the table uses (by kind where it differs).
json valid_value(const FaultKindSpec& kind, const FaultKeySpec& key) {
  switch (key.type) {
    case FaultKeyType::service: return key.names.front();
    case FaultKeyType::down_time: return "5m";
    case FaultKeyType::integer:
    case FaultKeyType::worker: return key.min;
    case FaultKeyType::rate: return 0.5;
    case FaultKeyType::name: return key.names.front();
    case FaultKeyType::issue: return "ISS-1";
    case FaultKeyType::issue_list: return json::array({"ISS-1"});
    case FaultKeyType::agent: return "agent-1";
    case FaultKeyType::new_instance: return "orchestrator-2";
    case FaultKeyType::targets: return json::array({"team"});
    case FaultKeyType::job: return "j";  // the scenario's publish job
    case FaultKeyType::step: return "-1h";
    case FaultKeyType::rate_limited: return "partner-api";
    case FaultKeyType::cut:
    case FaultKeyType::flips: break;  // each needs its own mode
  }
  (void)kind;
  return nullptr;
}

json required_keys(const FaultKindSpec& kind) {
  json keys = json::object();
  for (const FaultKeySpec& key : kind.keys) {
    if (key.required) keys[std::string(key.name)] = valid_value(kind, key);
  }
  return keys;
}

TEST(FaultKindsLoader, EachKindLoadsWithItsRequiredKeysOnly) {
  for (const FaultKindSpec& kind : fault_kinds()) {
    SCOPED_TRACE(std::string(kind.name));
    const ScenarioCheck c =
        check_scenario_json(scenario_with(std::string(kind.name), required_keys(kind)).dump(),
                            "k.json");
    ASSERT_TRUE(c.valid()) << c.errors.front().describe();
    ASSERT_EQ(c.scenario->faults.size(), 1u);
    EXPECT_EQ(to_string(c.scenario->faults.front().kind), kind.name);
  }
}

TEST(FaultKindsLoader, EachRequiredKeyIsReportedMissingAtTheFault) {
  for (const FaultKindSpec& kind : fault_kinds()) {
    for (const FaultKeySpec& key : kind.keys) {
      if (!key.required) continue;
      SCOPED_TRACE(std::string(kind.name) + "/" + std::string(key.name));
      json keys = required_keys(kind);
      keys.erase(std::string(key.name));
      const ScenarioCheck c =
          check_scenario_json(scenario_with(std::string(kind.name), keys).dump(), "k.json");
      ASSERT_EQ(c.errors.size(), 1u);
      EXPECT_EQ(c.errors.front().where, "k.json:/faults/0");
      EXPECT_NE(c.errors.front().message.find("missing required key '" + std::string(key.name) +
                                              "'"),
                std::string::npos)
          << c.errors.front().message;
    }
  }
}

TEST(FaultKindsLoader, AKeyOfAnotherKindSaysWhereItBelongs) {
  for (const FaultKindSpec& kind : fault_kinds()) {
    const std::vector<std::string> mine = fault_key_names(kind);
    for (const FaultKindSpec& other : fault_kinds()) {
      for (const std::string& key : fault_key_names(other)) {
        if (std::find(mine.begin(), mine.end(), key) != mine.end()) continue;
        SCOPED_TRACE(std::string(kind.name) + " with " + key);
        json keys = required_keys(kind);
        keys[key] = 1;
        const ScenarioCheck c =
            check_scenario_json(scenario_with(std::string(kind.name), keys).dump(), "k.json");
        ASSERT_FALSE(c.valid());
        EXPECT_EQ(c.errors.front().where, "k.json:/faults/0/" + key);
        EXPECT_NE(c.errors.front().message.find("does not apply to"), std::string::npos)
            << c.errors.front().message;
      }
    }
  }
}

// ------------------------------------------ the worked example of the docs

// docs/fault-kinds.md, "A worked example": this entry, appended to the table,
// is the whole of the kind. Nothing else (loader, world, scenario.hpp, the
// brokerage) is changed for it; the brokerage already has the mechanism
// (a window on one operation).
FaultKindSpec token_endpoint_errors() {
  return FaultKindSpec{
      .name = "token_endpoint_errors",
      .lasting = true,
      .applies_to = FaultTarget::service,
      .keys = {FaultKeySpec{.name = "service",
                            .type = FaultKeyType::service,
                            .names = {"brokerage"},
                            .doc = "`service` (`\"brokerage\"`, the default)",
                            .default_value = "brokerage",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.service = parse_service_kind(v.value.get<std::string>());
                                }},
               FaultKeySpec{.name = "status",
                            .type = FaultKeyType::integer,
                            .required = true,
                            .min = 400,
                            .max = 599,
                            .what = "an HTTP status",
                            .doc = "`status` (required, 400..599)",
                            .store =
                                [](FaultSpec& f, const FaultValue& v) {
                                  f.http_status = v.value.get<int>();
                                }}},
      .trace = {{"status",
                 [](const FaultSpec& f) -> std::optional<json> { return f.http_status; }}},
      .meaning = "token requests fail with that status; tokens already issued keep working",
      .schedule =
          [](const FaultSpec& f, std::size_t index, TimeMs from, TimeMs until, FaultWorld& world) {
            if (world.brokerage) {
              BrokerageFault b;
              b.operation = kIssueTokenOperation;
              b.from_ms = from;
              b.until_ms = until;
              b.http_status = f.http_status;
              b.label = fmt::format("{}#{}", to_string(f.kind), index);
              world.brokerage->add_fault(b);
            }
            return Status{};
          },
  };
}

FaultKinds table_with_example() {
  FaultKinds kinds = fault_kinds();
  kinds.push_back(token_endpoint_errors());
  return kinds;
}

json example_scenario(const json& fault) {
  json doc = json::parse(R"({
    "format": 1, "scenario": "token-endpoint",
    "start": "2026-12-04T00:00:00Z", "until": "2026-12-05T00:00:00Z",
    "services": { "brokerage": {} },
    "jobs": [ { "id": "quotes", "kind": "fetch", "schedule": "0 * * * *" } ]
  })");
  doc["faults"] = json::array({fault});
  return doc;
}

TEST(FaultKindsWorkedExample, TheLoaderTakesTheNewKindFromTheTableAlone) {
  const FaultKinds kinds = table_with_example();
  const json fault{
      {"at", "+1h"}, {"for", "2h"}, {"kind", "token_endpoint_errors"}, {"status", 503}};
  const ScenarioCheck good = check_scenario_json(example_scenario(fault).dump(), "t.json", kinds);
  ASSERT_TRUE(good.valid()) << good.errors.front().describe();
  const FaultSpec& spec = good.scenario->faults.at(0);
  EXPECT_EQ(static_cast<std::size_t>(spec.kind), fault_kinds().size());  // the new last position
  EXPECT_EQ(spec.service, ServiceKind::brokerage);                       // the key's default
  EXPECT_EQ(spec.http_status, 503);
  EXPECT_EQ(spec.for_ms, 2 * kHourMs);

  // Its keys are checked like any other kind's, with the same messages.
  json wrong = fault;
  wrong["rate"] = 0.5;
  wrong.erase("status");
  const ScenarioCheck bad = check_scenario_json(example_scenario(wrong).dump(), "t.json", kinds);
  ASSERT_EQ(bad.errors.size(), 2u);
  EXPECT_EQ(bad.errors[0].where, "t.json:/faults/0/rate");
  EXPECT_EQ(bad.errors[0].message, "key 'rate' does not apply to a 'token_endpoint_errors' fault");
  EXPECT_EQ(bad.errors[1].where, "t.json:/faults/0");
  EXPECT_EQ(bad.errors[1].message,
            "missing required key 'status' (an HTTP status from 400 to 599)");
  // And the table without it does not know it.
  EXPECT_FALSE(check_scenario_json(example_scenario(fault).dump(), "t.json").valid());
}

TEST(FaultKindsWorkedExample, AKeyWithoutAFieldLandsInParams) {
  // A new kind's key that no FaultSpec field holds (its entry gives no
  // `store`) reaches the hooks through FaultSpec::params.
  FaultKinds kinds = table_with_example();
  FaultKeySpec requests{.name = "requests",
                        .type = FaultKeyType::integer,
                        .min = 1,
                        .max = 10,
                        .what = "a request count",
                        .doc = "`requests` (1..10)"};
  kinds.back().keys.push_back(requests);
  const json fault{
      {"at", "+1h"}, {"kind", "token_endpoint_errors"}, {"status", 503}, {"requests", 3}};
  const ScenarioCheck c = check_scenario_json(example_scenario(fault).dump(), "t.json", kinds);
  ASSERT_TRUE(c.valid()) << c.errors.front().describe();
  EXPECT_EQ(c.scenario->faults.at(0).params, json({{"requests", 3}}));
  json wrong = fault;
  wrong["requests"] = 11;
  const ScenarioCheck bad = check_scenario_json(example_scenario(wrong).dump(), "t.json", kinds);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].where, "t.json:/faults/0/requests");
  EXPECT_EQ(bad.errors[0].message, "expected a request count from 1 to 10, got 11");
}

TEST(FaultKindsWorkedExample, SchemaAndDocsRowsFollowFromTheEntry) {
  const FaultKinds kinds = table_with_example();
  const json defs = fault_kinds_schema(kinds);
  ASSERT_TRUE(defs.contains("fault_token_endpoint_errors"));
  EXPECT_EQ(defs.at("fault_token_endpoint_errors").at("required"), json::array({"status"}));
  EXPECT_TRUE(defs.at("fault_token_endpoint_errors").at("properties").contains("for"));
  EXPECT_EQ(defs.at("fault").at("allOf").size(), kinds.size());
  EXPECT_NE(fault_kinds_markdown(kinds).find("| `token_endpoint_errors` | lasting | service | "),
            std::string::npos);
}

TEST(FaultKindsWorkedExample, ItsHookOpensTheWindowInTheBrokerage) {
  Simulator sim(SimulatorOptions{});
  Trace trace;
  SimBrokerage brokerage(sim, trace, BrokerageConfig{});
  FaultWorld world;
  world.brokerage = &brokerage;
  FaultSpec fault;
  fault.kind = static_cast<FaultKind>(fault_kinds().size());
  fault.http_status = 503;
  ASSERT_TRUE(token_endpoint_errors().schedule(fault, 0, kHourMs, 3 * kHourMs, world).ok());
  ServiceRequest issue{"brokerage", kIssueTokenOperation, {}, json::object(), {}};
  const SimReply inside = brokerage.handle(issue, 2 * kHourMs);
  ASSERT_TRUE(inside.result.has_response());
  EXPECT_EQ(inside.result.response().status, 503);
  const SimReply after = brokerage.handle(issue, 3 * kHourMs);
  EXPECT_TRUE(after.result.is_success());
}

}  // namespace
}  // namespace rehearse::sim
