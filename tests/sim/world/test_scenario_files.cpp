// Goal: the committed good and bad scenario files load or fail as their
// tables say, the JSON Schema shipped in docs/ cannot drift from the loader,
// and no input, however broken, is refused at the wrong place.
// Method: the files in tests/data are checked against tables that must cover
// every file; the schema's property names and enums are compared with the
// loader's own key lists; properties insert unknown keys and wrong types at
// every location of the base scenario (scenario_loader_fixtures.hpp), move
// faults across the time span, and break the syntax on random lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/world/fleet.hpp"
#include "sim/world/scenario.hpp"
#include "tests/sim/world/scenario_loader_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim::loader_test {
namespace {

std::string source_dir() {
  const char* dir = std::getenv("REHEARSE_SOURCE_DIR");
  // ctest sets it (rehearse_add_test); running the binary by hand needs it too.
  if (dir == nullptr) ADD_FAILURE() << "REHEARSE_SOURCE_DIR is not set";
  return dir == nullptr ? std::string(".") : std::string(dir);
}

std::vector<std::string> json_files_in(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// ---------------------------------------------------------- committed files

TEST(ScenarioFiles, GoodFilesLoad) {
  const std::string dir = source_dir() + "/tests/data/scenarios-good";
  const auto files = json_files_in(dir);
  // An empty or missing directory must not pass quietly.
  ASSERT_GE(files.size(), 3u);
  std::map<std::string, std::size_t> flagged;
  for (const auto& name : files) {
    SCOPED_TRACE(name);
    const auto c = check_scenario_file(dir + "/" + name);
    EXPECT_TRUE(c.valid()) << all_errors(c);
    ASSERT_TRUE(c.scenario.has_value());
    // The file name is the scenario name: one place to look for each.
    EXPECT_EQ(c.scenario->name + ".json", name);
    if (!c.flags.empty()) flagged[name] = c.flags.size();
  }
  // Exactly one committed file is flagged on purpose (it replays omissions).
  EXPECT_EQ(flagged, (std::map<std::string, std::size_t>{{"policy-omission.json", 2}}));
}

TEST(ScenarioFiles, FlaggedFileNamesEachOmission) {
  const auto c =
      check_scenario_file(source_dir() + "/tests/data/scenarios-good/policy-omission.json");
  ASSERT_TRUE(c.valid()) << all_errors(c);
  ASSERT_EQ(c.flags.size(), 2u);
  EXPECT_EQ(c.flags[0].kind, FlagKind::policy_error);
  EXPECT_NE(c.flags[0].where.find("policy-omission.json:/jobs/0/retry_policy"), std::string::npos);
  EXPECT_EQ(c.flags[1].kind, FlagKind::side_effects);
  EXPECT_NE(c.flags[1].where.find("policy-omission.json:/jobs/1"), std::string::npos);
}

TEST(ScenarioFiles, BadFilesFailWithTheExpectedError) {
  const std::string dir = source_dir() + "/tests/data/scenarios-bad";
  // Every bad file and the first error it must produce; the table and the
  // directory must match exactly so no file goes untested.
  const std::map<std::string, std::pair<std::string, std::string>> expected{
      {"bad-duration.json", {":/services/messenger/latency", "invalid duration \"1.5s\""}},
      {"bad-instant.json", {":/start", "invalid instant"}},
      {"duplicate-key.json", {":/jobs/0/schedule", "duplicate key 'schedule'"}},
      {"expect-slot-outcome.json",
       {":/expect/jobs/weekly/slots/0/outcome", "unknown slot outcome \"lost\""}},
      {"fault-outside-span.json", {":/faults/0/at", "outside the scenario's time span"}},
      {"never-fires.json", {":/jobs/0/schedule", "invalid cron \"0 0 30 2 *\": "}},
      {"messenger-service-fault.json",
       {":/faults/0/service",
        "fault kind 'http_errors' cannot target the messenger (use "
        "messenger_down for the messenger)"}},
      {"syntax-error.json", {":7:1", "syntax error while parsing object key"}},
      {"unknown-job-reference.json",
       {":/expect/jobs/posts",
        "unknown job 'posts' (not declared in /jobs); did you mean 'post'?"}},
      {"unknown-key.json", {":/untill", "unknown key 'untill' (did you mean 'until'?)"}},
      {"unknown-target.json",
       {":/jobs/0/targets/0",
        "unknown target 'team-weekley' (not declared in "
        "/services/messenger/targets); did you mean 'team-weekly'?"}},
      {"wrong-type.json",
       {":/queue/concurrency", "expected an integer from 1 to 64, got string \"1\""}},
      {"zone-unknown.json", {":/jobs/0/tz", "unknown time zone \"Mars/Olympus\""}},
      {"zone-posix-string.json",
       {":/jobs/0/tz", "unknown time zone \"CET-1CEST,M3.5.0,M10.5.0/3\""}},
      {"zone-empty.json", {":/jobs/0/tz", "empty time zone name"}},
      {"zone-two-zones.json", {":/jobs/0/schedule", "(name one zone, in one place)"}},
      {"clock-step-zero.json", {":/faults/0/by", "invalid clock step \"0s\""}},
  };
  const auto files = json_files_in(dir);
  std::vector<std::string> table_names;
  for (const auto& [name, unused] : expected) table_names.push_back(name);
  EXPECT_EQ(files, table_names);
  for (const auto& [name, error] : expected) {
    SCOPED_TRACE(name);
    const std::string path = dir + "/" + name;
    const auto c = check_scenario_file(path);
    ASSERT_FALSE(c.valid());
    EXPECT_EQ(c.errors.size(), 1u) << all_errors(c);
    EXPECT_EQ(c.errors[0].where, path + error.first);
    EXPECT_NE(c.errors[0].message.find(error.second), std::string::npos) << c.errors[0].message;
  }
}

TEST(ScenarioFiles, MissingFileIsAnIoError) {
  const auto c = check_scenario_file("/nonexistent/dir/x.json");
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0].code, ErrorCode::io_error);
  EXPECT_EQ(c.errors[0].where, "/nonexistent/dir/x.json");
  auto loaded = load_scenario_file("/nonexistent/dir/x.json");
  EXPECT_FALSE(loaded.ok());
}

// ------------------------------------------------------- schema agreement

json load_schema() {
  std::ifstream in(source_dir() + "/docs/schema/scenario.schema.json");
  EXPECT_TRUE(in.good()) << "docs/schema/scenario.schema.json is missing";
  return json::parse(in);
}

std::vector<std::string> property_names(const json& node) {
  std::vector<std::string> names;
  for (const auto& [key, unused] : node.at("properties").items()) names.push_back(key);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(ScenarioSchema, PropertyNamesEqualTheLoadersKeysAtEveryLevel) {
  const json schema = load_schema();
  EXPECT_EQ(schema.at("$schema"), "https://json-schema.org/draft/2020-12/schema");
  // The fleet block's levels are sim/world/fleet.hpp's (fleet_known_keys).
  auto known = scenario_known_keys();
  for (const auto& [level, keys] : fleet_known_keys()) known[level] = keys;
  for (const auto& [level, keys] : known) {
    SCOPED_TRACE(level);
    const json& node = level == "scenario" ? schema : schema.at("$defs").at(level);
    EXPECT_EQ(property_names(node), sorted(keys));
  }
  // And the other way round: every object the schema describes is known to
  // the loader (a level added to the schema alone would be unchecked).
  for (const auto& [name, node] : schema.at("$defs").items()) {
    if (node.contains("properties")) {
      EXPECT_EQ(known.count(name), 1u) << name;
    }
  }
}

TEST(ScenarioSchema, ObjectsAreClosedEverywhere) {
  // additionalProperties false on plain objects; the kind-dependent ones
  // (job, fault) close with unevaluatedProperties so their if/then branches
  // add the kind's keys.
  const json schema = load_schema();
  EXPECT_EQ(schema.at("additionalProperties"), false);
  for (const auto& [name, node] : schema.at("$defs").items()) {
    if (!node.contains("properties")) continue;
    SCOPED_TRACE(name);
    const bool branch = name.rfind("job_", 0) == 0 && name != "job_expectation";
    const bool fault_branch = name.rfind("fault_", 0) == 0;
    if (branch || fault_branch) {
      EXPECT_FALSE(node.contains("additionalProperties"));  // would break the merge
    } else if (name == "job" || name == "fault") {
      EXPECT_EQ(node.at("unevaluatedProperties"), false);
    } else if (name == "services" || name == "expect_services") {
      // Any other key names a service of the user's own, described exactly.
      EXPECT_EQ(node.at("additionalProperties").at("$ref"),
                name == "services" ? "#/$defs/user_service" : "#/$defs/user_service_expectation");
    } else {
      EXPECT_EQ(node.at("additionalProperties"), false);
    }
  }
}

TEST(ScenarioSchema, KindBranchesCoverEveryKind) {
  const json schema = load_schema();
  const json& defs = schema.at("$defs");
  const auto branch_kinds = [&](const char* object) {
    std::vector<std::string> kinds;
    for (const auto& branch : defs.at(object).at("allOf")) {
      const std::string kind = branch.at("if").at("properties").at("kind").at("const");
      EXPECT_EQ(branch.at("then").at("$ref"), std::string("#/$defs/") + object + "_" + kind);
      kinds.push_back(kind);
    }
    return sorted(kinds);
  };
  std::vector<std::string> fault_kinds;
  for (int i = 0; i <= static_cast<int>(FaultKind::capacity); ++i) {
    fault_kinds.push_back(to_string(static_cast<FaultKind>(i)));
  }
  EXPECT_EQ(branch_kinds("fault"), sorted(fault_kinds));
  EXPECT_EQ(sorted(defs.at("fault").at("properties").at("kind").at("enum")), sorted(fault_kinds));
  std::vector<std::string> job_kinds;
  for (const JobKind kind : all_job_kinds()) job_kinds.push_back(to_string(kind));
  EXPECT_EQ(branch_kinds("job"), sorted(job_kinds));
}

TEST(ScenarioSchema, EnumsEqualTheLoadersVocabulary) {
  const json schema = load_schema();
  const json& defs = schema.at("$defs");
  EXPECT_EQ(defs.at("issue_status").at("enum").get<std::vector<std::string>>(),
            issue_status_names());
  EXPECT_EQ(defs.at("stage").at("enum").get<std::vector<std::string>>(), stage_names());
  EXPECT_EQ(
      defs.at("notification_counts").at("propertyNames").at("enum").get<std::vector<std::string>>(),
      notification_event_names());
  EXPECT_EQ(defs.at("expect")
                .at("properties")
                .at("violations")
                .at("items")
                .at("enum")
                .get<std::vector<std::string>>(),
            invariant_names());
  EXPECT_EQ(
      defs.at("queue").at("properties").at("store").at("enum").get<std::vector<std::string>>(),
      queue_store_names());
  std::vector<std::string> files;
  for (int i = 0; i <= static_cast<int>(StateFile::jobs_state); ++i) {
    files.push_back(to_string(static_cast<StateFile>(i)));
  }
  EXPECT_EQ(defs.at("state_file").at("enum").get<std::vector<std::string>>(), files);
  EXPECT_EQ(defs.at("slot_expectation")
                .at("properties")
                .at("outcome")
                .at("enum")
                .get<std::vector<std::string>>(),
            slot_outcome_names());
  std::vector<json> classes;
  for (const FailureClass c : all_failure_classes()) classes.emplace_back(to_string(c));
  classes.emplace_back(nullptr);
  EXPECT_EQ(defs.at("state_expectation")
                .at("properties")
                .at("failure_class")
                .at("enum")
                .get<std::vector<json>>(),
            classes);
  std::vector<std::string> modes;
  for (int i = 0; i <= static_cast<int>(CorruptionMode::flip); ++i) {
    modes.push_back(to_string(static_cast<CorruptionMode>(i)));
  }
  EXPECT_EQ(defs.at("fault_state_corrupted")
                .at("properties")
                .at("mode")
                .at("enum")
                .get<std::vector<std::string>>(),
            modes);
}

TEST(ScenarioVocabulary, EventNamesAreTheCoresNotificationEvents) {
  for (const auto& name : notification_event_names()) {
    const auto event = parse_notification_event(name);
    ASSERT_TRUE(event.has_value()) << name;
    EXPECT_EQ(to_string(*event), name);
  }
  for (int i = 0; i <= static_cast<int>(FaultKind::messenger_down); ++i) {
    const auto kind = static_cast<FaultKind>(i);
    EXPECT_EQ(parse_fault_kind(to_string(kind)), kind);
  }
  for (int i = 0; i <= static_cast<int>(ServiceKind::messenger); ++i) {
    const auto kind = static_cast<ServiceKind>(i);
    EXPECT_EQ(parse_service_kind(to_string(kind)), kind);
  }
  EXPECT_FALSE(parse_service_kind("model_api").has_value());
  EXPECT_EQ(default_side_effects(JobKind::publish), SideEffectKind::publish);
  EXPECT_EQ(default_side_effects(JobKind::fetch), SideEffectKind::none);
  EXPECT_EQ(default_side_effects(JobKind::call), SideEffectKind::none);
  EXPECT_TRUE(fault_has_duration(FaultKind::messenger_down));
  EXPECT_FALSE(fault_has_duration(FaultKind::restart));
}

// ------------------------------------------------------------- properties

// Pointers of every object in the base scenario whose keys are fixed by the
// format (free-form maps and retry policies, which the core judges, excluded).
std::vector<std::string> fixed_key_objects() {
  std::vector<std::string> out;
  const std::function<void(const json&, const std::string&)> walk = [&](const json& node,
                                                                        const std::string& at) {
    if (at.find("/retry_policy") != std::string::npos) return;
    if (node.is_object()) {
      const bool notifications =
          at.size() >= 14 && at.compare(at.size() - 14, 14, "/notifications") == 0;
      // /services: any key not near a built-in name declares a user service.
      // expect: maps keyed by declared names (messages by target, damaged
      // files by state file) refuse an unknown name as a reference.
      const bool messages = at.size() >= 9 && at.compare(at.size() - 9, 9, "/messages") == 0;
      const bool free_form = at == "/env" || at == "/services" || at == "/expect/jobs" ||
                             at == "/expect/items" || at == "/expect/damaged_files" ||
                             notifications || messages;
      if (!free_form) out.push_back(at);
      for (const auto& [key, value] : node.items()) walk(value, at + "/" + key);
    } else if (node.is_array()) {
      for (std::size_t i = 0; i < node.size(); ++i) walk(node[i], at + "/" + std::to_string(i));
    }
  };
  walk(base_scenario(), "");
  return out;
}

REHEARSE_PROP(ScenarioProperties, UnknownKeyIsReportedWhereItIs, ()) {
  static const std::vector<std::string> objects = fixed_key_objects();
  RC_ASSERT(objects.size() > 35u);  // the walk really found the nested objects
  const std::string at = *rc::gen::elementOf(objects);
  // "x_" + lower-case letters: never a known key (none starts with x).
  const std::string key =
      "x_" + *rc::gen::container<std::string>(rc::gen::inRange('a', static_cast<char>('z' + 1)));
  json doc = base_scenario();
  doc[json::json_pointer(at)][key] = *rc::gen::arbitrary<int>();
  const auto c = check(doc);
  RC_ASSERT(c.errors.size() == 1u);
  RC_ASSERT(c.errors[0].where == std::string(kPath) + ":" + at + "/" + key);
  RC_ASSERT(c.errors[0].message.find("key '" + key + "'") != std::string::npos);
}

REHEARSE_PROP(ScenarioProperties, WrongTypeIsReportedAtItsPointer, ()) {
  // Every scalar in the file (outside retry policies) replaced by a value of
  // a type no scalar slot accepts yields an error at exactly that pointer.
  static const std::vector<std::string> leaves = [] {
    std::vector<std::string> out;
    const json flat = base_scenario().flatten();  // items() must not outlive it
    for (const auto& [pointer, unused] : flat.items()) {
      if (pointer.find("/retry_policy") == std::string::npos) out.push_back(pointer);
    }
    return out;
  }();
  RC_ASSERT(leaves.size() > 100u);
  const std::string at = *rc::gen::elementOf(leaves);
  json replacement =
      *rc::gen::elementOf(std::vector<json>{json(nullptr), json::array(), json::object(),
                                            json::array({1}), json{{"a", 1}}});
  // expect.jobs.<id>.state: an instant or a class may be null ("none expected").
  const bool nullable = at.find("/state/next_") != std::string::npos ||
                        at.find("/state/failure_class") != std::string::npos;
  if (nullable && replacement.is_null()) replacement = json::array();
  json doc = base_scenario();
  doc[json::json_pointer(at)] = replacement;
  const auto c = check(doc);
  RC_ASSERT(!c.valid());
  const std::string where = std::string(kPath) + ":" + at;
  RC_ASSERT(std::any_of(c.errors.begin(), c.errors.end(),
                        [&](const Error& e) { return e.where == where; }));
}

REHEARSE_PROP(ScenarioProperties, FaultsAreAcceptedExactlyInsideTheSpan, ()) {
  json doc = base_scenario();
  const TimeMs start = *parse_instant("2026-12-04T00:00:00Z");
  const DurationMs span = kDayMs;
  const DurationMs offset = *rc::gen::inRange<DurationMs>(0, 2 * span);
  const bool as_offset = *rc::gen::arbitrary<bool>();
  const std::string at =
      as_offset ? "+" + std::to_string(offset) + "ms" : format_instant(start + offset);
  set(doc, "/faults/9/at", at);
  set(doc, "/faults/9/down_for", 0);
  const auto c = check(doc);
  if (offset <= span) {
    RC_ASSERT(c.valid());
    RC_ASSERT(c.scenario->faults[9].at_ms == start + offset);
  } else {
    RC_ASSERT(c.errors.size() == 1u);
    RC_ASSERT(c.errors[0].where == std::string(kPath) + ":/faults/9/at");
  }
}

REHEARSE_PROP(ScenarioProperties, LastingFaultsEndByUntil, ()) {
  json doc = base_scenario();
  const DurationMs offset = *rc::gen::inRange<DurationMs>(0, kDayMs + 1);
  const DurationMs length = *rc::gen::inRange<DurationMs>(1, 2 * kDayMs);
  set(doc, "/faults/0/at", "+" + std::to_string(offset) + "ms");
  set(doc, "/faults/0/for", length);
  const auto c = check(doc);
  if (offset + length <= kDayMs) {
    RC_ASSERT(c.valid());
    RC_ASSERT(c.scenario->faults[0].end_ms(c.scenario->until_ms) ==
              c.scenario->start_ms + offset + length);
  } else {
    RC_ASSERT(c.errors.size() == 1u);
    RC_ASSERT(c.errors[0].where == std::string(kPath) + ":/faults/0/for");
  }
}

REHEARSE_PROP(ScenarioProperties, SyntaxErrorLocationIsTheBrokenLine, ()) {
  // A stray character at the start of any line of a pretty-printed file is
  // reported at that line, column 1 (no string spans lines, so it is always
  // outside a string).
  const std::string text = base_scenario().dump(2);
  std::vector<std::size_t> line_starts{0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') line_starts.push_back(i + 1);
  }
  const std::size_t line = *rc::gen::inRange<std::size_t>(0, line_starts.size());
  std::string broken = text;
  broken.insert(line_starts[line], "@");
  const auto c = check_scenario_json(broken, kPath);
  RC_ASSERT(c.errors.size() == 1u);
  RC_ASSERT(c.errors[0].where == std::string(kPath) + ":" + std::to_string(line + 1) + ":1");
}

}  // namespace
}  // namespace rehearse::sim::loader_test
