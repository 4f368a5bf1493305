// Service capacity: how much a simulated service of the user's own can serve
// (docs/scenario-format.md "Capacity"; docs/tune.md for what it is for).
//
// Two limits, either or both:
//   rate limit   a token bucket: `burst` tokens at most, refilled at `rate`
//                per `per`; a request takes one token or is refused with
//                `status` (429, or 503 for a provider that sheds load that way)
//                and, when declared, a Retry-After in whole seconds: a fixed
//                duration, or "auto" (until the bucket holds a token again).
//                A refusal costs no token (the service sheds it at the door),
//                unless `refusals_count`: then it costs one too, the bucket
//                going into debt down to minus one bucket (a limiter that
//                counts every request it sees, INCR before the check): a
//                fleet that keeps knocking keeps itself locked out.
//   concurrency  `concurrency` requests served at once, each for the service's
//                latency; more wait in line, first come first served. The
//                caller sees the wait plus the latency, or its timeout when
//                that is longer; the service still serves the abandoned
//                request (the work a timed-out retry wastes).
// A `capacity` fault lowers the rate for a span (a degraded provider); while
// it lasts the bucket holds at most the lowered rate's worth of tokens.
//
// Integer arithmetic only: the bucket counts tokens times `per` in
// milliseconds, so a refill is (elapsed ms) x rate, exact and deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <vector>

#include "model/time.hpp"

namespace rehearse::sim {

inline constexpr std::int64_t kCapacityRateMax = 1'000'000;
inline constexpr std::int64_t kCapacityConcurrencyMax = 100'000;
inline constexpr DurationMs kCapacityPerMaxMs = kDayMs;

struct ServiceCapacity {
  std::int64_t rate = 0;  // tokens per `per_ms`; 0: no rate limit
  DurationMs per_ms = kSecondMs;
  std::int64_t burst = 0;        // the bucket's size; 0: `rate`
  std::int64_t concurrency = 0;  // served at once; 0: no limit
  int status = 429;              // a rate-limit refusal's status: 429 or 503
  // The refusal's Retry-After: none, a fixed duration, or until the next token.
  enum class RetryAfter : unsigned char { none, fixed, next_token } retry_after = RetryAfter::none;
  DurationMs retry_after_ms = 0;  // fixed only: a whole number of seconds
  bool refusals_count = false;    // a refused request spends a token too

  bool limits_rate() const noexcept { return rate > 0; }
  bool limits_concurrency() const noexcept { return concurrency > 0; }
  bool operator==(const ServiceCapacity&) const = default;
};

// A capacity fault's window: the rate in force over [from, until).
struct CapacityDrop {
  TimeMs from_ms = 0;
  TimeMs until_ms = 0;
  std::int64_t rate = 0;  // >= 1
};

// What the service does with one request.
struct Admission {
  bool refused = false;           // by the rate limit
  DurationMs retry_after_ms = 0;  // refused with a Retry-After (0: none)
  DurationMs wait_ms = 0;         // admitted: time in line before it is served
};

class CapacityGate {
 public:
  explicit CapacityGate(ServiceCapacity capacity);

  void add_drop(CapacityDrop drop);
  // A request arriving at `now_ms` (non-decreasing across calls) that takes
  // `service_ms` to serve once it is served.
  Admission admit(TimeMs now_ms, DurationMs service_ms);

  const ServiceCapacity& capacity() const noexcept { return capacity_; }
  // The rate in force at `t` (the lowest drop active then, else the declared one).
  std::int64_t rate_at(TimeMs t) const noexcept;

 private:
  bool take_token(TimeMs now_ms);
  DurationMs retry_after(TimeMs now_ms) const;
  DurationMs queue_wait(TimeMs now_ms, DurationMs service_ms);

  ServiceCapacity capacity_;
  std::vector<CapacityDrop> drops_;
  std::int64_t level_ = 0;  // tokens x per_ms
  TimeMs refilled_at_ = 0;
  bool started_ = false;
  // Servers' free instants, the earliest on top (concurrency only).
  std::priority_queue<TimeMs, std::vector<TimeMs>, std::greater<>> free_at_;
};

}  // namespace rehearse::sim
