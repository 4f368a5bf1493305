// Reads the Python that Celery and Temporal's Python SDK users write their
// retry settings in, as data: no Python is run.
//
// Three forms, each a whole input:
//   - a call or a decorator: `@app.task(bind=True, autoretry_for=(RequestException,),
//     retry_kwargs={'max_retries': 5})`, `RetryPolicy(maximum_attempts=0, ...)`
//     -> {"$call": "app.task", "args": [...], "kwargs": {...}}. A decorator may
//     be followed by its `def name(...):` (or `async def`) line; that line and
//     everything after it are not read. A decorator without arguments
//     (`@app.task`) is a call without arguments;
//   - bare keyword arguments `max_retries=5, retry_backoff=True`, separated by
//     commas or line breaks (class attributes: `max_retries = 5`)
//     -> {"$call": "", "args": [], "kwargs": {...}};
//   - a dict literal `{'max_retries': 5}` -> a JSON object.
//
// Values: integers (1_000; beyond int64 a double), floats (1.5, .5, 1e3),
// a sign before a number, strings in single, double or triple quotes with
// Python's escapes (u'' and r'' prefixes; adjacent strings join), True, False,
// None, tuples and lists -> arrays (`(X,)` is a one-tuple, `(X)` is X), dicts
// with string keys -> objects, names and dotted names (exception classes)
// -> {"$name": "requests.exceptions.RequestException"}, and nested calls
// (`timedelta(minutes=5)`) -> the "$call" shape. `#` comments, and line breaks
// inside brackets or after a backslash, are space.
//
// Refused, with the 1-based line:column: brackets that do not match or are
// never closed, a keyword given twice, a dict key given twice or not a string,
// the dict keys "$call" and "$name" (they would read as a call or a name),
// a positional argument after a keyword one, *args/**kwargs, expressions
// (operators, lambda, conditionals, subscripts, calls of calls: "an
// expression: write its value"), f-strings and bytes, sets, hex/octal/binary
// and imaginary numbers, zero-led integers, strings that are not valid UTF-8,
// and nesting deeper than 64 levels.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "model/result.hpp"

namespace rehearse {

// Errors: ErrorCode::parse_error with where = "line:column".
Result<nlohmann::json> read_python_call(std::string_view text);

}  // namespace rehearse
