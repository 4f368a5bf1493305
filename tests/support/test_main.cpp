// Shared main for every test binary.
//
// Guards against a suite that passes because nothing ran: a gtest filter that
// matches no test, or RC_PARAMS asking RapidCheck for zero cases
// (RapidCheck passes silently with max_success=0).
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const auto& rc_config = rc::detail::configuration();
  if (rc_config.testParams.maxSuccess < 1) {
    std::fprintf(stderr,
                 "rehearse tests: RC_PARAMS sets max_success=%d; properties would run zero "
                 "cases. Refusing to report success.\n",
                 rc_config.testParams.maxSuccess);
    return 3;
  }
  const int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->test_to_run_count() == 0) {
    std::fprintf(stderr, "rehearse tests: no test ran in this binary (filter matched nothing)\n");
    return 4;
  }
  return rc;
}
