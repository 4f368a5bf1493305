// Fuzz properties: one check per input family, shared by the libFuzzer targets
// (tests/fuzz/fuzz_target.cpp, the `fuzz` preset) and the regression test that
// replays tests/fuzz/regressions/<target>/* in the normal suite
// (tests/fuzz/test_fuzz_regressions.cpp). A check never only asks "no crash":
// each states what must hold for every input (docs/fuzzing.md lists them).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rehearse::fuzz {

// A property that does not hold. The handler reports it: the fuzz targets
// print and abort (libFuzzer keeps the input), the regression test throws.
using FailureHandler = void (*)(const std::string& message);
void set_failure_handler(FailureHandler handler);
[[noreturn]] void property_failed(const char* expr, const char* file, int line,
                                  const std::string& detail);

// `detail` is evaluated only when the property fails.
#define REHEARSE_FUZZ_CHECK(cond, detail) \
  ((cond) ? static_cast<void>(0)          \
          : ::rehearse::fuzz::property_failed(#cond, __FILE__, __LINE__, (detail)))

// Reads a fuzz input front to back: fixed-size numbers first, the rest as text.
class Input {
 public:
  explicit Input(std::string_view bytes) : bytes_(bytes) {}
  std::uint8_t byte();
  std::uint64_t u64();
  std::string_view take(std::size_t n);
  std::string_view rest() const { return bytes_; }
  bool empty() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

void check_cron(std::string_view input);
void check_time(std::string_view input);
void check_policy(std::string_view input);
void check_scenario(std::string_view input);
void check_state_codec(std::string_view input);
void check_state_store(std::string_view input);
void check_ledger(std::string_view input);
void check_pipeline(std::string_view input);
void check_policy_syntax(std::string_view input);

struct Target {
  const char* name;  // also the corpus and regression directory name
  void (*check)(std::string_view input);
};
std::span<const Target> targets();

}  // namespace rehearse::fuzz
