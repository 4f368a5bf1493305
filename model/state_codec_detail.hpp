// The state codec's private header, shared by model/state_codec*.cpp: the strict
// JSON parser that the snapshot drives job by job (state_codec_json.cpp), the field
// readers that the snapshot's document-level checks reuse (state_codec.cpp)
// and the hex and literal scanning that the journal and the snapshot
// checksum share (state_codec_journal.cpp).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/result.hpp"
#include "model/state_codec.hpp"

namespace rehearse::state_codec_detail {

using nlohmann::json;

// state_codec_json.cpp: strict JSON parsing, a SAX handler that builds the DOM
// like nlohmann's own, but refuses duplicate keys and keeps the parse
// error's byte position.

// Bytes from the outside world (a JSON token) made printable for a message.
std::string printable(std::string_view bytes);

// Stands in for a job already handed to StrictSax::on_job: binary values
// cannot come from JSON text, so it is never confused with one.
json job_placeholder();

class StrictSax {
 public:
  bool null() { return put(json(nullptr)); }
  bool boolean(bool v) { return put(json(v)); }
  bool number_integer(json::number_integer_t v) { return put(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return put(json(v)); }
  bool number_float(json::number_float_t v, const std::string& /*text*/) { return put(json(v)); }
  bool string(std::string& v) { return put(json(std::move(v))); }
  bool binary(json::binary_t& v) { return put(json::binary(std::move(v))); }

  bool start_object(std::size_t /*size*/) { return open(json::object()); }
  bool start_array(std::size_t /*size*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    Frame& top = stack_.back();
    if (top.value->contains(k)) {
      error_ =
          make_error(ErrorCode::corrupt,
                     fmt::format("duplicate key \"{}\" (each key may appear once)", printable(k)),
                     pointer() + "/" + json_pointer_token(k));
      return false;
    }
    top.key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    // keep only the explanation; the position is ours.
    if (const auto colon = what.find(": "); colon != std::string::npos) {
      what = what.substr(colon + 2);
    }
    error_position_ = position == 0 ? 0 : position - 1;
    error_ = make_error(ErrorCode::corrupt, "invalid JSON: " + printable(what));
    return false;
  }

  json root;
  std::optional<Error> error_;
  std::optional<std::size_t> error_position_;
  // When set, each container value of /jobs is handed over as soon as it is
  // complete and replaced in the tree by a placeholder (which keeps its key
  // for duplicate detection): a 100k-job snapshot never exists as one tree.
  std::function<void(const std::string& key, json&& value)> on_job;

 private:
  struct Frame {
    json* value = nullptr;
    std::string token;  // this container's reference token in its parent
    std::string key;    // objects: the key whose value comes next
  };

  // Places v in the current container (or as the root) and returns where.
  json* place(json&& v, std::string* token) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& top = stack_.back();
    if (top.value->is_object()) {
      if (token) *token = json_pointer_token(top.key);
      auto& slot = (*top.value)[top.key];
      slot = std::move(v);
      return &slot;
    }
    if (token) *token = std::to_string(top.value->size());
    top.value->push_back(std::move(v));
    return &top.value->back();
  }
  bool put(json&& v) {
    place(std::move(v), nullptr);
    return true;
  }
  bool open(json&& container) {
    std::string token;
    json* where = place(std::move(container), &token);
    stack_.push_back(Frame{where, std::move(token), {}});
    return true;
  }
  bool close() {
    if (on_job && stack_.size() == 3 && stack_[0].value->is_object() && stack_[1].token == "jobs" &&
        stack_[1].value->is_object()) {
      json value = std::move(*stack_[2].value);
      *stack_[2].value = job_placeholder();
      stack_.pop_back();
      on_job(stack_[1].key, std::move(value));
      return true;
    }
    stack_.pop_back();
    return true;
  }
  std::string pointer() const {
    std::string p;
    for (std::size_t i = 1; i < stack_.size(); ++i) p += "/" + stack_[i].token;
    return p;
  }

  std::vector<Frame> stack_;
};

Result<json> parse_with(std::string_view bytes, StrictSax& sax);

// state_codec.cpp: field decoding with JSON pointers.

Error schema(const std::string& where, std::string message);
std::string type_of(const json& v);

// `expected` (sorted) are the keys allowed; each is required unless listed
// in `optional`.
Status check_keys(const json& object, const std::string& where,
                  const std::vector<std::string>& expected, const char* what,
                  const std::vector<std::string>& optional = {});
Result<std::int64_t> read_integer(const json& v, const std::string& where, std::int64_t min,
                                  std::int64_t max, const char* what);

// Shorthand: assign a decoded field or return its error.
#define REHEARSE_READ(target, expr)             \
  do {                                          \
    auto rehearse_read_ = (expr);               \
    if (!rehearse_read_.ok()) {                 \
      return std::move(rehearse_read_).error(); \
    }                                           \
    (target) = std::move(*rehearse_read_);      \
  } while (false)

constexpr auto kStrictDump = json::error_handler_t::replace;

// state_codec_journal.cpp: journal framing.

std::string hex8(std::uint32_t v);
bool take_literal(std::string_view& text, std::string_view literal);
std::optional<std::uint32_t> take_hex8(std::string_view& text);

}  // namespace rehearse::state_codec_detail
