// Goal: the witnesses classify a service's reply with a table of their own
// (sim/monitors/reply_class.hpp), written from docs/semantics.md §1, so the
// failure class of a fetch or call run is never the core's word.
// Method: one test per row of the table (status, transport kind, text), the
// order rules (structure beats text; the most specific text class wins), and
// the association of replies with a run (the last reply per request id).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/monitors/reply_class.hpp"

namespace rehearse::sim {
namespace {

struct StatusRow {
  int status;
  const char* cls;
};

class ReplyClassStatus : public ::testing::TestWithParam<StatusRow> {};

TEST_P(ReplyClassStatus, TheStatusDecides) {
  const StatusRow row = GetParam();
  ReplyFacts reply;
  reply.status = row.status;
  // A message that says something else never overrides the status field.
  reply.message = "connection reset; quota exhausted";
  ASSERT_TRUE(reply_failure_class(reply).has_value()) << row.status;
  EXPECT_EQ(*reply_failure_class(reply), row.cls) << row.status;
  EXPECT_EQ(status_failure_class(row.status), row.cls) << row.status;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ReplyClassStatus,
    ::testing::Values(StatusRow{408, "timeout"}, StatusRow{429, "rate_limit"},
                      StatusRow{500, "provider_5xx"}, StatusRow{503, "provider_5xx"},
                      StatusRow{504, "provider_5xx"}, StatusRow{599, "provider_5xx"},
                      StatusRow{401, "auth"}, StatusRow{403, "auth"}, StatusRow{400, "validation"},
                      StatusRow{422, "validation"}, StatusRow{404, "not_found"},
                      StatusRow{410, "not_found"}, StatusRow{418, "unknown"},
                      StatusRow{302, "unknown"}, StatusRow{600, "unknown"}));

TEST(ReplyClass, A2xxIsNoFailureWhateverItsBody) {
  for (int status : {200, 201, 204, 299}) {
    ReplyFacts reply;
    reply.status = status;
    reply.body_class = "skip";
    reply.message = "HTTP 403 Forbidden";
    EXPECT_FALSE(reply_failure_class(reply).has_value()) << status;
  }
}

TEST(ReplyClass, TheTransportKindDecidesWithoutAStatus) {
  const std::vector<std::pair<const char*, const char*>> rows{
      {"timeout", "timeout"}, {"connection_refused", "network"}, {"connection_reset", "network"},
      {"dns", "network"},     {"broken_pipe", "network"},        {"carrier_pigeon", "unknown"}};
  for (const auto& [kind, cls] : rows) {
    ReplyFacts reply;
    reply.transport_error = kind;
    reply.message = "HTTP 403 Forbidden";  // text never beats the kind
    EXPECT_EQ(reply_failure_class(reply), std::optional<std::string>(cls)) << kind;
    EXPECT_EQ(transport_failure_class(kind), cls) << kind;
  }
}

struct TextRow {
  const char* text;
  const char* cls;
};

class ReplyClassText : public ::testing::TestWithParam<TextRow> {};

TEST_P(ReplyClassText, TheTextDecidesOnlyWithoutStructure) {
  const TextRow row = GetParam();
  ReplyFacts reply;
  reply.message = row.text;
  EXPECT_EQ(reply_failure_class(reply), std::optional<std::string>(row.cls)) << row.text;
  EXPECT_EQ(text_failure_class(row.text), row.cls) << row.text;
}

INSTANTIATE_TEST_SUITE_P(
    Rows, ReplyClassText,
    ::testing::Values(
        // auth first: the seeds' text-only 403 is auth, not network.
        TextRow{"ConnectionError: HTTP 403", "auth"},
        TextRow{"ConnectionError: HTTP 403 Forbidden", "auth"},
        TextRow{"401 Unauthorized: token revoked", "auth"}, TextRow{"permission denied", "auth"},
        TextRow{"HTTP 400 Bad Request", "validation"},
        TextRow{"validation failed: name", "validation"}, TextRow{"HTTP 422", "validation"},
        TextRow{"issue not found", "not_found"}, TextRow{"HTTP 410 Gone", "not_found"},
        TextRow{"agent configuration error: missing agent", "config"},
        TextRow{"quota exhausted: usage limit reached", "rate_limit"},
        TextRow{"Too Many Requests", "rate_limit"},
        TextRow{"HTTP 503 Service Unavailable", "provider_5xx"},
        TextRow{"upstream said 502", "provider_5xx"},
        // 504 "Gateway Timeout" is the provider's, before timeout.
        TextRow{"504 Gateway Timeout", "provider_5xx"},
        TextRow{"request to model-api timed out after 30s", "timeout"},
        TextRow{"HTTP 408", "timeout"}, TextRow{"connect ECONNREFUSED model-api", "network"},
        TextRow{"read ECONNRESET brokerage", "network"},
        TextRow{"getaddrinfo ENOTFOUND api", "network"},
        // DNS talk is network, not a missing resource.
        TextRow{"host not found", "network"}, TextRow{"write EPIPE x", "network"},
        // Numbers glued to a version, a port or a path are not statuses.
        TextRow{"listening on host:503", "unknown"}, TextRow{"v1.404 released", "unknown"},
        TextRow{"something odd happened", "unknown"}, TextRow{"", "unknown"}));

TraceEvent reply(const std::string& job, TimeMs slot, const std::string& request_id,
                 nlohmann::json fields) {
  TraceEvent e;
  e.type = "service_reply";
  e.job = job;
  e.slot = slot;
  e.data = std::move(fields);
  e.data["request_id"] = request_id;
  return e;
}

TEST(RunReplies, ARequestAnswersWithItsLastReply) {
  RunReplies runs;
  runs.begin("fetch", 1000);
  // r0: 401, the reissue (200), the retried request 403: auth.
  runs.observe(reply("fetch", 1000, "r0", {{"status", 401}}));
  runs.observe(reply("fetch", 1000, "r0", {{"status", 200}}));
  runs.observe(reply("fetch", 1000, "r0", {{"status", 403}}));
  EXPECT_EQ(runs.failed_classes("fetch", 1000), std::vector<std::string>{"auth"});
  // r1: a 401 then a success is no failure; r2 a timeout.
  runs.observe(reply("fetch", 1000, "r1", {{"status", 401}}));
  runs.observe(reply("fetch", 1000, "r1", {{"status", 200}}));
  runs.observe(reply("fetch", 1000, "r2", {{"transport_error", "timeout"}}));
  EXPECT_EQ(runs.failed_classes("fetch", 1000), (std::vector<std::string>{"auth", "timeout"}));
}

TEST(RunReplies, OnlyTheRunsOwnRepliesCount) {
  RunReplies runs;
  // Before the run begins, another slot's, and another job's replies.
  runs.observe(reply("fetch", 1000, "r0", {{"status", 500}}));
  runs.begin("fetch", 1000);
  runs.observe(reply("fetch", 2000, "r0", {{"status", 500}}));
  runs.observe(reply("other", 1000, "r0", {{"status", 500}}));
  EXPECT_TRUE(runs.failed_classes("fetch", 1000).empty());
  runs.observe(reply("fetch", 1000, "r0", {{"status", 429}}));
  EXPECT_EQ(runs.failed_classes("fetch", 1000), std::vector<std::string>{"rate_limit"});
  // A new run of the slot (a retry) starts afresh; an ended run is forgotten.
  runs.begin("fetch", 1000);
  EXPECT_TRUE(runs.failed_classes("fetch", 1000).empty());
  runs.observe(reply("fetch", 1000, "r0", {{"status", 404}}));
  runs.end("fetch", 1000);
  EXPECT_TRUE(runs.failed_classes("fetch", 1000).empty());
}

TEST(RunReplies, ARunWithNoFailedRequestOfItsOwnTakesTheIssuanceItWaitedOn) {
  RunReplies runs;
  runs.begin("a", 1000);
  runs.begin("b", 1000);
  // Run a's request starts the issuance, which fails; run b's request waited
  // on it and was never sent.
  runs.observe(reply("a", 1000, "a/r0", {{"operation", "issue_token"}, {"status", 503}}));
  EXPECT_EQ(runs.failed_classes("a", 1000), std::vector<std::string>{"provider_5xx"});
  EXPECT_EQ(runs.failed_classes("b", 1000), std::vector<std::string>{"provider_5xx"});
  // A failed request of its own wins over a shared issuance.
  runs.observe(reply("b", 1000, "b/r0", {{"status", 403}}));
  EXPECT_EQ(runs.failed_classes("b", 1000), std::vector<std::string>{"auth"});
}

// --- The class of a failed group run (docs/semantics.md §6): its first
// retryable task failure, else its most specific permanent one.

bool default_retryable(const std::string& cls) { return retried_by_default(cls); }

TEST(GroupFailureClass, TheFirstRetryableTaskFailureWins) {
  // A permanent auth failure first, then two retryable ones: the first of
  // those names the run, not the more specific auth.
  EXPECT_EQ(group_failure_class({"auth", "network", "rate_limit"}, default_retryable), "network");
  EXPECT_EQ(group_failure_class({"rate_limit", "timeout"}, default_retryable), "rate_limit");
  // What is retryable is the job's policy: one that retries not_found makes
  // a 404 the first retryable failure.
  const auto not_found_only = [](const std::string& cls) { return cls == "not_found"; };
  EXPECT_EQ(group_failure_class({"timeout", "auth", "not_found"}, not_found_only), "not_found");
  // A policy retrying every class: the first failure.
  const auto every = [](const std::string&) { return true; };
  EXPECT_EQ(group_failure_class({"unknown", "auth"}, every), "unknown");
}

TEST(GroupFailureClass, ElseTheMostSpecificPermanentFailure) {
  // §1's text-fallback order: auth < validation < not_found < config < ... < unknown.
  EXPECT_EQ(group_failure_class({"unknown", "not_found", "validation"}, default_retryable),
            "validation");
  EXPECT_EQ(group_failure_class({"config", "auth"}, default_retryable), "auth");
  EXPECT_EQ(group_failure_class({"unknown", "config"}, default_retryable), "config");
  // unknown names the run only when every failure is unknown.
  EXPECT_EQ(group_failure_class({"unknown", "unknown"}, default_retryable), "unknown");
  // A policy that retries nothing: retryable classes are ranked too.
  const auto none = [](const std::string&) { return false; };
  EXPECT_EQ(group_failure_class({"network", "rate_limit", "unknown"}, none), "rate_limit");
  EXPECT_EQ(group_failure_class({}, default_retryable), "");
}

TEST(GroupFailureClass, TheSpecificityOrderIsSection1s) {
  const std::vector<std::string> order = {"auth",    "validation", "not_found",
                                          "config",  "rate_limit", "provider_5xx",
                                          "timeout", "network",    "unknown"};
  for (std::size_t i = 0; i + 1 < order.size(); ++i) {
    EXPECT_LT(failure_specificity(order[i]), failure_specificity(order[i + 1])) << order[i];
  }
  EXPECT_GE(failure_specificity("no-such-class"), failure_specificity("unknown"));
}

TraceEvent task_reply(const std::string& task, nlohmann::json fields) {
  TraceEvent e = reply("digest", 1000, "digest/" + task + "/1", std::move(fields));
  e.service = "model-api";
  e.data["target"] = task;
  return e;
}

TEST(RunReplies, AGroupRunsTasksFromTheModelApisReplies) {
  RunReplies runs;
  runs.begin("digest", 1000);
  runs.observe(task_reply("holiday", {{"status", 200}, {"body_class", "skip"}}));
  runs.observe(task_reply("summary", {{"status", 403}}));
  runs.observe(task_reply("preview", {{"status", 200}}));  // no valid answer: unknown
  GroupTaskReplies tasks = runs.group_tasks("digest", 1000);
  EXPECT_FALSE(tasks.deliverable);
  EXPECT_EQ(tasks.failed, (std::vector<std::string>{"auth", "unknown"}));
  EXPECT_EQ(group_failure_class(tasks.failed, default_retryable), "auth");
  // Another service's reply (a messenger refusal) is no task; a task's
  // valid answer is a deliverable.
  TraceEvent refusal = reply("digest", 1000, "digest/deliver/team", {{"status", 503}});
  refusal.service = "messenger";
  runs.observe(refusal);
  runs.observe(task_reply("weekly", {{"status", 200}, {"body_class", "summary"}}));
  tasks = runs.group_tasks("digest", 1000);
  EXPECT_TRUE(tasks.deliverable);
  EXPECT_EQ(tasks.failed, (std::vector<std::string>{"auth", "unknown"}));
}

// A delivery refused by the messenger belongs to its run, classed by the
// refusal's text alone (text is all the worker receives): the status number
// outranks the word "Connection" (docs/semantics.md §1). Refused notices and
// other runs' refusals do not count.
TEST(RunReplies, ADeliveryRefusalIsClassedByItsTextUnderItsRun) {
  RunReplies runs;
  runs.begin("digest", 1000);
  const auto refused = [](const std::string& job, TimeMs slot, const std::string& kind,
                          const std::string& reason) {
    TraceEvent e;
    e.type = "message_refused";
    e.service = "messenger";
    e.job = job;
    e.slot = slot;
    e.data = {{"kind", kind}, {"target", "team"}, {"reason", reason}};
    return e;
  };
  runs.observe_refusal(
      refused("digest", 1000, "failure_notice", "messenger: 503 Service Unavailable"));
  runs.observe_refusal(refused("other", 1000, "delivery", "messenger: 503 Service Unavailable"));
  EXPECT_TRUE(runs.group_tasks("digest", 1000).delivery_refusals.empty());
  runs.observe_refusal(refused("digest", 1000, "delivery", "messenger: ConnectionError: HTTP 403"));
  runs.observe_refusal(refused("digest", 1000, "delivery", "messenger: 503 Service Unavailable"));
  EXPECT_EQ(runs.group_tasks("digest", 1000).delivery_refusals,
            (std::vector<std::string>{"auth", "provider_5xx"}));
  runs.end("digest", 1000);
  EXPECT_TRUE(runs.group_tasks("digest", 1000).delivery_refusals.empty());
}

}  // namespace
}  // namespace rehearse::sim
