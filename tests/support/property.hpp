// REHEARSE_PROP: a RapidCheck property as a GoogleTest, like RC_GTEST_PROP,
// that also fails when the property ran zero cases. It lives in the testing
// library users link (sim/testing/property.hpp, docs/library.md); the
// project's own suites use the same one.
#pragma once

#include "sim/testing/property.hpp"
