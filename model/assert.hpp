// Assertions of the core: always on (every build type, NDEBUG or not), and
// they print what they saw.
//
//   REHEARSE_ASSERT(cond)            the condition
//   REHEARSE_ASSERT_EQ(a, b)  ==     REHEARSE_ASSERT_NE(a, b)  !=
//   REHEARSE_ASSERT_LT(a, b)  <      REHEARSE_ASSERT_LE(a, b)  <=
//   REHEARSE_ASSERT_GT(a, b)  >      REHEARSE_ASSERT_GE(a, b)  >=
//   REHEARSE_UNREACHABLE()
//
// A failed comparison names the expression, both operands' values (fmt, or
// the underlying integer of an enum) and file:line, e.g.
//   assertion failed: next > t (next = 5, t = 7) at model/cron_match.cpp:221
// Integers of different signedness compare by value (std::cmp_less...), so
// a negative int is never "greater" than a size_t.
//
// What happens next is the installed handler's business (no test switch in
// the core): the default prints "rehearse: <message>" to stderr and aborts; a
// handler that returns is followed by abort too. The simulator installs one
// that throws, so that a failed assertion ends the simulated run with the
// outcome `assertion_failed` and its replay command (sim/kernel/simulator.hpp,
// docs/run.md). In a noexcept function or a destructor a throwing handler
// ends in std::terminate: the program still stops at the cause, only
// without the simulator's report.
#pragma once

#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <utility>

namespace rehearse {

struct AssertionFailure {
  std::string expression;  // as written, e.g. "next > t"
  std::string operands;    // "next = 5, t = 7"; empty for REHEARSE_ASSERT
  std::string file;        // from the source root: "model/cron_match.cpp"
  int line = 0;

  // "assertion failed: next > t (next = 5, t = 7) at model/cron_match.cpp:221"
  std::string describe() const;
};

// Called with every failed assertion; must not return (if it does, the
// program aborts). Throwing is allowed (see above).
using AssertionHandler = void (*)(const AssertionFailure&);

// Installs `handler` for the calling thread (nullptr: the default) and
// returns the one it replaces.
AssertionHandler set_assertion_handler(AssertionHandler handler) noexcept;

// The default: "rehearse: <describe()>" on stderr, then abort.
[[noreturn]] void abort_on_assertion(const AssertionFailure& failure);

// Installs a handler for a scope and puts the previous one back at its end.
class AssertionHandlerScope {
 public:
  explicit AssertionHandlerScope(AssertionHandler handler) noexcept
      : previous_(set_assertion_handler(handler)) {}
  ~AssertionHandlerScope() { set_assertion_handler(previous_); }
  AssertionHandlerScope(const AssertionHandlerScope&) = delete;
  AssertionHandlerScope& operator=(const AssertionHandlerScope&) = delete;

 private:
  AssertionHandler previous_;
};

namespace assert_detail {

// "source/root/model/cron_match.cpp" -> "model/cron_match.cpp" (stable across checkouts).
std::string source_relative(const char* file);

[[noreturn]] void fail(std::string expression, std::string operands, const char* file, int line);

template <typename T>
std::string show(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_enum_v<T>) {
    return fmt::format("{}", static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (fmt::is_formattable<T>::value) {
    return fmt::format("{}", value);
  } else {
    return "(not printable)";
  }
}

template <typename T>
constexpr bool kPlainInteger =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
    !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t> &&
    !std::is_same_v<T, wchar_t>;

enum class Op { eq, ne, lt, le, gt, ge };

template <typename A, typename B>
constexpr bool compare(Op op, const A& a, const B& b) {
  if constexpr (kPlainInteger<A> && kPlainInteger<B>) {
    switch (op) {
      case Op::eq: return std::cmp_equal(a, b);
      case Op::ne: return std::cmp_not_equal(a, b);
      case Op::lt: return std::cmp_less(a, b);
      case Op::le: return std::cmp_less_equal(a, b);
      case Op::gt: return std::cmp_greater(a, b);
      case Op::ge: return std::cmp_greater_equal(a, b);
    }
    return false;
  } else {
    switch (op) {
      case Op::eq: return a == b;
      case Op::ne: return a != b;
      case Op::lt: return a < b;
      case Op::le: return a <= b;
      case Op::gt: return a > b;
      case Op::ge: return a >= b;
    }
    return false;
  }
}

template <typename A, typename B>
[[noreturn]] void fail_compare(const char* a_text, const char* op_text, const char* b_text,
                               const A& a, const B& b, const char* file, int line) {
  fail(fmt::format("{} {} {}", a_text, op_text, b_text),
       fmt::format("{} = {}, {} = {}", a_text, show(a), b_text, show(b)), file, line);
}

}  // namespace assert_detail
}  // namespace rehearse

// An expression (usable where a void expression is), evaluated once.
#define REHEARSE_ASSERT(expr) \
  (static_cast<bool>(expr)    \
       ? static_cast<void>(0) \
       : ::rehearse::assert_detail::fail(#expr, std::string(), __FILE__, __LINE__))

#define REHEARSE_UNREACHABLE() \
  ::rehearse::assert_detail::fail("unreachable", std::string(), __FILE__, __LINE__)

// Each operand is evaluated exactly once.
#define REHEARSE_ASSERT_OP_(op, op_text, a, b)                                                     \
  do {                                                                                             \
    const auto& rehearse_assert_a_ = (a);                                                          \
    const auto& rehearse_assert_b_ = (b);                                                          \
    if (!::rehearse::assert_detail::compare(::rehearse::assert_detail::Op::op, rehearse_assert_a_, \
                                            rehearse_assert_b_)) {                                 \
      ::rehearse::assert_detail::fail_compare(#a, op_text, #b, rehearse_assert_a_,                 \
                                              rehearse_assert_b_, __FILE__, __LINE__);             \
    }                                                                                              \
  } while (false)

#define REHEARSE_ASSERT_EQ(a, b) REHEARSE_ASSERT_OP_(eq, "==", a, b)
#define REHEARSE_ASSERT_NE(a, b) REHEARSE_ASSERT_OP_(ne, "!=", a, b)
#define REHEARSE_ASSERT_LT(a, b) REHEARSE_ASSERT_OP_(lt, "<", a, b)
#define REHEARSE_ASSERT_LE(a, b) REHEARSE_ASSERT_OP_(le, "<=", a, b)
#define REHEARSE_ASSERT_GT(a, b) REHEARSE_ASSERT_OP_(gt, ">", a, b)
#define REHEARSE_ASSERT_GE(a, b) REHEARSE_ASSERT_OP_(ge, ">=", a, b)
