#include "sim/monitors/sequential_requests.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"
#include "sim/monitors/reply_class.hpp"

namespace rehearse::sim {

namespace {

// What a failed answer was, for the message.
std::string answer_text(const TraceEvent& e, const ReplyFacts& facts) {
  const std::string what = facts.status ? fmt::format("status {}", *facts.status)
                                        : fmt::format("transport error {}", facts.transport_error);
  return fmt::format("{} from {} {}", what, e.service, e.str("operation"));
}

}  // namespace

SequentialRequests::SequentialRequests(const Scenario& scenario) {
  for (const JobSpec& spec : scenario.jobs) {
    if (spec.kind == JobKind::fetch && !spec.parallel) sequential_[spec.id] = "fetch";
    if (spec.kind == JobKind::call) sequential_[spec.id] = "call";
  }
  REHEARSE_ASSERT_LE(sequential_.size(), scenario.jobs.size());
}

// The run is named by its requests' ids, `{job}/{slot}/a{attempt}/r{index}`
// (docs/token-client.md "FetchJob"; a call's ends in `c{index}`): all but
// the last part.
SequentialRequests::Run* SequentialRequests::run_of(const TraceEvent& e) {
  const std::string rid = e.str("request_id");
  const auto cut = rid.rfind('/');
  if (cut == std::string::npos || sequential_.count(e.job) == 0) return nullptr;
  const std::string name = rid.substr(0, cut);
  Run& run = runs_[e.job];
  if (run.name != name) run = Run{name, {}};
  // A run only remembers failures of its own requests (a new name starts
  // afresh), so a failure never leaks into the next run.
  for (const auto& [failed, answer] : run.failed) {
    REHEARSE_ASSERT_EQ(failed.substr(0, failed.rfind('/')), run.name);
  }
  // Runs are kept only for the sequential jobs, one each.
  REHEARSE_ASSERT_LE(runs_.size(), sequential_.size());
  return &run;
}

void SequentialRequests::observe(const TraceEvent& e, std::size_t i, const char* invariant,
                                 Violations& out) {
  if (e.type != "service_call" && e.type != "service_reply") return;
  Run* run = run_of(e);
  if (run == nullptr) return;
  // run_of answers only for a sequential job (its kind's name is read below).
  REHEARSE_ASSERT_EQ(sequential_.count(e.job), 1u);
  const std::string rid = e.str("request_id");

  if (e.type == "service_reply") {
    // An issuance's reply is attributed to the request that led it: a failed
    // one fails that request (docs/semantics.md §7), a good one lets it go on.
    const ReplyFacts facts = reply_facts_of(e);
    if (reply_failure_class(facts)) {
      run->failed[rid] = answer_text(e, facts);
    } else {
      run->failed.erase(rid);
    }
    return;
  }
  if (e.str("operation") == "issue_token") return;  // the token client's, for this request
  for (const auto& [earlier, answer] : run->failed) {
    if (earlier == rid) continue;  // the same request sent again (its one resend after a 401)
    out.push_back(
        {invariant, i, e.t,
         fmt::format("{} job {} slot {}: request {} was sent after request {} of the "
                     "same run failed ({}): a sequential run stops at its first failed "
                     "request",
                     sequential_.at(e.job), e.job, slot_text(e.slot), rid, earlier, answer)});
    break;
  }
  // A call to a service the world does not know fails at once, with no reply.
  if (!e.str("error").empty()) run->failed[rid] = "transport error: " + e.str("error");
}

}  // namespace rehearse::sim
