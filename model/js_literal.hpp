// A small, strict reader of JavaScript object literals, for retry policies
// pasted as their systems write them (`{attempts: 4, backoff: {type:
// 'exponential', delay: 1_800_000}}`). JSON is a subset. docs/policies.md
// lists what it accepts:
//   - keys: identifiers ([A-Za-z_$][A-Za-z0-9_$]*) or quoted strings; a key
//     given twice is an error (JS would keep the last silently);
//   - strings in single or double quotes with the escapes \\ \' \" \n \r \t
//     \b \f \v \0 \uXXXX; no raw line breaks; valid UTF-8 only;
//   - numbers: decimal, optional sign '-', fraction and exponent, and digit
//     separators between digits (1_000); no hex, octal, leading zeros, '+',
//     NaN or Infinity;
//   - true, false, null; arrays; objects; trailing commas; // and /* */ comments.
// Anything else (undefined, function calls, spreads, expressions) is an error
// with the 1-based line:column of the offending character.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse {

// Integers that fit in int64 become JSON integers; other numbers doubles.
// Errors: ErrorCode::parse_error with where = "line:column".
Result<nlohmann::json> parse_js_literal(std::string_view text);

}  // namespace rehearse
