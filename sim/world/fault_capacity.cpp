// The fault kind `capacity`: a provider degraded for a span, serving fewer
// requests than it declares. Over the window the service's rate limit is the
// fault's `share` of the declared rate (per the service's own `per`), and its bucket holds at most
// that many tokens (sim/world/service_capacity.hpp). A retry storm needs no
// outage to start: a lowered rate that the fleet's steady load exceeds is
// enough.
#include "model/assert.hpp"
#include "sim/world/fault_kinds.hpp"
#include "sim/world/generic_service.hpp"

// As in sim/world/fault_kinds.cpp: designated initializers name only the fields an
// entry sets; GCC 12 warns about every omitted field even so.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace rehearse::sim {

namespace {

FaultKeySpec limited_service_key() {
  return FaultKeySpec{.name = "service",
                      .type = FaultKeyType::rate_limited,
                      .required = true,
                      .what = "service with a rate limit",
                      .doc =
                          "`service` (required: a service of your own whose `capacity` has a "
                          "`rate`)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.user_service = v.value.get<std::string>();
                      }};
}

FaultKeySpec share_key() {
  return FaultKeySpec{.name = "share",
                      .type = FaultKeyType::rate,
                      .required = true,
                      .what = "the share of the declared rate left",
                      .schema_ref = "rate",
                      .doc =
                          "`share` (required: the share of the declared `rate` the service "
                          "serves while the fault lasts, 0 to 1; at least one request per "
                          "`per` is served)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        f.rate = v.value.get<double>();
                        REHEARSE_ASSERT(f.rate >= 0.0 && f.rate <= 1.0);  // read_rate's range
                      }};
}

}  // namespace

FaultKindSpec capacity_kind() {
  return FaultKindSpec{
      .name = "capacity",
      .lasting = true,
      .applies_to = FaultTarget::service,
      .keys = {limited_service_key(), share_key()},
      .trace = {{"share",
                 [](const FaultSpec& f) -> std::optional<nlohmann::json> { return f.rate; }}},
      .meaning =
          "the service's rate limit is `share` of its declared `rate` over the window: a "
          "degraded provider refusing what it would serve",
      .schedule = [](const FaultSpec& f, std::size_t, TimeMs from, TimeMs until,
                     FaultWorld& world) -> Status {
        GenericService* service = world.user_service ? world.user_service(f.user_service) : nullptr;
        REHEARSE_ASSERT(service != nullptr);  // the loader's rate_limited reader
        service->add_capacity_drop(from, until, f.rate);
        return {};
      },
  };
}

}  // namespace rehearse::sim
