// Result<T>: the error-as-value type of the core (g++ 12 has no std::expected).
//
// Errors a caller can act on travel as values; broken invariants crash loudly
// (REHEARSE_ASSERT). An Error carries a machine-readable code, a human message,
// and an optional location (file path, JSON pointer, or "line:column") so that
// the command line can print exactly where bad input is.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "model/assert.hpp"

namespace rehearse {

enum class ErrorCode {
  invalid_argument,  // bad input: a cron field, a policy key, an instant...
  parse_error,       // bytes that do not parse (JSON syntax, truncated files)
  schema_error,      // parsed, but not the expected shape
  corrupt,           // persisted state that exists but cannot be trusted
  not_found,         // a named thing does not exist
  io_error,          // the operating system said no
  never_fires,       // a cron expression that matches no instant
  unsupported,       // syntax we recognise but deliberately do not accept
  busy,              // a lock or resource is held elsewhere
  out_of_memory,     // the process ran out of memory (reported with what was reached)
  internal,          // should not happen; reported rather than crashing
};

const char* to_string(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::internal;
  std::string message;
  std::string where;  // path, JSON pointer or line:column; may be empty

  // "where: message" when a location is known.
  std::string describe() const { return where.empty() ? message : where + ": " + message; }
};

inline Error make_error(ErrorCode code, std::string message, std::string where = {}) {
  return Error{code, std::move(message), std::move(where)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    REHEARSE_ASSERT(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    REHEARSE_ASSERT(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    REHEARSE_ASSERT(ok());
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const& {
    REHEARSE_ASSERT(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    REHEARSE_ASSERT(!ok());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& {
    REHEARSE_ASSERT(!ok_);
    return error_;
  }
  Error&& error() && {
    REHEARSE_ASSERT(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

}  // namespace rehearse
