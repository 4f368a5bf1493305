// token_reissue_bounded (docs/semantics.md §7, §10): tokens are reused until
// 60 s before their expiry and reissued at most once per request after a
// 401, never after a 403, 429 or 5xx. Reads the services' calls and replies,
// the brokerage's records (`auth_rejected`, `token_issued`,
// `token_issue_failed`, `token_presented`), boots and crashes:
// - an accepted request that presented a token 60 s or less before its
//   expiry (the brokerage's expiry) fires;
// - a request sent with a token a 401 had already refused fires;
// - per `request_id` (cleared on a crash or boot: a stalled run re-runs with
//   the same ids): no issuance after a 403, 429 or 5xx answer; at most one
//   issuance after a 401; an `after_401` issuance only after a 401; after an
//   issuance for the request failed, neither another issuance nor the
//   request sent again (the request fails with the issuance's class);
// - single flight: an issuance (`issue_token` call) sent while another
//   issuance to the same issuer is in flight (sent, its reply not yet
//   received, no crash or boot since) fires.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/monitors/context.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class TokenReissueBounded final : public Monitor {
 public:
  static constexpr const char* kName = "token_reissue_bounded";
  static constexpr const char* kSummary =
      "a rejected token is reissued at most once per rejection, never in a loop";
  static std::vector<std::string> reads() {
    return {"service_call",         "service_reply",   "auth_rejected", "token_issued",
            "token_issue_failed",   "token_presented", "process_boot",  "process_crash",
            "disk_process_crashed", "disk_crash"};
  }

  TokenReissueBounded(const Scenario& scenario, MonitorContext& context);
  Violations observe(const TraceEvent& event, std::size_t index) override;
  // services.brokerage.token_issues / .reissues.
  void tally(nlohmann::json& tallies) const override;

 private:
  struct RequestWatch {
    std::optional<std::int64_t> last_status;  // last authenticated reply (-1: transport error)
    int unauthorized = 0;
    int reissues = 0;
    bool issue_failed = false;  // an issuance for the request failed at the issuer
  };

  void check_reuse(const TraceEvent& e, std::size_t i, Violations& out);
  void check_rejected_token(const TraceEvent& e, std::size_t i, const std::string& rid,
                            Violations& out);
  void check_issuance(const TraceEvent& e, std::size_t i, const std::string& rid, Violations& out);
  void note_reply(const TraceEvent& e, const std::string& rid);
  void check_after_failed_issuance(const TraceEvent& e, std::size_t i, const std::string& rid,
                                   Violations& out);
  void check_single_flight(const TraceEvent& e, std::size_t i, const std::string& rid,
                           Violations& out);

  std::map<std::string, RequestWatch> requests_;
  // The first-401 rule: a token refused with a 401 is dropped, so no request
  // may be sent with it after that 401 reached the client (001's bug kept
  // the rejected token until a restart).
  // Request id -> the token it was refused with, until its 401 arrives.
  std::map<std::string, std::string> rejected_fingerprint_;
  std::map<std::string, TimeMs> unauthorized_seen_at_;  // fingerprint -> first 401 received
  struct Flight {
    std::string request_id;  // the request leading the issuance
    TimeMs sent_at = 0;
  };
  // Issuer -> the issuance in flight (its `issue_token` sent, no reply yet).
  std::map<std::string, Flight> issuing_;
  std::int64_t token_issues_ = 0, reissues_ = 0;
};

}  // namespace rehearse::sim
