// RapidCheck properties in GoogleTest (docs/library.md).
//
// REHEARSE_PROP(Suite, Name, (args)) is RC_GTEST_PROP that also fails when
// the property ran zero cases (every case discarded, or RC_PARAMS asking for
// none: RapidCheck alone passes then) and prints the case count.
// (The project's own suites use it too, through tests/support/property.hpp.)
//
//   REHEARSE_PROP(MyWorld, Holds, ()) {
//     const auto doc = *rehearse::testing::gen::scenario();  // sim/testing/generators.hpp
//     REHEARSE_RC_ASSERT_HOLDS(doc);
//   }
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <iostream>
#include <sstream>
#include <string>

namespace rehearse::testing {

template <typename Testable>
void check_property(Testable&& testable) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(info->test_suite_name()) + "/" + info->name();
  metadata.description = info->name();
  const auto result = rc::detail::checkTestable(std::forward<Testable>(testable), metadata);
  if (result.template is<rc::detail::SuccessResult>()) {
    const auto success = result.template get<rc::detail::SuccessResult>();
    ::testing::Test::RecordProperty("rapidcheck_cases", success.numSuccess);
    if (success.numSuccess < 1) {
      FAIL() << "property ran zero cases";
    }
    if (!success.distribution.empty()) {
      rc::detail::printResultMessage(result, std::cout);
      std::cout << std::endl;
    }
  } else {
    std::ostringstream ss;
    rc::detail::printResultMessage(result, ss);
    FAIL() << ss.str() << std::endl;
  }
}

}  // namespace rehearse::testing

#define REHEARSE_PROP(Suite, Name, ArgList)                                                   \
  void rehearse_prop_##Suite##_##Name ArgList;                                                \
  TEST(Suite, Name) { ::rehearse::testing::check_property(&rehearse_prop_##Suite##_##Name); } \
  void rehearse_prop_##Suite##_##Name ArgList
