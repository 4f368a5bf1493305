// rehearse::testing generators (sim/testing/generators.hpp, docs/library.md):
// every generated document loads with the real loader; fault schedules are
// drawn from the whole table of fault kinds, every key of every kind; and
// RapidCheck's shrinking takes a schedule or a scenario down to its least.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/testing/generators.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/policy_files.hpp"
#include "tests/support/property.hpp"

// (after rapidcheck.h, which it needs)
#include <rapidcheck/shrinkable/Operations.h>

namespace rehearse::testing {
namespace {

using nlohmann::json;

std::string source_dir() { return REHEARSE_SOURCE_DIR; }

std::vector<std::string> bundled_scenarios() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/scenarios")) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A scenario file's document, its policy files inline (the document is
// loaded under another name, away from the file's directory).
json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return sim::inline_policy_files(json::parse(ss.str()), path);
}

std::string load_error(const json& doc) {
  auto loaded = sim::load_scenario_json(doc.dump(), "generated.json");
  return loaded ? std::string() : loaded.error().describe() + "\n" + doc.dump(2);
}

// A world that declares everything a fault may name.
FaultTargets everything() {
  FaultTargets t;
  t.start_ms = *parse_instant("2026-12-07T00:00:00Z");
  t.until_ms = t.start_ms + 12 * kHourMs;
  t.services = {"model-api", "orchestrator", "brokerage", "messenger"};
  t.user_services = {"api-1"};
  t.rate_limited = {"api-1"};
  t.orchestrator = true;
  t.instance = "orchestrator-1";
  t.issues = {"ISS-1", "ISS-2"};
  t.agents = {"agent-1"};
  t.messenger = true;
  t.targets = {"team-1", "team-2"};
  t.workers = 2;
  t.file_jobs = {"report"};
  return t;
}

// The scenario document for `everything()`, with these faults.
json everything_doc(const json& faults) {
  return json{{"format", 1},
              {"scenario", "everything"},
              {"start", "2026-12-07T00:00:00Z"},
              {"until", "2026-12-07T12:00:00Z"},
              {"queue", {{"workers", 2}}},
              {"services",
               {{"model-api", json::object()},
                {"brokerage", json::object()},
                {"api-1", {{"capacity", {{"rate", 600}, {"per", "1m"}}}}},
                {"messenger", {{"targets", {"team-1", "team-2"}}}},
                {"orchestrator",
                 {{"issues",
                   {{{"id", "ISS-1"}, {"status", "todo"}}, {{"id", "ISS-2"}, {"status", "done"}}}},
                  {"agents", {{{"id", "agent-1"}, {"role", "dev"}}}}}}}},
              {"jobs",
               {{{"id", "sync"},
                 {"kind", "call"},
                 {"schedule", "0 * * * *"},
                 {"retry_policy", "auto"},
                 {"calls", {{{"service", "api-1"}}}}},
                {{"id", "report"},
                 {"kind", "publish"},
                 {"schedule", "0 * * * *"},
                 {"retry_policy", "auto"},
                 {"targets", {"team-1"}}}}},
              {"faults", faults}};
}

template <typename T>
T sample(const rc::Gen<T>& gen, int seed, int size = 50) {
  return gen(rc::Random(static_cast<std::uint64_t>(seed)), size).value();
}

REHEARSE_PROP(TestingGenerators, EveryGeneratedScenarioLoads, ()) {
  const json doc = *gen::scenario();
  RC_ASSERT(load_error(doc) == "");
  RC_ASSERT(!doc.contains("expect"));
  std::set<std::string> issues;  // each issue belongs to one reconcile job's items
  std::size_t items = 0;
  for (const json& job : doc.at("jobs")) {
    for (const json& item : job.value("items", json::array())) {
      issues.insert(item.at("issue").get<std::string>());
      ++items;
    }
  }
  RC_ASSERT(issues.size() == items);
  RC_TAG(doc.at("faults").size() > 0 ? "faults" : "no faults");
}

REHEARSE_PROP(TestingGenerators, EveryBundledScenarioTakesGeneratedFaults, ()) {
  static const std::vector<std::string> files = bundled_scenarios();
  const std::string path = *rc::gen::elementOf(files);
  const json doc = *gen::with_faults(read_json(path));
  RC_ASSERT(load_error(doc) == "");
  RC_ASSERT(!doc.contains("expect"));
}

REHEARSE_PROP(TestingGenerators, FaultsOfEveryKindLoad, ()) {
  const json faults = *gen::fault_schedule(everything());
  RC_ASSERT(load_error(everything_doc(faults)) == "");
}

// Every kind of the table is generated, and every key of every kind, both
// present and (when optional) absent: the generator knows no kind by name.
TEST(TestingGenerators, EveryKindAndKeyOfTheTableIsDrawn) {
  const FaultTargets t = everything();
  ASSERT_EQ(gen::applicable_fault_kinds(t).size(), sim::fault_kinds().size());
  std::map<std::string, std::set<std::string>> keys_seen;  // kind -> keys present
  std::map<std::string, int> seen;
  for (int seed = 0; seed < 3000; ++seed) {
    const json f = sample(gen::fault(t), seed);
    const std::string kind = f.at("kind");
    ++seen[kind];
    for (const auto& [key, value] : f.items()) keys_seen[kind].insert(key);
  }
  for (const sim::FaultKindSpec& kind : sim::fault_kinds()) {
    const std::string name(kind.name);
    EXPECT_GT(seen[name], 0) << name;
    for (const std::string& key : sim::fault_key_names(kind)) {
      EXPECT_TRUE(keys_seen[name].count(key)) << name << " never got key " << key;
    }
  }
}

TEST(TestingGenerators, KindsFollowWhatTheScenarioDeclares) {
  FaultTargets bare;  // nothing declared: the process and the state files only
  bare.start_ms = 0;
  bare.until_ms = kHourMs;
  const std::vector<std::string> kinds = gen::applicable_fault_kinds(bare);
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"restart", "state_corrupted", "torn_write", "clock_step"}));
  FaultTargets user = bare;  // a service of the user's own takes the service kinds
  user.user_services = {"billing"};
  EXPECT_EQ(gen::applicable_fault_kinds(user),
            (std::vector<std::string>{"quota_exhausted", "http_errors", "timeouts",
                                      "network_errors", "restart", "state_corrupted", "torn_write",
                                      "clock_step"}));
  FaultTargets limited = user;  // one with a rate limit also takes a lowered rate
  limited.rate_limited = {"billing"};
  EXPECT_EQ(gen::applicable_fault_kinds(limited),
            (std::vector<std::string>{"quota_exhausted", "http_errors", "timeouts",
                                      "network_errors", "restart", "state_corrupted", "torn_write",
                                      "clock_step", "capacity"}));
}

// Shrinking: a schedule that must hold a restart of at least 10 minutes
// shrinks to that one restart, at `start`, down exactly 10 minutes.
TEST(TestingGenerators, ScheduleShrinksToOneFaultAtStartWithTheLeastDuration) {
  const FaultTargets t = everything();
  const auto long_restart = [](const json& faults) {
    return std::any_of(faults.begin(), faults.end(), [](const json& f) {
      return f.at("kind") == "restart" &&
             *parse_duration(f.at("down_for").get<std::string>()) >= 10 * kMinuteMs;
    });
  };
  int found = 0;
  for (int seed = 0; seed < 400 && found < 5; ++seed) {
    const auto shrinkable =
        gen::fault_schedule(t)(rc::Random(static_cast<std::uint64_t>(seed)), 60);
    if (!long_restart(shrinkable.value())) continue;
    ++found;
    const json least = rc::shrinkable::findLocalMin(shrinkable, long_restart).first;
    EXPECT_EQ(least, json::array({{{"at", "+0ms"}, {"kind", "restart"}, {"down_for", "10m"}}}))
        << "from " << shrinkable.value().dump();
  }
  EXPECT_EQ(found, 5);
}

// A lasting fault shrinks to 1 s; a rate to 1 (its default); a whole
// scenario to one job, one hour, one fault.
TEST(TestingGenerators, ScenarioShrinksToOneJobOneHourOneFault) {
  const auto has_fault = [](const json& doc) { return !doc.at("faults").empty(); };
  int found = 0;
  for (int seed = 0; seed < 200 && found < 3; ++seed) {
    const auto shrinkable = gen::scenario()(rc::Random(static_cast<std::uint64_t>(seed)), 60);
    const json& doc = shrinkable.value();
    if (!has_fault(doc) || doc.at("jobs").size() < 2) continue;
    ++found;
    const json least = rc::shrinkable::findLocalMin(shrinkable, has_fault).first;
    EXPECT_EQ(least.at("jobs").size(), 1u);
    EXPECT_EQ(least.at("until"), "2026-12-07T01:00:00Z");
    ASSERT_EQ(least.at("faults").size(), 1u);
    const json& f = least.at("faults")[0];
    EXPECT_EQ(f.at("at"), "+0ms");
    if (f.contains("for")) {
      EXPECT_EQ(f.at("for"), "1s") << f.dump();
    }
    if (f.contains("rate")) {
      EXPECT_EQ(f.at("rate"), 1.0) << f.dump();
    }
    EXPECT_EQ(load_error(least), "");
  }
  EXPECT_EQ(found, 3);
}

TEST(TestingGenerators, WithFaultsRefusesADocumentThatDoesNotLoad) {
  json doc = everything_doc(json::array());
  doc.erase("until");
  EXPECT_THROW(gen::with_faults(doc), std::invalid_argument);
}

}  // namespace
}  // namespace rehearse::testing
