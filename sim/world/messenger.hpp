// Messenger: the Notifier port on the simulated world (the messaging
// platform group jobs deliver to; docs/group-jobs.md).
//
// Timing model, the same as SimServices: a send takes effect at the platform
// the moment it is made (the message is delivered, or refused), and the
// answer reaches the sender `latency` later. The wait is a suspension point:
// a crash in between loses the answer, never the delivery. That is exactly
// the at-least-once window a real sender has.
//
// Faults are injected here only: outages over [from, until) for every target
// or for some, during which sends to those targets are refused (503). A send
// to a target the platform does not know is refused too (404).
//
// Trace events (service "messenger"):
//   message_delivered  at send: target, kind, attempt, items, and for kind
//                      "delivery" the per-(job, slot, target) delivery_count
//                      after this one and duplicate = (count > 1);
//   message_refused    at send: target, kind, attempt, reason;
// each with the job and slot the message names. Message fields are read from
// the structured message ({"kind", "job_id", "slot", "attempt", "items"});
// a message without "kind" (e.g. a scheduler notification with "event") is
// recorded with kind "notification" and its event.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/ports.hpp"
#include "sim/kernel/simulator.hpp"
#include "sim/kernel/trace.hpp"

namespace rehearse::sim {

struct MessengerOptions {
  std::vector<std::string> targets;  // the targets the platform knows
  DurationMs latency_ms = 100;
};

struct MessengerOutage {
  TimeMs from_ms = 0;
  TimeMs until_ms = 0;               // exclusive
  std::vector<std::string> targets;  // empty: every target
  int status = kDefaultStatus;       // the HTTP status the platform refuses with

  static constexpr int kDefaultStatus = 503;

  bool hits(const std::string& target, TimeMs t) const;
};

// One accepted message, as the platform saw it.
struct AcceptedMessage {
  TimeMs at_ms = 0;
  std::string target;
  std::string kind;  // "delivery", "failure_notice", "notification", ...
  std::string job;
  std::optional<TimeMs> slot;
  std::int64_t attempt = 0;
  nlohmann::json message;
};

class Messenger final : public Notifier {
 public:
  static constexpr const char* kServiceName = "messenger";
  static constexpr std::size_t kOutagesMax = 10'000;

  Messenger(Simulator& simulator, Trace& trace, MessengerOptions options);

  Task<Status> send(std::string target, nlohmann::json message) override;

  void add_outage(TimeMs from_ms, TimeMs until_ms, std::vector<std::string> targets = {},
                  int status = MessengerOutage::kDefaultStatus);
  bool is_down(const std::string& target, TimeMs t) const;
  // The outage that refuses `target` at `t`, or null.
  const MessengerOutage* outage_at(const std::string& target, TimeMs t) const;
  bool knows(const std::string& target) const;

  // Deliveries (kind "delivery") of a slot to a target so far.
  std::int64_t delivery_count(const std::string& job, TimeMs slot, const std::string& target) const;
  // Accepted messages of a kind for a slot, over every target.
  std::int64_t count(const std::string& kind, const std::string& job, TimeMs slot) const;
  // (job, slot, target) keys delivered more than once.
  std::vector<std::tuple<std::string, TimeMs, std::string>> duplicate_deliveries() const;

  const std::vector<AcceptedMessage>& accepted() const noexcept { return accepted_; }
  std::int64_t refused_count() const noexcept { return refused_; }
  const MessengerOptions& options() const noexcept { return options_; }

 private:
  Simulator& simulator_;
  Trace& trace_;
  MessengerOptions options_;
  std::vector<MessengerOutage> outages_;
  std::vector<AcceptedMessage> accepted_;
  std::map<std::tuple<std::string, TimeMs, std::string>, std::int64_t> deliveries_;
  std::int64_t refused_ = 0;
};

}  // namespace rehearse::sim
