// Strict JSON for the state files: exactly one document, no duplicate
// object keys (nlohmann alone keeps the last one), valid UTF-8, and errors
// that give the line and column or the pointer of the offending key.
#include <algorithm>
#include <string>

#include "model/state_codec.hpp"
#include "model/state_codec_detail.hpp"

namespace rehearse {

using nlohmann::json;
using state_codec_detail::StrictSax;

namespace state_codec_detail {

// Bytes from the outside world (a JSON token) made printable for a message.
std::string printable(std::string_view bytes) {
  std::string out;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  return out;
}

namespace {

std::string line_column(std::string_view bytes, std::size_t offset) {
  offset = std::min(offset, bytes.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < offset; ++i) {
    if (bytes[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return fmt::format("{}:{}", line, offset - line_start + 1);
}

}  // namespace

// Stands in for a job already handed to StrictSax::on_job: binary values
// cannot come from JSON text, so it is never confused with one.
json job_placeholder() { return json::binary({}); }

Result<json> parse_with(std::string_view bytes, StrictSax& sax) {
  if (bytes.empty()) {
    return make_error(ErrorCode::corrupt, "empty file: expected a JSON document", "1:1");
  }
  bool ok = false;
  try {
    ok = json::sax_parse(bytes.begin(), bytes.end(), &sax, json::input_format_t::json, true);
  } catch (const json::exception& e) {
    // sax_parse reports through parse_error; anything thrown is unexpected input.
    return make_error(ErrorCode::corrupt, "invalid JSON: " + printable(e.what()));
  }
  if (sax.error_) {
    Error e = *sax.error_;
    if (sax.error_position_) e.where = line_column(bytes, *sax.error_position_);
    return e;
  }
  if (!ok) return make_error(ErrorCode::corrupt, "invalid JSON");
  return std::move(sax.root);
}

}  // namespace state_codec_detail

std::string json_pointer_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (const char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) noexcept {
  std::size_t i = 0;
  const std::size_t n = bytes.size();
  while (i < n) {
    const auto b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      length = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      length = 3;
      if (b0 == 0xe0) lo = 0xa0;  // no overlongs
      if (b0 == 0xed) hi = 0x9f;  // no surrogates
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      length = 4;
      if (b0 == 0xf0) lo = 0x90;  // no overlongs
      if (b0 == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (i + length > n) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto b = static_cast<unsigned char>(bytes[i + k]);
      const unsigned char min = k == 1 ? lo : static_cast<unsigned char>(0x80);
      const unsigned char max = k == 1 ? hi : static_cast<unsigned char>(0xbf);
      if (b < min || b > max) return false;
    }
    i += length;
  }
  return true;
}

Result<json> parse_json_strict(std::string_view bytes) {
  StrictSax sax;
  return parse_with(bytes, sax);
}

}  // namespace rehearse
