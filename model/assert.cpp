#include "model/assert.hpp"

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace rehearse {
namespace {

// Per thread: `rehearse tune --threads` runs simulations side by side, each
// installing its handler on its own thread for the span of its run.
thread_local AssertionHandler g_handler = nullptr;

}  // namespace

std::string AssertionFailure::describe() const {
  std::string out = "assertion failed: " + expression;
  if (!operands.empty()) out += " (" + operands + ")";
  out += " at " + file + ":" + std::to_string(line);
  return out;
}

AssertionHandler set_assertion_handler(AssertionHandler handler) noexcept {
  AssertionHandler previous = g_handler;
  g_handler = handler;
  return previous;
}

void abort_on_assertion(const AssertionFailure& failure) {
  std::fprintf(stderr, "rehearse: %s\n", failure.describe().c_str());
  std::fflush(stderr);
  std::abort();
}

namespace assert_detail {

std::string source_relative(const char* file) {
  const std::string_view path(file);
  // The leftmost root directory: "tests/sim/x.cpp" stays whole.
  std::size_t cut = std::string_view::npos;
  for (const std::string_view root : {"/model/", "/sim/", "/tests/", "/bench/"}) {
    const std::size_t at = path.find(root);
    if (at != std::string_view::npos && (cut == std::string_view::npos || at < cut)) cut = at;
  }
  return std::string(cut == std::string_view::npos ? path : path.substr(cut + 1));
}

void fail(std::string expression, std::string operands, const char* file, int line) {
  const AssertionFailure failure{std::move(expression), std::move(operands), source_relative(file),
                                 line};
  if (g_handler != nullptr) g_handler(failure);
  abort_on_assertion(failure);  // no handler, or one that returned
}

}  // namespace assert_detail
}  // namespace rehearse
