#include "sim/monitors/reply_class.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>

#include "model/assert.hpp"

namespace rehearse::sim {

ItemAnswer item_answer(const TraceEvent& reply) {
  REHEARSE_ASSERT_EQ(reply.type, "service_reply");
  const std::int64_t status = reply.num("status", 0);
  if (status == 0) {
    return reply.str("transport_error").empty() ? ItemAnswer::none : ItemAnswer::transient;
  }
  if (status == 404 || status == 410) return ItemAnswer::gone;
  if (status == 408 || status == 429 || (status >= 500 && status < 600)) {
    return ItemAnswer::transient;
  }
  return ItemAnswer::definitive;
}

namespace {

bool has(std::string_view text, std::string_view marker) {
  return text.find(marker) != std::string_view::npos;
}

bool any_of_markers(std::string_view text, std::initializer_list<std::string_view> markers) {
  return std::any_of(markers.begin(), markers.end(), [&](std::string_view m) {
    // An empty marker would be found in every text.
    REHEARSE_ASSERT(!m.empty());
    return has(text, m);
  });
}

// A character that may stand next to a status number in text: a number glued
// to a letter, a digit or one of `. _ / :` is a version, a port, a path or a
// count, not a status.
bool separates(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '/' &&
         c != ':';
}

// The three-digit numbers that stand as their own word in the text.
std::vector<int> statuses_in(std::string_view text) {
  std::vector<int> out;
  for (std::size_t i = 0; i + 3 <= text.size(); ++i) {
    const bool digits = std::isdigit(static_cast<unsigned char>(text[i])) != 0 &&
                        std::isdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
                        std::isdigit(static_cast<unsigned char>(text[i + 2])) != 0;
    if (!digits) continue;
    const bool left = i == 0 || separates(text[i - 1]);
    const bool right = i + 3 == text.size() || separates(text[i + 3]);
    if (left && right)
      out.push_back((text[i] - '0') * 100 + (text[i + 1] - '0') * 10 + (text[i + 2] - '0'));
  }
  // Each status takes three characters and a separator from the next one.
  REHEARSE_ASSERT_LE(out.size() * 4, text.size() + 1);
  return out;
}

bool status_in(const std::vector<int>& statuses, int lo, int hi) {
  REHEARSE_ASSERT_LE(lo, hi);
  return std::any_of(statuses.begin(), statuses.end(), [&](int s) { return s >= lo && s <= hi; });
}

bool status_is(const std::vector<int>& statuses, std::initializer_list<int> wanted) {
  return std::any_of(wanted.begin(), wanted.end(), [&](int w) {
    // Only HTTP statuses are wanted (statuses_in finds three digits).
    REHEARSE_ASSERT(w >= 100 && w <= 599);
    return status_in(statuses, w, w);
  });
}

// "host not found" and its kin are DNS talk (network), not a missing resource.
bool says_not_found(std::string_view text) {
  for (std::size_t at = text.find("not found"); at != std::string_view::npos;
       at = text.find("not found", at + 1)) {
    const std::string_view before = text.substr(0, at);
    const bool dns = before.ends_with("host ") || before.ends_with("server ") ||
                     before.ends_with("address ") || before.ends_with("domain ");
    if (!dns) return true;
  }
  return false;
}

}  // namespace

ReplyFacts reply_facts_of(const TraceEvent& e) {
  ReplyFacts r;
  if (const auto it = e.data.find("status"); it != e.data.end() && it->is_number_integer()) {
    r.status = it->get<int>();
  }
  r.transport_error = e.str("transport_error");
  r.body_class = e.str("body_class");
  r.message = e.str("message");
  return r;
}

std::string status_failure_class(int status) {
  // A 2xx is no failure: reply_failure_class answers it before asking.
  REHEARSE_ASSERT(status < 200 || status > 299);
  if (status == 408) return "timeout";
  if (status == 429) return "rate_limit";
  if (status >= 500 && status <= 599) return "provider_5xx";
  if (status == 401 || status == 403) return "auth";
  if (status == 400 || status == 422) return "validation";
  if (status == 404 || status == 410) return "not_found";
  return "unknown";
}

std::string transport_failure_class(std::string_view kind) {
  REHEARSE_ASSERT(!kind.empty());
  if (kind == "timeout") return "timeout";
  if (kind == "connection_refused" || kind == "connection_reset" || kind == "dns" ||
      kind == "broken_pipe") {
    return "network";
  }
  return "unknown";
}

// Most specific first, the first class with a marker wins (docs/semantics.md
// §1): so "ConnectionError: HTTP 403 Forbidden" is auth, not network.
std::string text_failure_class(std::string_view message) {
  std::string lower(message);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string_view t = lower;
  const std::vector<int> statuses = statuses_in(t);
  if (status_is(statuses, {401, 403}) ||
      any_of_markers(t, {"unauthorized", "unauthorised", "forbidden", "authentication",
                         "permission denied", "access denied", "invalid token", "token expired"})) {
    return "auth";
  }
  if (status_is(statuses, {400, 422}) ||
      any_of_markers(t, {"bad request", "unprocessable", "validation", "invalid request"})) {
    return "validation";
  }
  if (status_is(statuses, {404, 410}) || says_not_found(t) || has(t, "no such ")) {
    return "not_found";
  }
  if (any_of_markers(t, {"configuration", "config error", "misconfigured", "missing agent",
                         "unknown role"})) {
    return "config";
  }
  if (status_is(statuses, {429}) ||
      any_of_markers(t, {"rate limit", "rate-limit", "ratelimit", "too many requests", "quota",
                         "usage limit"})) {
    return "rate_limit";
  }
  if (status_in(statuses, 500, 599) ||
      any_of_markers(t, {"internal server error", "bad gateway", "service unavailable",
                         "gateway timeout"})) {
    return "provider_5xx";
  }
  if (status_is(statuses, {408}) ||
      any_of_markers(t, {"timeout", "timed out", "etimedout", "deadline exceeded"})) {
    return "timeout";
  }
  if (any_of_markers(t, {"connection", "econnrefused", "econnreset", "enotfound", "epipe",
                         "getaddrinfo", "dns", "broken pipe", "socket hang up", "network",
                         "host not found", "server not found", "unreachable"})) {
    return "network";
  }
  return "unknown";
}

std::optional<std::string> reply_failure_class(const ReplyFacts& reply) {
  if (reply.status) {
    if (*reply.status >= 200 && *reply.status <= 299) return std::nullopt;
    return status_failure_class(*reply.status);
  }
  if (!reply.transport_error.empty()) return transport_failure_class(reply.transport_error);
  return text_failure_class(reply.message);
}

int failure_specificity(std::string_view failure_class) {
  static constexpr std::array<std::string_view, 9> kOrder = {
      "auth",         "validation", "not_found", "config", "rate_limit",
      "provider_5xx", "timeout",    "network",   "unknown"};
  const auto it = std::find(kOrder.begin(), kOrder.end(), failure_class);
  return static_cast<int>(std::distance(kOrder.begin(), it));
}

bool retried_by_default(std::string_view failure_class) {
  return failure_class == "timeout" || failure_class == "network" ||
         failure_class == "provider_5xx" || failure_class == "rate_limit";
}

std::string group_failure_class(const std::vector<std::string>& task_failures,
                                const std::function<bool(const std::string&)>& retryable) {
  for (const std::string& cls : task_failures) {
    if (retryable(cls)) return cls;
  }
  std::string best;
  for (const std::string& cls : task_failures) {
    if (best.empty() || failure_specificity(cls) < failure_specificity(best)) best = cls;
  }
  // Some task's class, "" only when there is none.
  REHEARSE_ASSERT_EQ(best.empty(), task_failures.empty());
  return best;
}

void RunReplies::begin(const std::string& job, TimeMs slot) { runs_[{job, slot}] = Run{}; }

void RunReplies::observe(const TraceEvent& e) {
  if (e.type != "service_reply" || runs_.empty()) return;
  const std::optional<std::string> failure = reply_failure_class(reply_facts_of(e));
  const auto own = e.slot ? runs_.find({e.job, *e.slot}) : runs_.end();
  if (own != runs_.end()) {
    auto& requests = own->second.requests;
    auto [it, fresh] = requests.try_emplace(e.str("request_id"));
    if (fresh) it->second.order = requests.size();
    // Requests are numbered 1, 2, ... as they first answer.
    REHEARSE_ASSERT_GE(it->second.order, 1u);
    REHEARSE_ASSERT_LE(it->second.order, requests.size());
    it->second.failure = failure;
    if (e.service == "model-api") observe_task(own->second, e, failure);
  }
  if (!failure || e.str("operation") != "issue_token") return;
  for (auto it = runs_.begin(); it != runs_.end(); ++it) {
    if (it != own) it->second.shared.push_back(*failure);
  }
}

void RunReplies::observe_refusal(const TraceEvent& e) {
  if (e.type != "message_refused" || !e.slot || e.str("kind") != "delivery") return;
  const auto own = runs_.find({e.job, *e.slot});
  if (own == runs_.end()) return;
  own->second.delivery_refusals.push_back(text_failure_class(e.str("reason")));
}

std::vector<std::string> RunReplies::failed_classes(const std::string& job, TimeMs slot) const {
  const auto run = runs_.find({job, slot});
  if (run == runs_.end()) return {};
  std::vector<std::pair<std::size_t, std::string>> failed;
  for (const auto& [id, request] : run->second.requests) {
    if (request.failure) failed.emplace_back(request.order, *request.failure);
  }
  if (failed.empty()) return run->second.shared;
  std::sort(failed.begin(), failed.end());
  // Each request has its own number: the order is strict.
  for (std::size_t k = 1; k < failed.size(); ++k) {
    REHEARSE_ASSERT_LT(failed[k - 1].first, failed[k].first);
  }
  std::vector<std::string> out;
  out.reserve(failed.size());
  for (auto& [order, cls] : failed) out.push_back(std::move(cls));
  return out;
}

std::optional<std::string> RunReplies::own_request_failure(const std::string& job,
                                                           TimeMs slot) const {
  const auto run = runs_.find({job, slot});
  if (run == runs_.end()) return std::nullopt;
  std::optional<std::pair<std::size_t, std::string>> first;
  for (const auto& [id, request] : run->second.requests) {
    if (request.failure && (!first || request.order < first->first)) {
      first = {request.order, *request.failure};
    }
  }
  if (!first) return std::nullopt;
  REHEARSE_ASSERT_GE(first->first, 1u);
  return first->second;
}

// A model-API reply under its task: a failure, else a 2xx without a valid
// answer (no body class: `unknown`), a skip or a deliverable.
void RunReplies::observe_task(Run& run, const TraceEvent& e,
                              const std::optional<std::string>& failure) {
  REHEARSE_ASSERT_EQ(e.service, "model-api");
  const std::string body = e.str("body_class");
  const std::string result =
      failure ? *failure : (body.empty() ? "unknown" : (body == "skip" ? "skip" : ""));
  const std::string target = e.str("target");
  const auto same = [&](const auto& t) { return t.first == target; };
  const auto it = std::find_if(run.tasks.begin(), run.tasks.end(), same);
  if (it == run.tasks.end()) {
    run.tasks.emplace_back(target, result);
  } else {
    it->second = result;
  }
  // One entry per task: its last reply replaces the earlier one.
  REHEARSE_ASSERT_EQ(std::count_if(run.tasks.begin(), run.tasks.end(), same), 1);
}

GroupTaskReplies RunReplies::group_tasks(const std::string& job, TimeMs slot) const {
  GroupTaskReplies out;
  const auto run = runs_.find({job, slot});
  if (run == runs_.end()) return out;
  out.delivery_refusals = run->second.delivery_refusals;
  for (const auto& [target, result] : run->second.tasks) {
    if (result.empty()) {
      out.deliverable = true;
    } else if (result != "skip") {
      out.failed.push_back(result);
    }
  }
  REHEARSE_ASSERT_LE(out.failed.size(), run->second.tasks.size());
  return out;
}

void RunReplies::end(const std::string& job, TimeMs slot) { runs_.erase({job, slot}); }

}  // namespace rehearse::sim
