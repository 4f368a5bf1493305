// The loader's reading of a user service's `capacity` block
// (sim/world/service_capacity.hpp; docs/scenario-format.md "Capacity").
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

namespace {
constexpr std::string_view kCapacityWhat =
    "a capacity {rate?, per?, burst?, concurrency?, status?, retry_after?, refusals_count?}";
}  // namespace

// `retry_after`: "auto" (until the bucket holds a token) or a whole number of seconds.
void Loader::load_capacity_retry_after(const json& v, const std::string& pointer,
                                       ServiceCapacity& capacity) {
  if (v.is_string() && v.get<std::string>() == "auto") {
    capacity.retry_after = ServiceCapacity::RetryAfter::next_token;
    return;
  }
  const auto d = read_duration(v, pointer, kSecondMs);
  if (!d) return;
  if (*d % kSecondMs != 0 || *d > kCapacityPerMaxMs) {
    value_error(pointer, fmt::format("expected \"auto\" or whole seconds from 1s to 1d (the header "
                                     "carries seconds), got {}",
                                     v.dump()));
    return;
  }
  capacity.retry_after = ServiceCapacity::RetryAfter::fixed;
  capacity.retry_after_ms = *d;
}

std::optional<ServiceCapacity> Loader::load_capacity(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, kCapacityWhat)) return std::nullopt;
  check_keys(v, pointer, keys_of("capacity"));
  const std::size_t errors_before = error_count();
  ServiceCapacity capacity;
  if (const json* r = field(v, "rate")) {
    capacity.rate =
        read_int(*r, child(pointer, "rate"), 1, kCapacityRateMax, "requests per `per`").value_or(0);
  }
  if (const json* p = field(v, "per")) {
    const auto per = read_duration(*p, child(pointer, "per"), 1);
    if (per && *per > kCapacityPerMaxMs) {
      value_error(child(pointer, "per"),
                  fmt::format("expected a window up to 1d, got {}", p->dump()));
    } else if (per) {
      capacity.per_ms = *per;
    }
  }
  if (const json* b = field(v, "burst")) {
    capacity.burst =
        read_int(*b, child(pointer, "burst"), 1, kCapacityRateMax, "the bucket's size").value_or(0);
  }
  if (const json* c = field(v, "concurrency")) {
    capacity.concurrency = read_int(*c, child(pointer, "concurrency"), 1, kCapacityConcurrencyMax,
                                    "requests served at once")
                               .value_or(0);
  }
  if (const json* s = field(v, "status")) {
    if (const auto status = read_int(*s, child(pointer, "status"), 429, 503, "429 or 503")) {
      if (*status != 429 && *status != 503) {
        value_error(child(pointer, "status"), fmt::format("expected 429 or 503, got {}", *status));
      } else {
        capacity.status = static_cast<int>(*status);
      }
    }
  }
  if (const json* r = field(v, "refusals_count")) {
    capacity.refusals_count = read_bool(*r, child(pointer, "refusals_count")).value_or(false);
  }
  if (const json* a = field(v, "retry_after")) {
    load_capacity_retry_after(*a, child(pointer, "retry_after"), capacity);
  }
  if (error_count() != errors_before) return std::nullopt;
  return checked_capacity(capacity, v, pointer);
}

// What only the block as a whole can say: a limit at all, and keys that
// belong to a rate limit given without one.
std::optional<ServiceCapacity> Loader::checked_capacity(const ServiceCapacity& capacity,
                                                        const json& v, const std::string& pointer) {
  if (!capacity.limits_rate() && !capacity.limits_concurrency()) {
    error(pointer,
          "a capacity needs \"rate\" (requests per \"per\") or \"concurrency\" "
          "(requests served at once), or both");
    return std::nullopt;
  }
  if (!capacity.limits_rate()) {
    for (const char* key : {"per", "burst", "status", "retry_after", "refusals_count"}) {
      if (field(v, key) != nullptr) {
        error(child(pointer, key),
              fmt::format("key '{}' belongs to a rate limit, and this capacity has no \"rate\"",
                          key));
        return std::nullopt;
      }
    }
  }
  return capacity;
}

}  // namespace rehearse::sim::scenario_detail
