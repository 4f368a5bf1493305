// Goal: the pure parts of the reconcile job follow docs/semantics.md §8:
// next_stage moves pipeline stages forward only and never regresses over any
// sequence of statuses; the backoff doubles from 1 min and caps at 1 h; roles
// map as the table says and agent ids are shortened for logs; answers are
// interpreted with a 404 as its own type; a handoff checks the lead and the
// role agent first; the pipeline store and codec round-trip, never reset
// progress and fail closed on a corrupt file.
// Method: tables and RapidCheck properties over the pure functions; the
// PipelineStore over the simulated disk.
#include "model/reconcile.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/agent_roles.hpp"
#include "model/pipeline_store.hpp"
#include "sim/world/sim_disk.hpp"
#include "tests/model/reconcile_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::reconcile_test {
namespace {

// =================================================================== pure parts

TEST(NextStage, MovesForwardOnlyAndKeepsTerminalAndUnknown) {
  struct Case {
    const char* current;
    const char* incoming;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"DESIGNING", "in_progress", "BUILDING"},
      {"DESIGNING", "in_review", "REVIEWING"},
      {"BUILDING", "in_review", "REVIEWING"},
      {"REVIEWING", "in_progress", "REVIEWING"},
      {"BUILDING", "todo", "BUILDING"},
      {"REVIEWING", "todo", "REVIEWING"},
      {"DESIGNING", "todo", "DESIGNING"},
      {"BUILDING", "in_progress", "BUILDING"},
      {"DESIGNING", "done", "DONE"},
      {"REVIEWING", "done", "DONE"},
      {"DONE", "in_progress", "DONE"},
      {"DONE", "todo", "DONE"},
      {"DESIGN_FAILED", "in_progress", "DESIGN_FAILED"},
      {"DESIGN_FAILED", "done", "DESIGN_FAILED"},
      {"BUILDING", "blocked", "BUILDING"},
      {"DESIGNING", "cancelled", "DESIGNING"},
      {"DESIGNING", "IN_PROGRESS", "DESIGNING"},  // statuses are exact names
      {"DESIGNING", "BUILDING", "DESIGNING"},     // a stage name is not a status
      {"LEGACY_QA", "in_review", "LEGACY_QA"},    // unknown current: left as it is
      {"LEGACY_QA", "done", "LEGACY_QA"},
      {"", "in_progress", ""},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(next_stage(c.current, c.incoming), c.expected) << c.current << " + " << c.incoming;
  }
  EXPECT_EQ(stage_for_status("in_progress"), std::optional<std::string_view>("BUILDING"));
  EXPECT_EQ(stage_for_status("backlog"), std::nullopt);
  EXPECT_TRUE(is_terminal_stage("DONE"));
  EXPECT_TRUE(is_terminal_stage("DESIGN_FAILED"));
  EXPECT_FALSE(is_terminal_stage("REVIEWING"));
  EXPECT_EQ(stage_rank("DESIGNING"), 0);
  EXPECT_EQ(stage_rank("REVIEWING"), 2);
  EXPECT_EQ(stage_rank("DONE"), std::nullopt);
}

REHEARSE_PROP(NextStage, NeverRegressesOverAnySequence, ()) {
  const std::string start = *rc::gen::elementOf(all_stages());
  const auto statuses =
      *rc::gen::container<std::vector<std::string>>(rc::gen::elementOf(all_statuses()));
  std::string stage = start;
  for (const std::string& status : statuses) {
    const std::string next = next_stage(stage, status);
    if (is_terminal_stage(stage) || !is_known_stage(stage)) {
      RC_ASSERT(next == stage);  // terminal and unknown stages never change
    } else {
      RC_ASSERT(order_of(next) >= order_of(stage));
    }
    stage = next;
  }
  // The result is the furthest stage any observation pointed to (DONE beats all).
  if (stage_rank(start)) {
    std::string expected = start;
    for (const std::string& status : statuses) {
      const auto target = stage_for_status(status);
      if (!target || is_terminal_stage(expected)) continue;
      if (*target == kStageDone || *stage_rank(*target) > *stage_rank(expected)) {
        expected = std::string(*target);
      }
    }
    RC_ASSERT(stage == expected);
  }
}

TEST(ReconcileBackoff, DoublesFromOneMinuteAndCapsAtOneHour) {
  const std::vector<DurationMs> expected = {1, 2, 4, 8, 16, 32, 60, 60, 60};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(transient_backoff_ms(static_cast<int>(i) + 1), expected[i] * kMinuteMs) << i + 1;
  }
  EXPECT_EQ(transient_backoff_ms(1000), kHourMs);
  EXPECT_EQ(kConfigDeferralMs, kHourMs);
}

REHEARSE_PROP(ReconcileBackoff, MonotoneAndBounded, ()) {
  const int n = *rc::gen::inRange(1, 100'000);
  const DurationMs d = transient_backoff_ms(n);
  RC_ASSERT(d >= kMinuteMs);
  RC_ASSERT(d <= kHourMs);
  RC_ASSERT(transient_backoff_ms(n + 1) >= d);
  RC_ASSERT(transient_backoff_ms(n + 1) == std::min(2 * d, kHourMs));
}

TEST(AgentRoles, MapsTheFourRolesAndTheLegacyNames) {
  const std::map<std::string, Role> table = {
      {"lead", Role::lead},         {"dev", Role::dev},          {"ops", Role::ops},
      {"planning", Role::planning}, {"ceo", Role::lead},         {"chief", Role::lead},
      {"manager", Role::lead},      {"engineer", Role::dev},     {"developer", Role::dev},
      {"coder", Role::dev},         {"builder", Role::dev},      {"sre", Role::ops},
      {"devops", Role::ops},        {"operator", Role::ops},     {"pm", Role::planning},
      {"planner", Role::planning},  {"product", Role::planning}, {"strategist", Role::planning},
      {"Lead", Role::lead},         {" CEO ", Role::lead},       {"DevOps", Role::ops},
  };
  for (const auto& [name, role] : table) {
    auto parsed = parse_role(name);
    ASSERT_TRUE(parsed.ok()) << name;
    EXPECT_EQ(*parsed, role) << name;
  }
  for (const char* unknown : {"", "leader", "qa", "admin", "dev ops", "c e o", "intern"}) {
    auto parsed = parse_role(unknown);
    ASSERT_FALSE(parsed.ok()) << unknown;
    EXPECT_EQ(parsed.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(parsed.error().message.find("unknown agent role"), std::string::npos);
  }
  EXPECT_TRUE(is_legacy_role_name("ceo"));
  EXPECT_FALSE(is_legacy_role_name("lead"));
  EXPECT_FALSE(is_legacy_role_name("wizard"));
  EXPECT_STREQ(role_env_var(Role::lead), "AGENT_LEAD_ID");
  EXPECT_STREQ(role_env_var(Role::dev), "AGENT_DEV_ID");
  EXPECT_STREQ(role_env_var(Role::ops), "AGENT_OPS_ID");
  EXPECT_STREQ(role_env_var(Role::planning), "AGENT_PLANNING_ID");
}

TEST(AgentRoles, AgentIdsComeFromTheEnvironmentAndAreShortenedForLogs) {
  const Environment env = default_env();
  for (const Role role : kAllRoles) ASSERT_TRUE(agent_id_for(role, env).ok()) << to_string(role);
  EXPECT_EQ(*agent_id_for(Role::dev, env), kDevId);
  Environment missing = env;
  missing.erase("AGENT_OPS_ID");
  missing["AGENT_LEAD_ID"] = "";
  for (const Role role : {Role::ops, Role::lead}) {
    auto id = agent_id_for(role, missing);
    ASSERT_FALSE(id.ok());
    EXPECT_NE(id.error().message.find(role_env_var(role)), std::string::npos);
  }
  EXPECT_EQ(short_id(kLeadId), "agt-lead");
  EXPECT_EQ(short_id(kLeadId).size(), 8u);
  EXPECT_EQ(short_id("abc"), "abc");
  EXPECT_EQ(short_id(""), "");
}

TEST(InterpretAnswer, NotFoundIsItsOwnTypeAndTransientIsSeparated) {
  const auto status = [](int code, std::string message = {}) {
    ServiceResponse response;
    response.status = code;
    response.body = message.empty() ? nlohmann::json() : nlohmann::json{{"message", message}};
    return ServiceResult(response);
  };
  EXPECT_TRUE(std::holds_alternative<nlohmann::json>(interpret_answer(status(200))));
  EXPECT_TRUE(std::holds_alternative<IssueNotFound>(interpret_answer(status(404))));
  EXPECT_EQ(std::get<IssueNotFound>(interpret_answer(status(410))).http_status, 410);
  // The status decides, never the text: a 503 that says "not found" is transient.
  EXPECT_TRUE(std::holds_alternative<TransientFailure>(
      interpret_answer(status(503, "upstream issue not found"))));
  EXPECT_TRUE(std::holds_alternative<TransientFailure>(interpret_answer(status(500))));
  EXPECT_TRUE(std::holds_alternative<TransientFailure>(interpret_answer(status(429))));
  EXPECT_TRUE(std::holds_alternative<TransientFailure>(interpret_answer(status(408))));
  EXPECT_TRUE(std::holds_alternative<TransientFailure>(interpret_answer(
      ServiceResult(TransportError{TransportErrorKind::connection_reset, "read ECONNRESET"}))));
  EXPECT_EQ(std::get<TransientFailure>(interpret_answer(ServiceResult(TransportError{
                                           TransportErrorKind::timeout, "timed out"})))
                .failure_class,
            FailureClass::timeout);
  EXPECT_TRUE(std::holds_alternative<RejectedFailure>(interpret_answer(status(403))));
  EXPECT_TRUE(std::holds_alternative<RejectedFailure>(interpret_answer(status(422))));
  EXPECT_TRUE(std::holds_alternative<RejectedFailure>(interpret_answer(status(302))));
}

AgentDirectory directory_with(std::vector<AgentEntry> agents) {
  return AgentDirectory{"orch-a", std::move(agents)};
}

TEST(PlanHandoff, ChecksTheLeadAndTheRoleAgentBeforeHandingOver) {
  const ReconcileConfig config;  // BUILDING -> dev, REVIEWING -> lead
  const Environment env = default_env();
  const AgentDirectory full = directory_with({{kLeadId, "lead"}, {kDevId, "dev"}});

  auto building = plan_handoff("BUILDING", config, env, full);
  ASSERT_TRUE(building.ok()) << building.error().message;
  ASSERT_TRUE(building->has_value());
  EXPECT_EQ((*building)->role, Role::dev);
  EXPECT_EQ((*building)->agent_id, kDevId);
  auto reviewing = plan_handoff("REVIEWING", config, env, full);
  ASSERT_TRUE(reviewing.ok());
  EXPECT_EQ((*reviewing)->agent_id, kLeadId);
  // Stages that need no agent.
  for (const char* stage : {"DONE", "DESIGN_FAILED", "DESIGNING"}) {
    auto none = plan_handoff(stage, config, env, full);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value()) << stage;
  }
  // Legacy names in the orchestrator's list are accepted.
  EXPECT_TRUE(plan_handoff("BUILDING", config, env,
                           directory_with({{kLeadId, "ceo"}, {kDevId, "engineer"}}))
                  .ok());

  const auto expect_config_error = [&](const Result<std::optional<Handoff>>& r,
                                       const std::string& needle) {
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
    // Never the whole id.
    for (const std::string& id : {kLeadId, kDevId}) {
      EXPECT_EQ(r.error().message.find(id), std::string::npos) << r.error().message;
    }
  };
  expect_config_error(plan_handoff("BUILDING", config, env, directory_with({{kDevId, "dev"}})),
                      "lead agent agt-lead (AGENT_LEAD_ID) is missing");
  expect_config_error(plan_handoff("BUILDING", config, env, directory_with({{kLeadId, "lead"}})),
                      "dev agent agt-dev0 (AGENT_DEV_ID) is missing");
  expect_config_error(plan_handoff("BUILDING", config, env,
                                   directory_with({{kLeadId, "wizard"}, {kDevId, "dev"}})),
                      "unknown role 'wizard'");
  expect_config_error(plan_handoff("BUILDING", config, env,
                                   directory_with({{kLeadId, "sre"}, {kDevId, "dev"}})),
                      "expected lead");
  Environment no_lead = env;
  no_lead.erase("AGENT_LEAD_ID");
  expect_config_error(plan_handoff("BUILDING", config, no_lead, full), "AGENT_LEAD_ID is not set");
  ReconcileConfig bad_role = config;
  bad_role.stage_roles["BUILDING"] = "janitor";
  expect_config_error(plan_handoff("BUILDING", bad_role, env, full),
                      "unknown agent role 'janitor'");
  ReconcileConfig legacy_role = config;
  legacy_role.stage_roles["BUILDING"] = "coder";
  auto legacy = plan_handoff("BUILDING", legacy_role, env, full);
  ASSERT_TRUE(legacy.ok());
  EXPECT_EQ((*legacy)->role, Role::dev);
}

TEST(AgentDirectory, ParsesTheListAndRefusesMalformedOnes) {
  auto ok = parse_agent_directory(
      nlohmann::json{{"instance", "i-1"}, {"agents", {{{"id", "a"}, {"role", "dev"}}}}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->instance, "i-1");
  ASSERT_EQ(ok->agents.size(), 1u);
  EXPECT_FALSE(parse_agent_directory(nlohmann::json{{"agents", nlohmann::json::array()}}).ok());
  EXPECT_FALSE(parse_agent_directory(nlohmann::json{{"instance", "i"}}).ok());
  EXPECT_FALSE(parse_agent_directory(
                   nlohmann::json{{"instance", "i"}, {"agents", {{{"id", 3}, {"role", "dev"}}}}})
                   .ok());
}

// ============================================================ pipeline store

PipelineItem sample_item(const std::string& issue) {
  PipelineItem item;
  item.id = default_item_id(issue);
  item.issue = issue;
  item.stage = kStageBuilding;
  item.reconcile_error = "get_issue: HTTP 503";
  item.failures = 2;
  item.next_attempt_at = kStart + 2 * kMinuteMs;
  item.last_config_error_at = kStart - kHourMs;
  item.validated_instance = "orch-a";
  item.updated_at = kStart;
  return item;
}

TEST(PipelineStore, MissingIsEmptyAndItemsRoundTrip) {
  sim::SimDisk disk;
  PipelineStore store(disk, "/pipe");
  auto empty = store.load();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  const PipelineItem a = sample_item("ISS-1");
  PipelineItem b = sample_item("ISS-2");
  b.last_config_error_at.reset();
  b.stage = "LEGACY_QA";  // an unknown stage is kept as it is
  ASSERT_TRUE(store.save_item(a).ok());
  ASSERT_TRUE(store.save_item(b).ok());
  PipelineItem a2 = a;
  a2.stage = kStageReviewing;
  ASSERT_TRUE(store.save_item(a2).ok());
  auto loaded = store.load();
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->size(), 2u);
  EXPECT_EQ((*loaded)[0], a2);
  EXPECT_EQ((*loaded)[1], b);
  // Durable: a power loss right now keeps everything (temp, fsync, rename, fsync dir).
  disk.crash();
  auto after = store.load();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *loaded);
  EXPECT_FALSE(disk.live_content("/pipe/pipeline.json.tmp").has_value());
}

TEST(PipelineStore, SeedingNeverResetsProgress) {
  sim::SimDisk disk;
  PipelineStore store(disk, "/pipe");
  PipelineItem seed_a;
  seed_a.id = "pipe-A";
  seed_a.issue = "A";
  PipelineItem seed_b = seed_a;
  seed_b.id = "pipe-B";
  seed_b.issue = "B";
  auto added = store.add_missing({seed_a});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, 1u);
  PipelineItem done = seed_a;
  done.stage = kStageDone;
  ASSERT_TRUE(store.save_item(done).ok());
  added = store.add_missing({seed_a, seed_b});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, 1u);
  auto a = store.find("A");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->stage, kStageDone);
  added = store.add_missing({seed_a, seed_b});
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, 0u);
}

TEST(PipelineStore, CorruptFileFailsClosedAndIsKept) {
  for (const std::string& bad :
       {std::string(), std::string("{\"format\": 1, \"items\": ["),
        std::string("{\"format\": 2, \"items\": []}"),
        std::string("{\"format\": 1, \"items\": [{\"id\": \"x\"}]}"), std::string("[]")}) {
    sim::SimDisk disk;
    ASSERT_TRUE(disk.make_dirs("/pipe").ok());
    ASSERT_TRUE(disk.put_durable("/pipe/pipeline.json", bad).ok());
    PipelineStore store(disk, "/pipe");
    auto loaded = store.load();
    ASSERT_FALSE(loaded.ok()) << bad;
    EXPECT_EQ(loaded.error().code, ErrorCode::corrupt);
    EXPECT_TRUE(store.corrupt());
    EXPECT_FALSE(store.save_item(sample_item("ISS-1")).ok());
    EXPECT_FALSE(store.add_missing({sample_item("ISS-1")}).ok());
    EXPECT_EQ(disk.live_content("/pipe/pipeline.json"), bad) << "a corrupt file is never replaced";
  }
}

REHEARSE_PROP(PipelineCodec, RoundTripsAnyItems, ()) {
  const int n = *rc::gen::inRange(0, 6);
  std::vector<PipelineItem> items;
  for (int i = 0; i < n; ++i) {
    PipelineItem item;
    item.issue = fmt::format("ISS-{}", i);
    item.id = default_item_id(item.issue);
    item.stage = *rc::gen::elementOf(all_stages());
    // Valid UTF-8 (printable ASCII and a fixed non-ASCII sample); invalid
    // bytes are replaced on write, see InvalidUtf8IsReplacedNotThrown.
    item.reconcile_error =
        *rc::gen::container<std::string>(rc::gen::inRange<char>(32, 127)) + "\u00e9\u4e2d";
    item.failures = *rc::gen::inRange(0, 50);
    item.next_attempt_at = kStart + *rc::gen::inRange<std::int64_t>(0, 10 * kDayMs);
    if (*rc::gen::arbitrary<bool>())
      item.last_config_error_at = kStart + *rc::gen::inRange(0, 1000);
    item.validated_instance = *rc::gen::elementOf(std::vector<std::string>{"", "orch-a", "orch-b"});
    item.updated_at = kStart;
    items.push_back(std::move(item));
  }
  auto decoded = decode_pipeline(encode_pipeline(items));
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == items);
}

TEST(PipelineCodec, InvalidUtf8IsReplacedNotThrown) {
  // An orchestrator's error text may hold any bytes; storing it must not throw.
  PipelineItem item = sample_item("ISS-1");
  item.reconcile_error = "bad \xE9 byte";
  auto decoded = decode_pipeline(encode_pipeline({item}));
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->size(), 1u);
  EXPECT_EQ((*decoded)[0].reconcile_error, "bad \xEF\xBF\xBD byte");  // U+FFFD
}

}  // namespace
}  // namespace rehearse::reconcile_test
