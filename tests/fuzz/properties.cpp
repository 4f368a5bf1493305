// The failure handler and the input reader.
#include "tests/fuzz/properties.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rehearse::fuzz {
namespace {

void print_and_abort(const std::string& message) {
  std::fprintf(stderr, "rehearse fuzz: property failed: %s\n", message.c_str());
  std::abort();
}

FailureHandler g_handler = print_and_abort;

}  // namespace

void set_failure_handler(FailureHandler handler) { g_handler = handler; }

void property_failed(const char* expr, const char* file, int line, const std::string& detail) {
  g_handler(std::string(file) + ":" + std::to_string(line) + ": " + expr + ": " + detail);
  std::abort();  // a handler that returns still stops the check
}

std::uint8_t Input::byte() {
  if (bytes_.empty()) return 0;
  const auto b = static_cast<std::uint8_t>(bytes_.front());
  bytes_.remove_prefix(1);
  return b;
}

std::uint64_t Input::u64() {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | byte();
  return v;
}

std::string_view Input::take(std::size_t n) {
  const std::string_view head = bytes_.substr(0, n);
  bytes_.remove_prefix(head.size());
  return head;
}

}  // namespace rehearse::fuzz
