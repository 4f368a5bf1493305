#include "sim/cli/error_report.hpp"

#include <fmt/core.h>

#include <cctype>
#include <cstdio>

#include "model/assert.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"

namespace rehearse::cli {
namespace {

bool g_json_errors = false;

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

// The origin part of a location: a file, or "POLICY" for an inline argument.
void put_origin(nlohmann::json& out, const std::string& origin) {
  if (origin.empty()) return;
  out[origin == "POLICY" ? "argument" : "file"] = origin;
}

// Error::where is "path:/json/pointer", "path:line:column", "path" or empty.
void put_location(nlohmann::json& out, const std::string& where) {
  if (const auto at = where.find(":/"); at != std::string::npos) {
    put_origin(out, where.substr(0, at));
    out["pointer"] = where.substr(at + 1);
    return;
  }
  const auto last = where.rfind(':');
  if (last != std::string::npos && last > 0) {
    const auto before = where.rfind(':', last - 1);
    if (before != std::string::npos && all_digits(where.substr(before + 1, last - before - 1)) &&
        all_digits(where.substr(last + 1))) {
      put_origin(out, where.substr(0, before));
      out["line"] = std::stoll(where.substr(before + 1, last - before - 1));
      out["column"] = std::stoll(where.substr(last + 1));
      return;
    }
  }
  put_origin(out, where);
}

}  // namespace

void set_json_errors(bool on) noexcept { g_json_errors = on; }
bool json_errors() noexcept { return g_json_errors; }

bool wants_json(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--json") return true;
  }
  return false;
}

nlohmann::json error_object(const Error& error) {
  nlohmann::json out;
  out["code"] = to_string(error.code);
  out["message"] = error.message;
  if (!error.where.empty()) out["where"] = error.where;
  put_location(out, error.where);
  // A known location is always split into at least one of its parts.
  if (!error.where.empty()) {
    REHEARSE_ASSERT(out.contains("file") || out.contains("argument") || out.contains("pointer") ||
                    out.contains("line"));
  }
  return out;
}

int input_error(const Error& error, const std::string& hint) {
  fmt::print(stderr, "rehearse: error: {}\n", error.describe());
  if (!hint.empty()) fmt::print(stderr, "{}\n", hint);
  if (g_json_errors) {
    nlohmann::json body = error_object(error);
    body["exit_code"] = kExitUsage;
    nlohmann::json doc;
    doc["error"] = std::move(body);
    fmt::print("{}\n", doc.dump(2));
    std::fflush(stdout);
  }
  return kExitUsage;
}

int usage_error(const std::string& message, const std::string& hint) {
  REHEARSE_ASSERT(!message.empty());  // the program's own words: never a bare "error:"
  return input_error(make_error(ErrorCode::invalid_argument, message), hint);
}

}  // namespace rehearse::cli
