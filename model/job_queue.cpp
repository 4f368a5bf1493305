#include "model/job_queue.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse {

const char* to_string(QueueEntryState state) noexcept {
  return state == QueueEntryState::waiting ? "waiting" : "active";
}

std::string queue_key(const QueueEntrySpec& spec) {
  REHEARSE_ASSERT_GE(spec.attempt, 0);
  return fmt::format("{}|{}|{}|{}", spec.job_id, spec.slot, to_string(spec.kind), spec.attempt);
}

}  // namespace rehearse
