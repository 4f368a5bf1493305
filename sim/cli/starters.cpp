#include "sim/cli/starters.hpp"

#include <fmt/core.h>

#include "model/assert.hpp"

namespace rehearse::cli {
namespace {

using nlohmann::ordered_json;

// The part every starter shares: a nine-hour Monday morning, seed 1.
ordered_json header(const StarterOptions& o, const std::string& name,
                    const std::string& description) {
  // The starters' own defaults: a name when the user gives none, and words.
  REHEARSE_ASSERT(!name.empty());
  REHEARSE_ASSERT(!description.empty());
  ordered_json doc;
  doc["format"] = 1;
  doc["scenario"] = o.scenario.empty() ? name : o.scenario;
  doc["description"] =
      description +
      " Change the services, job and fault to your own incident, then: rehearse validate FILE; "
      "rehearse run FILE --timeline; rehearse tune FILE --job ID; rehearse check FILE "
      "(docs/tutorial.md).";
  doc["start"] = "2026-12-07T00:30:00Z";
  doc["until"] = "2026-12-07T09:30:00Z";
  doc["seed"] = 1;
  return doc;
}

ordered_json call_starter(const StarterOptions& o) {
  const std::string& s = o.service;
  ordered_json doc = header(
      o, fmt::format("{}-outage", s),
      fmt::format("An hourly job calls {0} (GET /items, then POST /items/sync). {0} answers 503 "
                  "from 05:30 for 45 minutes. The job's policy (3 retries, 10 minutes apart) "
                  "outlasts the outage: the 06:00 slot fails twice and recovers on its second "
                  "retry, and ops is notified of each retry and of the recovery.",
                  s));
  doc["services"] = {{s, {{"latency", "100ms"}}}, {"messenger", {{"targets", {"ops"}}}}};
  doc["jobs"] = ordered_json::array(
      {{{"id", "sync"},
        {"kind", "call"},
        {"note", "your job: its schedule, its retry policy, the calls one run makes in order"},
        {"schedule", "0 * * * *"},
        {"retry_policy", {{"max", 3}, {"backoff_sec", 600}}},
        {"calls",
         {{{"service", s}, {"method", "GET"}, {"path", "/items"}},
          {{"service", s}, {"method", "POST"}, {"path", "/items/sync"}}}}}});
  doc["faults"] = ordered_json::array({{{"at", "2026-12-07T05:30:00Z"},
                                        {"kind", "http_errors"},
                                        {"service", s},
                                        {"status", 503},
                                        {"for", "45m"},
                                        {"note",
                                         "your incident: when it began, how long, what "
                                         "the service answered"}}});
  doc["expect"] = {
      {"jobs",
       {{"sync",
         {{"delivered_slots", 9}, {"failed_slots", 0}, {"retries", 2}, {"final_status", "ok"}}}}},
      {"violations", ordered_json::array()}};
  return doc;
}

ordered_json group_starter(const StarterOptions& o) {
  ordered_json doc = header(
      o, "daily-summary-quota",
      "A daily 06:00 group job asks the model API for a summary and delivers it to team. The "
      "model API's quota is exhausted from 05:59:30 for 40 minutes (429). The policy (3 "
      "retries, 15 minutes apart) reaches past the outage: the third retry, at 06:45, delivers.");
  doc["services"] = {{"model-api", ordered_json::object()}, {"messenger", {{"targets", {"team"}}}}};
  doc["jobs"] = ordered_json::array(
      {{{"id", "daily-summary"},
        {"kind", "group"},
        {"note", "tasks run in order; each produces a summary, a preview or a skip"},
        {"schedule", "0 6 * * *"},
        {"retry_policy", {{"max", 3}, {"backoff_sec", 900}}},
        {"tasks", {{{"id", "summary"}, {"produces", "summary"}}}},
        {"targets", {"team"}}}});
  doc["faults"] = ordered_json::array({{{"at", "2026-12-07T05:59:30Z"},
                                        {"kind", "quota_exhausted"},
                                        {"for", "40m"},
                                        {"note", "usage limit until 06:39:30"}}});
  doc["expect"] = {
      {"jobs",
       {{"daily-summary", {{"delivered_slots", 1}, {"retries", 3}, {"final_status", "ok"}}}}},
      {"violations", ordered_json::array()}};
  return doc;
}

ordered_json publish_starter(const StarterOptions& o) {
  ordered_json doc =
      header(o, "release-notes-messenger-down",
             "A daily 06:00 publish job posts release notes to site and threads. The messenger "
             "refuses threads from 05:59:30 for 8 minutes. The retries (3, 5 minutes apart) carry "
             "the idempotency key, so site, which already has the post, never gets it twice.");
  doc["services"] = {{"model-api", ordered_json::object()},
                     {"messenger", {{"targets", {"site", "threads"}}}}};
  doc["jobs"] = ordered_json::array(
      {{{"id", "release-notes"},
        {"kind", "publish"},
        {"note", "a publish job retries only with an idempotency key its targets honour"},
        {"schedule", "0 6 * * *"},
        {"retry_policy", {{"max", 3}, {"backoff_sec", 300}}},
        {"side_effects", "publish"},
        {"idempotency_key", "{job}:{slot}"},
        {"targets", {"site", "threads"}}}});
  doc["faults"] = ordered_json::array({{{"at", "2026-12-07T05:59:30Z"},
                                        {"kind", "messenger_down"},
                                        {"targets", {"threads"}},
                                        {"for", "8m"},
                                        {"note", "threads answers 503"}}});
  doc["expect"] = {
      {"jobs",
       {{"release-notes", {{"delivered_slots", 1}, {"retries", 2}, {"final_status", "ok"}}}}},
      {"violations", ordered_json::array()}};
  return doc;
}

ordered_json fetch_starter(const StarterOptions& o) {
  ordered_json doc =
      header(o, "quote-fetch-token-revoked",
             "An hourly fetch job reads a quote from the brokerage with a 24-hour token. The token "
             "is revoked at 03:30: the 04:00 run gets 401, the client reissues the token and the "
             "run succeeds without a retry.");
  doc["services"] = {{"brokerage", {{"token_lifetime", "24h"}}}};
  doc["jobs"] = ordered_json::array({{{"id", "quote-fetch"},
                                      {"kind", "fetch"},
                                      {"note", "requests: how many reads one run makes"},
                                      {"schedule", "0 * * * *"},
                                      {"retry_policy", {{"max", 2}, {"backoff_sec", 300}}},
                                      {"requests", 1}}});
  doc["faults"] = ordered_json::array({{{"at", "2026-12-07T03:30:00Z"},
                                        {"kind", "token_revoked"},
                                        {"note", "the provider revoked every token it issued"}}});
  doc["expect"] = {
      {"jobs",
       {{"quote-fetch", {{"delivered_slots", 9}, {"failed_slots", 0}, {"final_status", "ok"}}}}},
      {"violations", ordered_json::array()}};
  return doc;
}

ordered_json reconcile_starter(const StarterOptions& o) {
  ordered_json doc = header(
      o, "issue-reconcile-orchestrator-outage",
      "An hourly reconcile job moves issue ISS-1 through its stages by handing it to the lead "
      "agent. The orchestrator answers 503 from 01:55 for 12 minutes: the 02:00 run fails, "
      "its retry at 02:10 finds the orchestrator back and the item moves on.");
  doc["env"] = {{"AGENT_LEAD_ID", "agent-lead-1"}, {"AGENT_DEV_ID", "agent-dev-1"}};
  doc["services"] = {
      {"orchestrator",
       {{"issues", {{{"id", "ISS-1"}, {"status", "todo"}}}},
        {"agents",
         {{{"id", "agent-lead-1"}, {"role", "lead"}}, {{"id", "agent-dev-1"}, {"role", "dev"}}}}}}};
  doc["jobs"] = ordered_json::array(
      {{{"id", "issue-reconcile"},
        {"kind", "reconcile"},
        {"note", "items: the issues this job reconciles, each with an optional starting stage"},
        {"schedule", "0 * * * *"},
        {"retry_policy", {{"max", 2}, {"backoff_sec", 600}}},
        {"items", {{{"issue", "ISS-1"}}}}}});
  doc["faults"] = ordered_json::array({{{"at", "2026-12-07T01:55:00Z"},
                                        {"kind", "http_errors"},
                                        {"service", "orchestrator"},
                                        {"status", 503},
                                        {"for", "12m"},
                                        {"note", "every orchestrator call fails"}}});
  doc["expect"] = {
      {"jobs",
       {{"issue-reconcile", {{"delivered_slots", 9}, {"retries", 1}, {"final_status", "ok"}}}}},
      {"violations", ordered_json::array()}};
  return doc;
}

}  // namespace

const std::vector<Starter>& starters() {
  static const std::vector<Starter> kStarters{
      {"call", "a job calling services of your own (--service NAME) through an outage",
       call_starter},
      {"group", "a group job asking the model API, through a quota outage", group_starter},
      {"publish", "a publish job to two targets, one of them down for a while", publish_starter},
      {"fetch", "a brokerage fetch job whose token is revoked", fetch_starter},
      {"reconcile", "a reconcile job moving an issue, through an orchestrator outage",
       reconcile_starter},
  };
  // The call job's first (starters.hpp); a kind listed twice would hide one.
  REHEARSE_ASSERT_EQ(kStarters.front().kind, "call");
  for (std::size_t i = 0; i < kStarters.size(); ++i) {
    REHEARSE_ASSERT(kStarters[i].build != nullptr);
    for (std::size_t j = i + 1; j < kStarters.size(); ++j) {
      REHEARSE_ASSERT_NE(kStarters[i].kind, kStarters[j].kind);
    }
  }
  return kStarters;
}

}  // namespace rehearse::cli
