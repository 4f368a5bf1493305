// The libFuzzer entry point of one target: compiled once per target with
// REHEARSE_FUZZ_CHECK_FN naming its check (tests/fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  rehearse::fuzz::REHEARSE_FUZZ_CHECK_FN(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
