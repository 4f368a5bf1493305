#include "model/job_state.hpp"

#include <array>

#include "model/assert.hpp"

namespace rehearse {

namespace {
constexpr std::array<const char*, 4> kStatusNames{"ok", "retrying", "retry_exhausted", "failed"};
constexpr std::array<const char*, 4> kActionNames{"none", "retry", "wait_next_run",
                                                  "manual_review"};

template <typename Enum, std::size_t N>
std::optional<Enum> parse_name(const std::array<const char*, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<Enum>(i);
  }
  return std::nullopt;
}
}  // namespace

// An enum value out of range (a bad cast) stops here instead of reading past
// the table.
const char* to_string(RetryStatus s) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(s), kStatusNames.size());
  return kStatusNames[static_cast<std::size_t>(s)];
}
const char* to_string(NextAction a) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(a), kActionNames.size());
  return kActionNames[static_cast<std::size_t>(a)];
}

std::optional<RetryStatus> parse_retry_status(std::string_view name) noexcept {
  return parse_name<RetryStatus>(kStatusNames, name);
}
std::optional<NextAction> parse_next_action(std::string_view name) noexcept {
  return parse_name<NextAction>(kActionNames, name);
}

}  // namespace rehearse
