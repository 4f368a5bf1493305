// Reads the retry settings of a Sidekiq job as its Ruby source writes them,
// as data: no Ruby is run. The input is a job class or a fragment of one:
//
//   class HardJob
//     include Sidekiq::Job
//     sidekiq_options retry: 5, queue: 'critical', dead: false
//     sidekiq_retry_in { |count| 10 * (count + 1) }
//     def perform(id) ... end
//   end
//
// Only the statements that start a line with `sidekiq_options` or
// `sidekiq_retry_in` are read; every other line (class, include, def and its
// body, end, comments) is skipped. The two calls themselves are read strictly.
//
// sidekiq_options: `key: value` or `key => value` pairs (keys: labels,
// symbols, strings), with or without parentheses, over several lines after a
// ','; values: integers, floats, 'strings' and "strings" (no #{}
// interpolation), symbols (:x -> "x"), true, false, nil, arrays and hashes.
// Several calls merge; a key given twice is refused.
//
// sidekiq_retry_in, with a { |count| ... } or do |count, exception| ... end
// block: the body must be ONE arithmetic expression in the block's first
// parameter (whatever its name): integer literals, the parameter, + - * / %
// ** (Ruby precedence: ** is right-associative and binds tighter than unary
// minus), parentheses, and ActiveSupport durations N.seconds, .minutes,
// .hours, .days, .weeks (singular too) and (expr).minutes. Anything else
// (if, case, :kill, :discard, rand, the exception, floats, several statements)
// is refused: Sidekiq would run it, a plan cannot. At most 128 operations.
//
// Result: {"retry": 5, "queue": "critical", "dead": false, "retry_in": AST}.
// The AST: integers, "count" for the parameter, ["+", a, b] (also - * / % **)
// and ["neg", a]; a duration is its value in seconds: N.minutes is
// ["*", N, 60], N.seconds is N itself.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse {

// Errors: ErrorCode::parse_error with where = "line:column" (1-based);
// a block that cannot be planned names what it does.
Result<nlohmann::json> read_sidekiq_snippet(std::string_view text);

// Evaluates a retry_in AST at `count` with Ruby's integer semantics: / and %
// round toward negative infinity. Errors (ErrorCode::invalid_argument): a
// negative exponent (Ruby gives a Rational), division by zero, a result
// beyond int64 (Ruby would grow a Bignum); ErrorCode::schema_error for an AST
// that is not of the shape above.
Result<std::int64_t> eval_count_expression(const nlohmann::json& ast, std::int64_t count);

}  // namespace rehearse
