// Reads duration strings in the grammar of the npm `ms` package, which
// Temporal's TypeScript SDK uses for its `Duration` values ('1 second', '1s',
// '1.5h', '100', '2 days'). The grammar, as ms 3.0.0-canary.1 (the version
// @temporalio/common pins) matches it:
//   [digits][.]digits, then any number of spaces, then an optional unit,
//   case-insensitive: ms msec msecs millisecond milliseconds (the default),
//   s sec secs second seconds, m min mins minute minutes, h hr hrs hour hours,
//   d day days, w week weeks, y yr yrs year years (a year is 365.25 days);
//   at most 100 characters.
// Refused, with what was expected: the empty string, a negative duration
// (ms reads '-1s' as -1000; no retry interval is negative), leading or
// trailing spaces, tabs, exponents, an unknown unit, and a value that is not
// a whole number of milliseconds (ms returns 0.5 for '0.5ms'; Temporal keeps
// the fraction as nanoseconds, rehearse counts whole milliseconds).
// The value is computed exactly in decimal, not in binary floating point: ms
// gives 1100.0000000000002 for '1.1s', which Temporal's conversion to
// seconds and nanoseconds truncates back to 1100 ms.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/result.hpp"

namespace rehearse {

// Milliseconds. Errors: ErrorCode::invalid_argument, where empty (the caller
// knows where the string sits).
Result<std::int64_t> parse_ms_duration(std::string_view text);

}  // namespace rehearse
