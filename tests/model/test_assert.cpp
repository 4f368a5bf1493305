// The assertion library (model/assert.hpp): a failed comparison names the
// expression, both operands and the place; the default handler aborts in
// every build type; an installed handler is called instead and put back.
#include "model/assert.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace rehearse {
namespace {

struct Caught {
  AssertionFailure failure;
};

[[noreturn]] void throw_caught(const AssertionFailure& failure) { throw Caught{failure}; }

// The failure `fn` raises, or nothing when every assertion held.
template <typename Fn>
std::optional<AssertionFailure> failure_of(Fn fn) {
  const AssertionHandlerScope scope(&throw_caught);
  try {
    fn();
  } catch (const Caught& c) {
    return c.failure;
  }
  return std::nullopt;
}

enum class Colour : unsigned char { red = 1, green = 7 };

TEST(Assert, ComparisonShowsBothOperandsExpressionAndPlace) {
  const std::int64_t next = 1000;
  const std::int64_t t = 1060;
  const int line = __LINE__ + 1;
  const auto f = failure_of([&] { REHEARSE_ASSERT_GT(next, t); });
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->expression, "next > t");
  EXPECT_EQ(f->operands, "next = 1000, t = 1060");
  EXPECT_EQ(f->file, "tests/model/test_assert.cpp");
  EXPECT_EQ(f->line, line);
  EXPECT_EQ(f->describe(),
            "assertion failed: next > t (next = 1000, t = 1060) at "
            "tests/model/test_assert.cpp:" +
                std::to_string(line));
}

TEST(Assert, EveryComparisonFailsExactlyWhenItShould) {
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT_EQ(2, 2); }));
  EXPECT_TRUE(failure_of([] { REHEARSE_ASSERT_EQ(2, 3); }));
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT_NE(2, 3); }));
  EXPECT_TRUE(failure_of([] { REHEARSE_ASSERT_NE(2, 2); }));
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT_LT(2, 3); }));
  EXPECT_TRUE(failure_of([] { REHEARSE_ASSERT_LT(3, 3); }));
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT_LE(3, 3); }));
  EXPECT_TRUE(failure_of([] { REHEARSE_ASSERT_LE(4, 3); }));
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT_GT(4, 3); }));
  EXPECT_TRUE(failure_of([] { REHEARSE_ASSERT_GT(3, 3); }));
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT_GE(3, 3); }));
  EXPECT_TRUE(failure_of([] { REHEARSE_ASSERT_GE(2, 3); }));
  EXPECT_FALSE(failure_of([] { REHEARSE_ASSERT(1 + 1 == 2); }));
  const auto plain = failure_of([] { REHEARSE_ASSERT(1 + 1 == 3); });
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->expression, "1 + 1 == 3");
  EXPECT_EQ(plain->operands, "");
}

// -1 < 0u is false with the built-in operator (the int converts to a huge
// unsigned); the library compares integers by value.
TEST(Assert, MixedSignednessComparesValues) {
  const int minus_one = -1;
  const std::size_t zero = 0;
  EXPECT_FALSE(failure_of([&] { REHEARSE_ASSERT_LT(minus_one, zero); }));
  EXPECT_TRUE(failure_of([&] { REHEARSE_ASSERT_GE(minus_one, zero); }));
}

TEST(Assert, EnumsStringsAndBoolsArePrinted) {
  const auto e = failure_of([] { REHEARSE_ASSERT_EQ(Colour::red, Colour::green); });
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->operands, "Colour::red = 1, Colour::green = 7");
  const std::string a = "queued";
  const auto s = failure_of([&] { REHEARSE_ASSERT_EQ(a, std::string("running")); });
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->operands, "a = queued, std::string(\"running\") = running");
  const auto b = failure_of([] { REHEARSE_ASSERT_EQ(true, false); });
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->operands, "true = true, false = false");
}

TEST(Assert, OperandsAreEvaluatedOnce) {
  int calls = 0;
  auto next = [&calls] { return ++calls; };
  EXPECT_FALSE(failure_of([&] { REHEARSE_ASSERT_EQ(next(), 1); }));
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(failure_of([&] { REHEARSE_ASSERT(next() == 2); }));
  EXPECT_EQ(calls, 2);
}

TEST(Assert, ScopeRestoresThePreviousHandler) {
  EXPECT_EQ(set_assertion_handler(nullptr), nullptr);
  {
    const AssertionHandlerScope scope(&throw_caught);
    EXPECT_EQ(set_assertion_handler(&throw_caught), &throw_caught);
  }
  EXPECT_EQ(set_assertion_handler(nullptr), nullptr);
}

// The default handler prints the message and aborts, whatever NDEBUG says
// (this binary is built like the rest: release builds keep assertions).
TEST(AssertDeathTest, DefaultAbortsWithTheMessage) {
  testing::GTEST_FLAG(death_test_style) = "threadsafe";
  const int seven = 7;
  EXPECT_DEATH(REHEARSE_ASSERT_LT(seven, 3),
               "rehearse: assertion failed: seven < 3 \\(seven = 7, 3 = 3\\) at "
               "tests/model/test_assert.cpp:[0-9]+");
  EXPECT_DEATH(REHEARSE_UNREACHABLE(), "rehearse: assertion failed: unreachable at");
}

TEST(AssertDeathTest, AHandlerThatReturnsStillAborts) {
  testing::GTEST_FLAG(death_test_style) = "threadsafe";
  EXPECT_DEATH(
      {
        const AssertionHandlerScope scope([](const AssertionFailure&) {});
        REHEARSE_ASSERT(false);
      },
      "rehearse: assertion failed: false at");
}

TEST(Assert, SourceRelativeKeepsTheTreePath) {
  EXPECT_EQ(assert_detail::source_relative("/a/b/model/cron.cpp"), "model/cron.cpp");
  EXPECT_EQ(assert_detail::source_relative("/a/b/tests/sim/x.cpp"), "tests/sim/x.cpp");
  EXPECT_EQ(assert_detail::source_relative("/a/b/sim/cli/cmd_run.cpp"), "sim/cli/cmd_run.cpp");
  EXPECT_EQ(assert_detail::source_relative("plain.cpp"), "plain.cpp");
}

}  // namespace
}  // namespace rehearse
