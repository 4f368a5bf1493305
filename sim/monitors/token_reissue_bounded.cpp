#include "sim/monitors/token_reissue_bounded.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {
// The token client's reuse margin (docs/semantics.md §7), the monitor's own copy.
constexpr DurationMs kTokenReuseMarginMs = 60 * 1000;
}  // namespace

TokenReissueBounded::TokenReissueBounded(const Scenario&, MonitorContext&) {}

Violations TokenReissueBounded::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (is_boot_event(e.type) || is_crash_event(e.type)) {  // any process: its replies die
    requests_.clear();              // request ids repeat when a stalled run re-runs after a restart
    rejected_fingerprint_.clear();  // replies in flight are lost with the process
    issuing_.clear();               // so is an issuance's: the new process starts its own
    return out;
  }
  check_reuse(e, i, out);
  const std::string rid = e.str("request_id");
  if (e.str("operation") == "issue_token") check_single_flight(e, i, rid, out);
  if (e.service == "brokerage" && !rid.empty()) {
    check_rejected_token(e, i, rid, out);
    check_after_failed_issuance(e, i, rid, out);
  }
  if (e.type == "service_reply" && !rid.empty() && e.str("operation") != "issue_token") {
    note_reply(e, rid);
    return out;
  }
  if (e.type == "token_issued" || e.type == "token_issue_failed") check_issuance(e, i, rid, out);
  return out;
}

// The reuse rule (docs/semantics.md §7): a cached token is reused only until
// 60 s before its expiry. The brokerage records the token every accepted
// request presented and its expiry (which is the client's known expiry at
// the latest: it counts from the issuance's send).
void TokenReissueBounded::check_reuse(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type != "token_presented") return;
  const auto expires = parse_instant(e.str("expires_at"));
  if (!expires.ok() || e.t < *expires - kTokenReuseMarginMs) return;
  out.push_back({kName, i, e.t,
                 fmt::format("request {} ({}) presented token generation {} {} before its expiry "
                             "at {}: a token is reused only until 60 s before it expires",
                             e.str("request_id", "?"), e.str("operation"), e.num("generation"),
                             format_duration(*expires - e.t), format_instant(*expires))});
}

// The first-401 rule. The brokerage judges a call when it is sent and stamps
// its `auth_rejected` with that instant (the record comes before the call's
// own `service_call` line: sim/world/sim_services.cpp), so the refused request's
// send time is the rejection's own time: it fires when a request's first 401
// for the same token had already reached the client before it (a second 401,
// after the one reissue, is returned as is and drops nothing: the next
// request may still present that token once). What is kept: the token a
// request was refused with, until that request's 401 arrives (or a crash
// loses it), and per refused token the first 401 received.
void TokenReissueBounded::check_rejected_token(const TraceEvent& e, std::size_t i,
                                               const std::string& rid, Violations& out) {
  // observe() asks only about a brokerage record of a named request.
  REHEARSE_ASSERT(!rid.empty());
  if (e.type == "auth_rejected" && !e.str("fingerprint").empty()) {
    const std::string fp = e.str("fingerprint");
    rejected_fingerprint_[rid] = fp;
    const auto seen = unauthorized_seen_at_.find(fp);
    if (seen != unauthorized_seen_at_.end() && e.t > seen->second) {
      out.push_back({kName, i, e.t,
                     fmt::format("request {} was sent at {} with token {}, which a 401 had "
                                 "already refused at {}: a rejected token must be dropped and "
                                 "reissued once, not reused",
                                 rid, format_instant(e.t), fp, format_instant(seen->second))});
    }
  } else if (e.type == "service_reply") {
    const auto fp = rejected_fingerprint_.find(rid);
    if (fp == rejected_fingerprint_.end()) return;
    // Only the request's first 401 drops the token (docs/token-client.md
    // rule 2); a second one, after the reissue, is returned as is. requests_
    // still holds the count before this reply (note_reply comes after).
    const auto r = requests_.find(rid);
    const bool first = r == requests_.end() || r->second.unauthorized == 0;
    if (e.num("status") == 401 && first) unauthorized_seen_at_.emplace(fp->second, e.t);
    rejected_fingerprint_.erase(fp);
  }
}

// A request's last reply. A success on a request with no 401 and no reissue
// leaves no entry: an absent entry judges a later issuance exactly as a
// last status of 2xx does (neither a refused status nor a 401), and the
// table then holds only requests with something to remember, not every
// request of the run (docs/performance.md "Memory with history").
void TokenReissueBounded::note_reply(const TraceEvent& e, const std::string& rid) {
  // observe() hands over a reply to a named request.
  REHEARSE_ASSERT_EQ(e.type, "service_reply");
  REHEARSE_ASSERT(!rid.empty());
  const auto* status = field(e, "status");
  const std::int64_t last = status != nullptr && status->is_number_integer()
                                ? status->get<std::int64_t>()
                                : -1;  // a transport error
  const bool success = last >= 200 && last < 300;
  const auto it = requests_.find(rid);
  if (success &&
      (it == requests_.end() || (it->second.unauthorized == 0 && it->second.reissues == 0))) {
    if (it != requests_.end()) requests_.erase(it);
    return;
  }
  RequestWatch& r = it != requests_.end() ? it->second : requests_[rid];
  r.last_status = last;
  if (last == 401) ++r.unauthorized;
}

// A failed issuance ends its request (docs/semantics.md §7): the request
// fails with the issuance's class, and no second issuance is tried for it.
void TokenReissueBounded::check_after_failed_issuance(const TraceEvent& e, std::size_t i,
                                                      const std::string& rid, Violations& out) {
  // observe() asks only about a brokerage record of a named request.
  REHEARSE_ASSERT(!rid.empty());
  const bool issuance = e.type == "token_issued" || e.type == "token_issue_failed";
  const bool resent = e.type == "service_call" && e.str("operation") != "issue_token";
  if (!issuance && !resent) return;
  const auto it = requests_.find(rid);
  if (it != requests_.end() && it->second.issue_failed) {
    out.push_back({kName, i, e.t,
                   fmt::format("request {}: {} after its token issuance failed (the request "
                               "fails with the issuance's class; no second issuance)",
                               rid, issuance ? "another issuance" : "sent again")});
  }
  if (e.type == "token_issue_failed") requests_[rid].issue_failed = true;
}

// Single flight (docs/semantics.md §7, docs/token-client.md rule 5): the
// process's token client has at most one issuance in flight; a request that
// needs a token meanwhile waits for it and shares its outcome. From the
// world's records: an `issue_token` call sent while the issuer has not yet
// answered an earlier one. Only the acting worker calls services, and a crash
// or boot loses its issuance with it (cleared in observe()), so every
// issuance in flight is the same process's.
void TokenReissueBounded::check_single_flight(const TraceEvent& e, std::size_t i,
                                              const std::string& rid, Violations& out) {
  REHEARSE_ASSERT_EQ(e.str("operation"), "issue_token");
  if (e.type == "service_reply") {
    issuing_.erase(e.service);
    return;
  }
  if (e.type != "service_call") return;
  const auto [flight, added] = issuing_.try_emplace(e.service, Flight{rid, e.t});
  if (added) return;
  out.push_back({kName, i, e.t,
                 fmt::format("request {} sent a token issuance to {} while the issuance of "
                             "request {} (sent at {}) was still in flight: requests needing a "
                             "token together share one issuance (single flight)",
                             rid.empty() ? "?" : rid, e.service,
                             flight->second.request_id.empty() ? "?" : flight->second.request_id,
                             format_instant(flight->second.sent_at))});
}

void TokenReissueBounded::check_issuance(const TraceEvent& e, std::size_t i, const std::string& rid,
                                         Violations& out) {
  REHEARSE_ASSERT(e.type == "token_issued" || e.type == "token_issue_failed");
  if (e.type == "token_issued") ++token_issues_;
  if (rid.empty()) return;
  RequestWatch& r = requests_[rid];
  const std::string reason = e.str("reason");
  if (r.last_status && *r.last_status != 401 && *r.last_status >= 0 &&
      (*r.last_status == 403 || *r.last_status == 429 || *r.last_status >= 500)) {
    out.push_back({kName, i, e.t,
                   fmt::format("request {}: a token was issued ({}) after a {} answer, which "
                               "never causes a reissue",
                               rid, reason, *r.last_status)});
    return;
  }
  if (r.unauthorized == 0 && reason != "after_401") return;
  ++r.reissues;
  ++reissues_;
  // The total is never reset (a restart forgets the requests, not the count).
  REHEARSE_ASSERT_GE(reissues_, r.reissues);

  if (r.unauthorized == 0) {
    out.push_back(
        {kName, i, e.t,
         fmt::format("request {}: a reissue after a 401 that the request never got", rid)});
  } else if (r.reissues > 1) {
    out.push_back(
        {kName, i, e.t,
         fmt::format("request {}: reissue {} for one request (at most one)", rid, r.reissues)});
  }
}

void TokenReissueBounded::tally(nlohmann::json& tallies) const {
  nlohmann::json& services = tallies["services"];
  if (services.contains("brokerage") || token_issues_ > 0) {
    services["brokerage"]["token_issues"] = token_issues_;
    services["brokerage"]["reissues"] = reissues_;
  }
}

}  // namespace rehearse::sim
