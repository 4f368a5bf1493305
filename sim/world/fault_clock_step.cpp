// The fault kind `clock_step`: the machine's wall clock jumps forward or back
// at an instant while simulated time runs on, as an NTP correction or a
// virtual machine resumed after a pause makes it jump. Every worker process
// of the machine reads the stepped clock (sim/world/worker_clock.hpp); the
// services keep true time. What the core does about it is docs/semantics.md
// §4 "Clock steps".
#include "model/assert.hpp"
#include "sim/world/fault_kinds.hpp"

// As in sim/world/fault_kinds.cpp: designated initializers name only the fields an
// entry sets; GCC 12 warns about every omitted field even so.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif

namespace rehearse::sim {

namespace {

FaultKeySpec by_key() {
  return FaultKeySpec{.name = "by",
                      .type = FaultKeyType::step,
                      .required = true,
                      .what = "clock step",
                      .expected = "a signed duration such as \"-1h\" (back) or \"+30m\" (forward)",
                      .schema_ref = "clock_step",
                      .doc =
                          "`by` (required: `\"-1h\"` steps back, `\"+30m\"` forward; not "
                          "zero, at most 7 days)",
                      .store = [](FaultSpec& f, const FaultValue& v) {
                        REHEARSE_ASSERT(v.value.is_number_integer());  // read_fault_step's
                        f.step_ms = v.value.get<DurationMs>();
                        REHEARSE_ASSERT_NE(f.step_ms, 0);
                      }};
}

}  // namespace

FaultKindSpec clock_step_kind() {
  return FaultKindSpec{
      .name = "clock_step",
      .applies_to = FaultTarget::process,
      .keys = {by_key()},
      .trace = {{"by_ms",
                 [](const FaultSpec& f) -> std::optional<nlohmann::json> { return f.step_ms; }}},
      .meaning =
          "the machine's wall clock jumps `by` at `at` (an NTP correction, a resumed virtual "
          "machine) while time runs on: every worker process reads the stepped clock from "
          "then on, the services keep true time",
      .schedule = [](const FaultSpec& f, std::size_t, TimeMs from, TimeMs,
                     FaultWorld& world) -> Status {
        REHEARSE_ASSERT(static_cast<bool>(world.step_clock));  // the world always sets it
        world.step_clock(from, f.step_ms);
        return {};
      },
  };
}

}  // namespace rehearse::sim
