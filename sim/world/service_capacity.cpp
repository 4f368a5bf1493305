#include "sim/world/service_capacity.hpp"

#include <algorithm>

#include "model/assert.hpp"

namespace rehearse::sim {

CapacityGate::CapacityGate(ServiceCapacity capacity) : capacity_(capacity) {
  REHEARSE_ASSERT(capacity_.rate >= 0 && capacity_.rate <= kCapacityRateMax);
  REHEARSE_ASSERT(capacity_.per_ms >= 1 && capacity_.per_ms <= kCapacityPerMaxMs);
  REHEARSE_ASSERT(capacity_.concurrency >= 0 && capacity_.concurrency <= kCapacityConcurrencyMax);
  if (capacity_.burst == 0) capacity_.burst = capacity_.rate;
  REHEARSE_ASSERT(capacity_.burst >= 0 && capacity_.burst <= kCapacityRateMax);
  level_ = capacity_.burst * capacity_.per_ms;  // a service starts with a full bucket
  for (std::int64_t i = 0; i < capacity_.concurrency; ++i) free_at_.push(kMinInstantMs);
}

void CapacityGate::add_drop(CapacityDrop drop) {
  REHEARSE_ASSERT(capacity_.limits_rate());  // the loader requires a declared rate limit
  REHEARSE_ASSERT(drop.rate >= 1 && drop.rate <= kCapacityRateMax);
  REHEARSE_ASSERT_LE(drop.from_ms, drop.until_ms);
  drops_.push_back(drop);
}

std::int64_t CapacityGate::rate_at(TimeMs t) const noexcept {
  std::int64_t rate = capacity_.rate;
  for (const CapacityDrop& d : drops_) {
    if (d.from_ms <= t && t < d.until_ms) rate = std::min(rate, d.rate);
  }
  return rate;
}

// Refills for the time since the last request at the rate in force now (a
// drop's edge falls between requests; the refill is the current rate's), then
// takes one token when the bucket holds one.
bool CapacityGate::take_token(TimeMs now_ms) {
  const std::int64_t rate = rate_at(now_ms);
  const std::int64_t cap = std::min(capacity_.burst, rate) * capacity_.per_ms;
  if (started_) {
    REHEARSE_ASSERT_GE(now_ms, refilled_at_);  // virtual time never goes backwards
    const std::int64_t elapsed = now_ms - refilled_at_;
    // Saturate: a long idle spell refills the bucket to the brim, no further.
    const std::int64_t room = cap > level_ ? cap - level_ : 0;
    level_ += elapsed >= room / std::max<std::int64_t>(rate, 1) + 1 ? room : elapsed * rate;
  }
  started_ = true;
  refilled_at_ = now_ms;
  level_ = std::min(level_, cap);
  if (level_ < capacity_.per_ms) {
    if (capacity_.refusals_count) level_ = std::max(level_ - capacity_.per_ms, -cap);
    return false;
  }
  level_ -= capacity_.per_ms;
  return true;
}

DurationMs CapacityGate::retry_after(TimeMs now_ms) const {
  switch (capacity_.retry_after) {
    case ServiceCapacity::RetryAfter::none: return 0;
    case ServiceCapacity::RetryAfter::fixed: return capacity_.retry_after_ms;
    case ServiceCapacity::RetryAfter::next_token: {
      const std::int64_t rate = std::max<std::int64_t>(rate_at(now_ms), 1);
      const std::int64_t missing = capacity_.per_ms - level_;
      const DurationMs ms = (missing + rate - 1) / rate;
      // Whole seconds, at least one: the header carries delta-seconds.
      return std::max<DurationMs>(1, (ms + kSecondMs - 1) / kSecondMs) * kSecondMs;
    }
  }
  return 0;
}

DurationMs CapacityGate::queue_wait(TimeMs now_ms, DurationMs service_ms) {
  if (!capacity_.limits_concurrency()) return 0;
  const TimeMs free = free_at_.top();
  free_at_.pop();
  const TimeMs start = std::max(now_ms, free);
  free_at_.push(start + service_ms);
  return start - now_ms;
}

Admission CapacityGate::admit(TimeMs now_ms, DurationMs service_ms) {
  REHEARSE_ASSERT_GE(service_ms, 0);
  Admission out;
  if (capacity_.limits_rate() && !take_token(now_ms)) {
    out.refused = true;
    out.retry_after_ms = retry_after(now_ms);
    return out;
  }
  out.wait_ms = queue_wait(now_ms, service_ms);
  REHEARSE_ASSERT_GE(out.wait_ms, 0);
  return out;
}

}  // namespace rehearse::sim
