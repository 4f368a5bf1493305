// The witnesses' own classification of a service's reply: the failure class of
// a fetch or call job's run comes from what the world saw the services answer
// during the run, never from the class the core wrote in its durable row. The
// table is written from docs/semantics.md §1 and shared with no code in model/
// (a classifier that asked the core's `classify` whether the core classified
// right would prove nothing). docs/monitors.md has the table.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/time.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

// What the world recorded of one reply (`service_reply`): the HTTP status or
// the transport error kind, the class of the body where the service names
// one, and the error text verbatim.
struct ReplyFacts {
  std::optional<int> status;
  std::string transport_error;  // "" when the reply has a status
  std::string body_class;
  std::string message;
};

ReplyFacts reply_facts_of(const TraceEvent& service_reply);

// The failure class of a reply, or nullopt when it is no failure (a 2xx,
// whatever its body). Structure first: the status decides when there is one,
// then the transport kind; the text is read only when neither exists.
std::optional<std::string> reply_failure_class(const ReplyFacts& reply);

// The table's rows, one function each (unit-tested row by row).
std::string status_failure_class(int status);
std::string transport_failure_class(std::string_view kind);
std::string text_failure_class(std::string_view message);

// The class of a failed group run (docs/semantics.md §6, made precise in
// docs/group-jobs.md): its first task failure of a class `retryable` says
// the job's policy retries, else its most specific one (the text fallback's
// order of §1: auth, validation, not_found, config, rate_limit, provider_5xx,
// timeout, network, unknown; the earlier task among equals). `task_failures`
// in task order; "" when empty. The monitors' own tables, not model/'s.
std::string group_failure_class(const std::vector<std::string>& task_failures,
                                const std::function<bool(const std::string&)>& retryable);
// 0 for the most specific class (auth) up to `unknown` (and any name the
// table does not know) last.
int failure_specificity(std::string_view failure_class);
// §1's classes retried by default (the per-job form's): timeout, network,
// provider_5xx, rate_limit.
bool retried_by_default(std::string_view failure_class);

// The orchestrator's answer about a reconcile item (docs/semantics.md §8):
// gone (404 / 410: the item ends after one query), transient (a 5xx, 408,
// 429, or a transport error with no status: the item backs off), definitive
// (every other status), or none (no status and no transport error).
enum class ItemAnswer : unsigned char { definitive, transient, gone, none };
ItemAnswer item_answer(const TraceEvent& orchestrator_reply);

// What a group run's tasks got from the model API (the last reply under
// each task, `target`): whether one produced a deliverable (a valid 2xx
// answer that is not a skip), and the classes of the failed ones in task
// order (a 2xx without a valid answer, no `body_class`, is `unknown`).
struct GroupTaskReplies {
  bool deliverable = false;
  std::vector<std::string> failed;
  // The classes of the messenger's refusals of the run's deliveries, in
  // order: read from the refusal's text by the text rule of
  // docs/semantics.md §1, since text is all the worker receives.
  std::vector<std::string> delivery_refusals;
};

// The replies of runs. A run of (job, slot) begins at its queue take; every
// `service_reply` attributed to the job and slot from then on belongs to it,
// and a request's answer is the last reply recorded under its request id (a
// request retried after a 401 and a token reissue answers with the retry, or
// with the reissue's refusal). The run's failure classes are those of its
// requests whose answer is a failure, in the order of their first reply.
// A run with no failed request of its own may have waited on a token
// issuance another run started (one issuance shared by concurrent requests):
// then its classes are those of the failed issuances (`issue_token` replies)
// recorded while it ran.
class RunReplies {
 public:
  void begin(const std::string& job, TimeMs slot);
  void observe(const TraceEvent& service_reply);
  // A `message_refused` of a delivery, under its run.
  void observe_refusal(const TraceEvent& message_refused);
  // Empty when the run saw no failed request (or was never begun).
  std::vector<std::string> failed_classes(const std::string& job, TimeMs slot) const;
  // The class of the run's first own request whose last reply failed
  // (failed issuances of other runs not included); nullopt when none did.
  std::optional<std::string> own_request_failure(const std::string& job, TimeMs slot) const;
  // The run's `model-api` replies, by task (a group run).
  GroupTaskReplies group_tasks(const std::string& job, TimeMs slot) const;
  void end(const std::string& job, TimeMs slot);

 private:
  struct Request {
    std::size_t order = 0;
    std::optional<std::string> failure;  // the last reply's class (nullopt: success)
  };
  struct Run {
    std::map<std::string, Request> requests;  // by request id
    std::vector<std::string> shared;          // failed issuances of other runs
    // model-api replies by task, in the order of their first reply: the
    // failure class, or "" for a deliverable, "skip" for a skip.
    std::vector<std::pair<std::string, std::string>> tasks;
    std::vector<std::string> delivery_refusals;
  };
  static void observe_task(Run& run, const TraceEvent& e,
                           const std::optional<std::string>& failure);

  std::map<std::pair<std::string, TimeMs>, Run> runs_;
};

}  // namespace rehearse::sim
