// Goal: a valid scenario loads to exactly the typed values and defaults the
// format documents, and an invalid one is refused with every error collected,
// each naming the file, the JSON pointer (or line:column) and a code; what is
// legal but suspicious (a missing policy, a job that never runs) is a flag.
// Method: the fully featured base scenario (scenario_loader_fixtures.hpp) and
// a minimal one are loaded and their fields compared; a few mutations at once
// show the errors' order, codes, limit and that references do not cascade;
// broken syntax, duplicate keys and absurd sizes give their location; each
// flag kind is raised by one change to the base scenario.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/world/scenario.hpp"
#include "tests/sim/world/scenario_loader_fixtures.hpp"

namespace rehearse::sim::loader_test {
namespace {

TEST(ScenarioLoader, BaseScenarioIsValidWithoutFlags) {
  const auto c = check(base_scenario());
  ASSERT_TRUE(c.valid()) << all_errors(c);
  EXPECT_TRUE(c.flags.empty()) << c.flags.front().where << " " << c.flags.front().message;
  ASSERT_TRUE(c.scenario.has_value());
  EXPECT_EQ(c.scenario->faults.size(), 13u);  // one per kind: none silently dropped
  EXPECT_EQ(c.scenario->jobs.size(), 5u);
}

TEST(ScenarioLoader, CallJobCallsUserNamedServicesInOrder) {
  auto loaded = load_scenario_json(base_scenario().dump(), kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  const Scenario& s = *loaded;
  ASSERT_EQ(s.services.user.count("billing-api"), 1u);
  EXPECT_EQ(s.services.user.at("billing-api").timing.latency_ms, 50);
  EXPECT_EQ(s.services.user.at("billing-api").timing.timeout_ms, kDefaultServiceTimeoutMs);
  const JobSpec* job = s.find_job("invoices");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->kind, JobKind::call);
  EXPECT_EQ(job->side_effects, SideEffectKind::none);
  ASSERT_EQ(job->calls.size(), 2u);
  EXPECT_EQ(job->calls[0].service, "billing-api");
  EXPECT_EQ(job->calls[0].method, "POST");
  EXPECT_EQ(job->calls[0].path, "/invoices/sync");
  EXPECT_EQ(job->calls[1].method, "GET");  // defaults
  EXPECT_EQ(job->calls[1].path, "/");
  EXPECT_EQ(s.expect.user_services.at("billing-api").calls, 24);

  // Every service fault kind but token_revoked takes a user service.
  json doc = base_scenario();
  doc["faults"].push_back(json::parse(
      R"({"at": "+1h", "for": "1h", "kind": "quota_exhausted", "service": "billing-api"})"));
  doc["faults"].push_back(json::parse(
      R"({"at": "+2h", "kind": "http_errors", "service": "billing-api", "status": 503})"));
  doc["faults"].push_back(
      json::parse(R"({"at": "+3h", "kind": "timeouts", "service": "billing-api"})"));
  doc["faults"].push_back(
      json::parse(R"({"at": "+4h", "kind": "network_errors", "service": "billing-api"})"));
  const auto c = check(doc);
  ASSERT_TRUE(c.valid()) << all_errors(c);
  for (std::size_t i = 13; i < 17; ++i) {
    EXPECT_EQ(c.scenario->faults[i].user_service, "billing-api");
    EXPECT_FALSE(c.scenario->faults[i].service.has_value());
  }
}

TEST(ScenarioLoader, FillsTypedValuesAndDefaults) {
  auto loaded = load_scenario_json(base_scenario().dump(), kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  const Scenario& s = *loaded;
  EXPECT_EQ(s.path, kPath);
  EXPECT_EQ(s.name, "all-features");
  EXPECT_EQ(s.start_ms, *parse_instant("2026-12-04T00:00:00Z"));
  EXPECT_EQ(s.until_ms, *parse_instant("2026-12-05T00:00:00Z"));
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.env.at("WEEKLY_SUMMARY_CRON"), "0 17 * * 5");
  EXPECT_EQ(s.queue.store, QueueStore::disk);
  EXPECT_EQ(s.queue.concurrency, 1);
  EXPECT_EQ(s.queue.max_events, 50000);

  ASSERT_TRUE(s.services.model_api.has_value());
  EXPECT_EQ(s.services.model_api->timing.latency_ms, 20 * kSecondMs);
  EXPECT_EQ(s.services.model_api->timing.timeout_ms, 2 * kMinuteMs);
  ASSERT_TRUE(s.services.brokerage.has_value());
  EXPECT_EQ(s.services.brokerage->timing.latency_ms, 150);  // an integer is milliseconds
  EXPECT_EQ(s.services.brokerage->timing.timeout_ms, kDefaultServiceTimeoutMs);
  EXPECT_EQ(s.services.brokerage->token_lifetime_ms, 24 * kHourMs);
  ASSERT_TRUE(s.services.orchestrator.has_value());
  EXPECT_EQ(s.services.orchestrator->instance, "paperclip-a");
  ASSERT_EQ(s.services.orchestrator->agents.size(), 2u);
  EXPECT_TRUE(s.services.orchestrator->agents[0].present);
  EXPECT_FALSE(s.services.orchestrator->agents[1].present);
  EXPECT_EQ(s.services.orchestrator->issues[1].status, "in_progress");
  EXPECT_TRUE(s.services.has(ServiceKind::messenger));

  const JobSpec* group = s.find_job("weekly-summary");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->kind, JobKind::group);
  EXPECT_EQ(group->schedule_env, "WEEKLY_SUMMARY_CRON");
  EXPECT_EQ(*group->retry_policy, json("auto"));
  EXPECT_EQ(group->side_effects, SideEffectKind::draft);  // default for group
  ASSERT_EQ(group->tasks.size(), 2u);
  EXPECT_EQ(group->tasks[0].model_calls, 2);
  EXPECT_EQ(group->tasks[1].produces, TaskOutput::skip);
  EXPECT_EQ(group->tasks[1].model_calls, 0);  // a skip asks no model by default
  EXPECT_EQ(group->targets, std::vector<std::string>{"team"});
  EXPECT_EQ(group->pointer, "/jobs/0");

  const JobSpec* fetch = s.find_job("quotes");
  ASSERT_NE(fetch, nullptr);
  EXPECT_EQ(fetch->requests, 2);
  EXPECT_TRUE(fetch->parallel);
  EXPECT_EQ(fetch->side_effects, SideEffectKind::none);
  EXPECT_EQ((*fetch->retry_policy)["attempts"], 3);  // kept raw for the core's parser

  const JobSpec* reconcile = s.find_job("issues");
  ASSERT_NE(reconcile, nullptr);
  ASSERT_EQ(reconcile->items.size(), 3u);
  EXPECT_EQ(reconcile->items[0].stage, "DESIGNING");
  EXPECT_EQ(reconcile->items[1].stage, "BUILDING");
  EXPECT_TRUE(reconcile->items[2].lost);
  EXPECT_EQ(reconcile->batch_size, 5);

  const JobSpec* publish = s.find_job("post");
  ASSERT_NE(publish, nullptr);
  EXPECT_EQ(publish->side_effects, SideEffectKind::publish);
  EXPECT_EQ(publish->idempotency_key, "{job}:{slot}");
  EXPECT_EQ(publish->note, "live posts");
  EXPECT_EQ(s.find_job("nope"), nullptr);

  ASSERT_EQ(s.faults.size(), 13u);
  const FaultSpec& quota = s.faults[0];
  EXPECT_EQ(quota.kind, FaultKind::quota_exhausted);
  EXPECT_EQ(quota.service, ServiceKind::model_api);  // the only service it can hit
  EXPECT_EQ(quota.at_ms, *parse_instant("2026-12-04T16:30:00Z"));
  EXPECT_EQ(quota.for_ms, 2 * kHourMs);
  EXPECT_EQ(quota.end_ms(s.until_ms), *parse_instant("2026-12-04T18:30:00Z"));
  const FaultSpec& http = s.faults[1];
  EXPECT_EQ(http.at_ms, s.start_ms + kHourMs);  // "+1h" resolved against start
  EXPECT_EQ(http.http_status, 503);
  EXPECT_DOUBLE_EQ(http.rate, 0.5);
  EXPECT_DOUBLE_EQ(s.faults[2].rate, 1.0);  // default: every call
  EXPECT_EQ(s.faults[3].transport, TransportErrorKind::dns);
  EXPECT_FALSE(s.faults[3].for_ms.has_value());
  EXPECT_EQ(s.faults[3].end_ms(s.until_ms), s.until_ms);  // no `for`: until the end
  EXPECT_EQ(s.faults[4].service, ServiceKind::brokerage);
  EXPECT_EQ(s.faults[5].issues, std::vector<std::string>{"ISS-1"});
  EXPECT_EQ(s.faults[5].new_instance, "paperclip-b");
  EXPECT_EQ(s.faults[6].status, "in_review");
  EXPECT_EQ(s.faults[7].agent, "agent-lead-1");
  EXPECT_EQ(s.faults[9].down_for_ms, 5 * kMinuteMs);
  EXPECT_EQ(s.faults[10].file, StateFile::jobs_state);
  EXPECT_EQ(s.faults[10].mode, CorruptionMode::truncated);
  EXPECT_EQ(s.faults[11].file, StateFile::retry_state);
  EXPECT_EQ(s.faults[12].targets, std::vector<std::string>{"ops"});
  EXPECT_EQ(s.faults[12].pointer, "/faults/12");

  const JobExpectation& je = s.expect.jobs.at("weekly-summary");
  EXPECT_EQ(je.delivered_slots, 1);
  EXPECT_EQ(je.final_status, RetryStatus::ok);
  EXPECT_EQ(je.retries, 2);
  EXPECT_EQ(je.runs, 3);
  EXPECT_EQ(je.calls, 6);
  EXPECT_EQ(je.max_delay_ms, kHourMs);
  EXPECT_EQ(je.notifications.at(NotificationEvent::retry_scheduled), 2);
  EXPECT_EQ(s.expect.items.at("ISS-1").stage, "DESIGN_FAILED");
  EXPECT_EQ(s.expect.items.at("ISS-1").queries, 1);
  EXPECT_EQ(s.expect.services.at(ServiceKind::brokerage).token_issues, 2);
  EXPECT_EQ(s.expect.notifications.at(NotificationEvent::retry_exhausted), 0);
  EXPECT_EQ(s.expect.violations, std::vector<std::string>{"nothing_lost"});
}

TEST(ScenarioLoader, MinimalScenarioGetsDocumentedDefaults) {
  auto loaded = load_scenario_json(R"({"format": 1, "scenario": "tiny",
      "start": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z",
      "services": {"brokerage": {}},
      "jobs": [{"id": "f", "kind": "fetch", "schedule": "@hourly", "retry_policy": "auto"}]})",
                                   kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_EQ(loaded->seed, 1u);
  EXPECT_EQ(loaded->queue.concurrency, 1);
  EXPECT_EQ(loaded->queue.max_events, 1'000'000);
  EXPECT_EQ(loaded->queue.store, QueueStore::memory);
  EXPECT_EQ(loaded->description, "");
  EXPECT_TRUE(loaded->env.empty());
  EXPECT_EQ(loaded->services.brokerage->token_lifetime_ms, 24 * kHourMs);
  EXPECT_EQ(loaded->services.brokerage->timing.latency_ms, kDefaultServiceLatencyMs);
  EXPECT_EQ(loaded->jobs[0].requests, 1);
  EXPECT_FALSE(loaded->jobs[0].parallel);
  EXPECT_TRUE(loaded->faults.empty());
  EXPECT_TRUE(loaded->expect.violations.empty());
  EXPECT_TRUE(loaded->flags.empty());
}

// The keys added to format 1 later: typed, and absent keys stay unchecked.
TEST(ScenarioLoader, LaterExpectKeysAreTyped) {
  auto loaded = load_scenario_json(base_scenario().dump(), kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  const JobExpectation& w = loaded->expect.jobs.at("weekly-summary");
  ASSERT_TRUE(w.state.has_value());
  EXPECT_EQ(w.state->retry_status, RetryStatus::ok);
  EXPECT_EQ(w.state->next_action, NextAction::none);
  EXPECT_EQ(w.state->next_run_at, std::optional<TimeMs>(*parse_instant("2026-12-11T17:00:00Z")));
  ASSERT_TRUE(w.state->next_retry_at.has_value());
  EXPECT_FALSE(w.state->next_retry_at->has_value());  // null: expected absent
  ASSERT_TRUE(w.state->failure_class.has_value());
  EXPECT_FALSE(w.state->failure_class->has_value());
  EXPECT_EQ(w.state->retry_count, 0);
  ASSERT_TRUE(w.policy.has_value());
  EXPECT_EQ(w.policy->max_retries, 3);
  EXPECT_EQ(w.policy->backoff, BackoffKind::exponential);
  EXPECT_EQ(w.policy->delay_ms, 30 * kMinuteMs);
  EXPECT_EQ(w.policy->budget, BudgetScope::per_slot);
  ASSERT_TRUE(w.slots.has_value());
  ASSERT_EQ(w.slots->size(), 1u);
  const SlotExpectation& slot = w.slots->front();
  const TimeMs at = *parse_instant("2026-12-04T17:00:00Z");
  EXPECT_EQ(slot.slot, at);
  EXPECT_EQ(slot.outcome, SlotOutcome::delivered);
  EXPECT_EQ(slot.attempts, 3);
  // "+30m" is an offset from the slot.
  EXPECT_EQ(slot.attempt_at, (std::vector<TimeMs>{at, at + 30 * kMinuteMs, at + 90 * kMinuteMs}));
  EXPECT_EQ(slot.tolerance_ms, 2 * kSecondMs);
  EXPECT_EQ(slot.notifications.at(NotificationEvent::recovered), 1);
  EXPECT_EQ(slot.pointer, "/expect/jobs/weekly-summary/slots/0");
  EXPECT_EQ(w.messages.at("team").failure_notice, 2);
  EXPECT_EQ(w.messages.at("team").refused, 0);
  ASSERT_TRUE(w.lateness.has_value());
  EXPECT_EQ(w.lateness->at_most_ms, kSecondMs);
  EXPECT_EQ(loaded->expect.items.at("ISS-1").not_found, 1);
  EXPECT_EQ(loaded->expect.damaged_files.at(StateFile::jobs_state), DamagedFileOutcome::kept);
  // A slot without a tolerance gets 1 s.
  json doc = base_scenario();
  erase(doc, "/expect/jobs/weekly-summary/slots/0/tolerance");
  auto plain = load_scenario_json(doc.dump(), kPath);
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_EQ(plain->expect.jobs.at("weekly-summary").slots->front().tolerance_ms, kSecondMs);
  // A format-1 file written before these keys loads as it did: none of them
  // is set, so none is checked.
  json old = base_scenario();
  for (const char* key : {"state", "policy", "slots", "messages", "lateness"}) {
    old["expect"]["jobs"]["weekly-summary"].erase(key);
  }
  old["expect"]["items"]["ISS-1"].erase("not_found");
  old["expect"].erase("damaged_files");
  auto before = load_scenario_json(old.dump(), kPath);
  ASSERT_TRUE(before.ok()) << before.error().describe();
  const JobExpectation& b = before->expect.jobs.at("weekly-summary");
  EXPECT_FALSE(b.state || b.policy || b.slots || b.lateness);
  EXPECT_TRUE(b.messages.empty());
  EXPECT_FALSE(before->expect.items.at("ISS-1").not_found.has_value());
  EXPECT_TRUE(before->expect.damaged_files.empty());
  EXPECT_EQ(b.retries, 2);  // the format-1 keys keep their values
}

// state_corrupted takes exact damage, so a scenario replays the same under
// every seed: `cut` for mode truncated, `flips` for mode flip; each key belongs
// to its mode only.
TEST(ScenarioLoader, StateCorruptedTakesAnExactCutOrExactFlips) {
  {
    json doc = base_scenario();
    set(doc, "/faults/10/cut", 62);
    const auto c = check(doc);
    ASSERT_TRUE(c.valid()) << all_errors(c);
    EXPECT_EQ(c.scenario->faults[10].cut, std::optional<std::uint64_t>(62));
  }
  {
    json doc = base_scenario();
    set(doc, "/faults/10/mode", "flip");
    set(doc, "/faults/10/flips", json::array({7, 1}));
    const auto c = check(doc);
    ASSERT_TRUE(c.valid()) << all_errors(c);
    EXPECT_EQ(c.scenario->faults[10].mode, CorruptionMode::flip);
    EXPECT_EQ(c.scenario->faults[10].flips, (std::vector<std::uint64_t>{7, 1}));
  }
  json wrong_mode = base_scenario();
  set(wrong_mode, "/faults/10/flips", json::array({1}));
  EXPECT_TRUE(has_error(check(wrong_mode), "/faults/10/flips", "applies to mode 'flip' only"));
  json cut_with_flip = base_scenario();
  set(cut_with_flip, "/faults/10/mode", "flip");
  set(cut_with_flip, "/faults/10/cut", 3);
  EXPECT_TRUE(has_error(check(cut_with_flip), "/faults/10/cut", "applies to mode 'truncated'"));
  json twice = base_scenario();
  set(twice, "/faults/10/mode", "flip");
  set(twice, "/faults/10/flips", json::array({3, 3}));
  EXPECT_TRUE(has_error(check(twice), "/faults/10/flips/1", "listed twice"));
  json empty = base_scenario();
  set(empty, "/faults/10/mode", "flip");
  set(empty, "/faults/10/flips", json::array());
  EXPECT_TRUE(has_error(check(empty), "/faults/10/flips", "non-empty array of byte offsets"));
  json negative = base_scenario();
  set(negative, "/faults/10/cut", -1);
  EXPECT_TRUE(has_error(check(negative), "/faults/10/cut", "a byte count"));
}

TEST(ScenarioLoader, ErrorCodesSayWhatKindOfProblem) {
  json doc = base_scenario();
  set(doc, "/jobs/0/schedule", "0 0 30 2 *");
  set(doc, "/jobs/3/targets/0", "nobody");
  set(doc, "/untill", 1);
  set(doc, "/seed", "x");
  set(doc, "/faults/0/for", "1x");
  const auto c = check(doc);
  std::map<std::string, ErrorCode> codes;
  for (const auto& e : c.errors) codes[e.where] = e.code;
  EXPECT_EQ(codes.at("s.json:/jobs/0/schedule"), ErrorCode::never_fires);
  EXPECT_EQ(codes.at("s.json:/jobs/3/targets/0"), ErrorCode::not_found);
  EXPECT_EQ(codes.at("s.json:/untill"), ErrorCode::schema_error);
  EXPECT_EQ(codes.at("s.json:/seed"), ErrorCode::schema_error);
  EXPECT_EQ(codes.at("s.json:/faults/0/for"), ErrorCode::invalid_argument);
}

TEST(ScenarioLoader, CollectsEveryErrorInOnePass) {
  json doc = base_scenario();
  set(doc, "/untill", 1);
  set(doc, "/jobs/0/schedule", "0 0 30 2 *");
  set(doc, "/faults/3/rate", 2);
  set(doc, "/expect/violations/0", "nope");
  const auto c = check(doc);
  ASSERT_EQ(c.errors.size(), 4u) << all_errors(c);
  // In reading order: top-level keys, then jobs, faults, expectations.
  EXPECT_EQ(c.errors[0].where, "s.json:/untill");
  EXPECT_EQ(c.errors[1].where, "s.json:/jobs/0/schedule");
  EXPECT_EQ(c.errors[2].where, "s.json:/faults/3/rate");
  EXPECT_EQ(c.errors[3].where, "s.json:/expect/violations/0");

  // load_* returns the first, saying how many more there are.
  auto loaded = load_scenario_json(doc.dump(), kPath);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().where, "s.json:/untill");
  EXPECT_NE(loaded.error().message.find("(and 3 more errors"), std::string::npos)
      << loaded.error().message;
}

TEST(ScenarioLoader, KeepsAtMostTheErrorLimitAndCountsTheRest) {
  json doc = base_scenario();
  for (int i = 0; i < 150; ++i) doc["extra_" + std::to_string(1000 + i)] = i;
  const auto c = check(doc);
  EXPECT_EQ(c.errors.size(), kScenarioErrorLimit);
  EXPECT_EQ(c.errors_omitted, 150 - kScenarioErrorLimit);
}

TEST(ScenarioLoader, ReferenceErrorsDoNotCascadeFromABrokenDeclaration) {
  // A messenger with a bad latency is still declared: its targets stay
  // usable, so the only error is the latency itself.
  json doc = base_scenario();
  set(doc, "/services/messenger/latency", "slow");
  const auto c = check(doc);
  ASSERT_EQ(c.errors.size(), 1u) << all_errors(c);
  EXPECT_TRUE(has_error(c, "/services/messenger/latency", "invalid duration"));
}

// ----------------------------------------------------------------- syntax

TEST(ScenarioLoader, SyntaxErrorsGiveLineAndColumn) {
  const auto c = check_scenario_json("{\n  \"format\": 1,\n  x\n}", kPath);
  ASSERT_EQ(c.errors.size(), 1u);
  EXPECT_EQ(c.errors[0].where, "s.json:3:3");
  EXPECT_EQ(c.errors[0].code, ErrorCode::parse_error);
  EXPECT_NE(c.errors[0].message.find("syntax error while parsing object key"), std::string::npos)
      << c.errors[0].message;
  EXPECT_NE(c.errors[0].message.find("expected string literal"), std::string::npos);
  // The location is not repeated in the message.
  EXPECT_EQ(c.errors[0].message.find("line 3"), std::string::npos);

  const auto empty = check_scenario_json("", kPath);
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_EQ(empty.errors[0].where, "s.json:1:1");
  EXPECT_NE(empty.errors[0].message.find("unexpected end of input"), std::string::npos);

  const auto trailing = check_scenario_json("{\"a\": 1}\n\n]", kPath);
  ASSERT_EQ(trailing.errors.size(), 1u);
  EXPECT_EQ(trailing.errors[0].where, "s.json:3:1");
  EXPECT_NE(trailing.errors[0].message.find("expected end of input"), std::string::npos);

  const auto overflow = check_scenario_json("{\"seed\": 1e999}", kPath);
  ASSERT_EQ(overflow.errors.size(), 1u);
  EXPECT_NE(overflow.errors[0].message.find("number overflow"), std::string::npos);
}

TEST(ScenarioLoader, DuplicateKeysAreErrors) {
  // nlohmann keeps the last of two equal keys silently; a scenario must not
  // quietly lose one of two schedules.
  std::string text = base_scenario().dump(2);
  const std::string needle = "\"schedule\": \"0 9 * * 1\",";
  const auto pos = text.find(needle);
  ASSERT_NE(pos, std::string::npos);
  text.insert(pos, "\"schedule\": \"0 10 * * 1\", ");
  text.insert(1, "\"format\": 1, ");
  const auto c = check_scenario_json(text, kPath);
  EXPECT_TRUE(has_error(c, "/format", "duplicate key 'format'"));
  EXPECT_TRUE(has_error(c, "/jobs/0/schedule", "duplicate key 'schedule'"));
  EXPECT_EQ(c.errors.size(), 2u) << all_errors(c);
}

TEST(ScenarioLoader, RefusesAbsurdNestingAndSize) {
  // Bounded before anything walks the document recursively.
  json doc = base_scenario();
  json deep = json::array();
  for (int i = 0; i < 100; ++i) deep = json::array({deep});
  set(doc, "/jobs/1/retry_policy", deep);
  const auto c = check(doc);
  ASSERT_EQ(c.errors.size(), 1u) << all_errors(c);
  EXPECT_EQ(c.errors[0].code, ErrorCode::schema_error);
  EXPECT_EQ(c.errors[0].where.rfind("s.json:/jobs/1/retry_policy/0/0/", 0), 0u)
      << c.errors[0].where;
  EXPECT_NE(c.errors[0].message.find("nested more than 64 levels"), std::string::npos);

  // A million brackets stop at the bound instead of exhausting the stack.
  const auto brackets = check_scenario_json(std::string(1'000'000, '['), kPath);
  ASSERT_EQ(brackets.errors.size(), 1u);
  EXPECT_NE(brackets.errors[0].message.find("nested more than"), std::string::npos);

  const auto huge = check_scenario_json(std::string((64u << 20) + 1, ' '), kPath);
  ASSERT_EQ(huge.errors.size(), 1u);
  EXPECT_NE(huge.errors[0].message.find("scenarios are limited to"), std::string::npos);
}

// ------------------------------------------------------------------ flags

std::vector<ScenarioFlag> flags_of(const json& doc) {
  const auto c = check(doc);
  EXPECT_TRUE(c.valid()) << all_errors(c);
  return c.flags;
}

TEST(ScenarioFlags, MissingPolicyIsAFlagNotAnError) {
  json doc = base_scenario();
  erase(doc, "/jobs/1/retry_policy");
  const auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::policy_error);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/1");
  EXPECT_NE(flags[0].message.find("job 'quotes': no retry_policy"), std::string::npos)
      << flags[0].message;
  EXPECT_NE(flags[0].message.find("never retried"), std::string::npos);
}

TEST(ScenarioFlags, InvalidPolicyIsFlaggedWithItsInnerPointer) {
  json doc = base_scenario();
  set(doc, "/jobs/2/retry_policy/backoff_sec", -5);
  auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::policy_error);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/2/retry_policy/backoff_sec");

  doc = base_scenario();
  set(doc, "/jobs/2/retry_policy", "sometimes");
  flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::policy_error);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/2/retry_policy");

  // The scenario still loads: the run replays the omission.
  auto loaded = load_scenario_json(doc.dump(), kPath);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->flags.size(), 1u);
  EXPECT_EQ(*loaded->find_job("issues")->retry_policy, json("sometimes"));
}

TEST(ScenarioFlags, RetryingPublishJobNeedsKeyOrReason) {
  json doc = base_scenario();
  erase(doc, "/jobs/3/idempotency_key");
  auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::side_effects);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/3");
  EXPECT_NE(flags[0].message.find("job 'post'"), std::string::npos);

  // A reason in the policy says why a re-run is safe.
  set(doc, "/jobs/3/retry_policy/reason", "posts are keyed by slot on the server");
  EXPECT_TRUE(flags_of(doc).empty());

  // A publish job that never retries needs neither.
  doc = base_scenario();
  erase(doc, "/jobs/3/idempotency_key");
  set(doc, "/jobs/3/retry_policy",
      json{{"max", 0},
           {"retryable_classes", json::array()},
           {"reason", "live posts are never retried"}});
  EXPECT_TRUE(flags_of(doc).empty());

  // side_effects decides, not the kind: a group job declared "publish" too.
  doc = base_scenario();
  set(doc, "/jobs/0/side_effects", "publish");
  flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/0");
}

TEST(ScenarioFlags, UnusableScheduleOverrideIsFlagged) {
  json doc = base_scenario();
  set(doc, "/env/WEEKLY_SUMMARY_CRON", "");
  auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);  // "auto" cannot be judged without a schedule: no second flag
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_config);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/0/schedule_env");
  EXPECT_NE(flags[0].message.find("WEEKLY_SUMMARY_CRON=\"\""), std::string::npos)
      << flags[0].message;

  set(doc, "/env/WEEKLY_SUMMARY_CRON", "every friday");
  flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_config);

  // A usable override: nothing to flag.
  set(doc, "/env/WEEKLY_SUMMARY_CRON", "0 18 * * 5");
  EXPECT_TRUE(flags_of(doc).empty());
}

TEST(ScenarioFlags, JobThatNeverRunsInTheSpanIsFlagged) {
  json doc = base_scenario();
  set(doc, "/jobs/1/schedule", "0 0 1 1 *");  // New Year only; the span is in December
  const auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_idle);
  EXPECT_EQ(flags[0].where, "s.json:/jobs/1/schedule");

  // A slot exactly at start or until counts as inside the span.
  set(doc, "/jobs/1/schedule", "0 0 4 12 *");
  EXPECT_TRUE(flags_of(doc).empty());
  set(doc, "/jobs/1/schedule", "0 0 5 12 *");
  EXPECT_TRUE(flags_of(doc).empty());
}

TEST(ScenarioFlags, SlotAtTheEpochCountsAsInsideTheSpan) {
  auto loaded = load_scenario_json(R"({"format": 1, "scenario": "epoch",
      "start": "1970-01-01T00:00:00Z", "until": "1970-01-01T00:30:00Z",
      "services": {"brokerage": {}},
      "jobs": [{"id": "f", "kind": "fetch", "schedule": "0 0 * * *", "retry_policy": "auto"}]})",
                                   kPath);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_TRUE(loaded->flags.empty()) << loaded->flags.front().message;
}

TEST(ScenarioFlags, FlagsFollowTheEffectiveSchedule) {
  // The env override is what the job runs on: a default that never fires in
  // the span is fine when the override does.
  json doc = base_scenario();
  set(doc, "/jobs/0/schedule", "0 0 1 1 *");
  EXPECT_TRUE(flags_of(doc).empty());
  erase(doc, "/env/WEEKLY_SUMMARY_CRON");
  const auto flags = flags_of(doc);
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].kind, FlagKind::schedule_idle);
}

}  // namespace
}  // namespace rehearse::sim::loader_test
