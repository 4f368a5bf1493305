// The journal (retry_state.journal) and its framing: a checksummed header
// naming the snapshot it continues, then one line per record with its
// sequence number, length and CRC-32C, and the recovery rules that tell a
// torn tail left by a crash mid-append from corruption (docs/state-file.md).
#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/state_codec.hpp"
#include "model/state_codec_detail.hpp"

namespace rehearse {

using state_codec_detail::hex8;
using state_codec_detail::kStrictDump;
using state_codec_detail::take_hex8;
using state_codec_detail::take_literal;

namespace state_codec_detail {

std::string hex8(std::uint32_t v) { return fmt::format("{:08x}", v); }

bool take_literal(std::string_view& text, std::string_view literal) {
  if (text.substr(0, literal.size()) != literal) return false;
  text.remove_prefix(literal.size());
  return true;
}

std::optional<std::uint32_t> take_hex8(std::string_view& text) {
  if (text.size() < 8) return std::nullopt;
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    const char c = text[i];
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else {
      return std::nullopt;
    }
    v = (v << 4) | digit;
  }
  text.remove_prefix(8);
  return v;
}

}  // namespace state_codec_detail

namespace {

constexpr std::string_view kHeaderPrefix = "#rehearse-journal format=";

// Parses a decimal without sign or leading zeros (except "0") from the front
// of text, advancing it. Fails on overflow past INT64_MAX.
std::optional<std::uint64_t> take_decimal(std::string_view& text) {
  std::size_t n = 0;
  while (n < text.size() && n < 20 && text[n] >= '0' && text[n] <= '9') ++n;
  if (n == 0 || (n > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + n, value);
  if (ec != std::errc() || ptr != text.data() + n) return std::nullopt;
  if (value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  text.remove_prefix(n);
  return value;
}

// One line of the journal, without its newline, checked for frame and
// checksum. The payload is not decoded here.
struct Frame {
  std::uint64_t seq = 0;
  std::string_view payload;
};

// The frame of a record line, or why it is not one.
Result<Frame> parse_frame(std::string_view line) {
  const std::string_view whole = line;
  Frame frame;
  const auto seq = take_decimal(line);
  if (!seq || !take_literal(line, " ")) {
    return make_error(ErrorCode::corrupt, "malformed record frame: expected \"<seq> \"");
  }
  const auto length = take_decimal(line);
  if (!length || !take_literal(line, " ")) {
    return make_error(ErrorCode::corrupt, "malformed record frame: expected \"<length> \"");
  }
  if (*length + 9 != line.size()) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("record length {} does not match the line ({} payload bytes "
                                  "present before the checksum)",
                                  *length, line.size() < 9 ? 0 : line.size() - 9));
  }
  frame.seq = *seq;
  frame.payload = line.substr(0, static_cast<std::size_t>(*length));
  line.remove_prefix(static_cast<std::size_t>(*length));
  const std::string_view covered = whole.substr(0, whole.size() - line.size());
  const auto stored = (take_literal(line, " ") ? take_hex8(line) : std::nullopt);
  if (!stored || !line.empty()) {
    return make_error(ErrorCode::corrupt, "malformed record frame: expected \" <crc32c>\"");
  }
  const std::uint32_t actual = crc32c(covered);
  if (actual != *stored) {
    return make_error(ErrorCode::corrupt, fmt::format("checksum mismatch (stored {}, computed {})",
                                                      hex8(*stored), hex8(actual)));
  }
  return frame;
}

// The size of the record an intact "<seq> <length> " prefix announces
// (without checking anything else), if the prefix is there.
std::optional<std::uint64_t> announced_size(std::string_view region) {
  const std::size_t total = region.size();
  const auto seq = take_decimal(region);
  if (!seq || !take_literal(region, " ")) return std::nullopt;
  const auto length = take_decimal(region);
  if (!length || !take_literal(region, " ")) return std::nullopt;
  const std::uint64_t prefix = total - region.size();
  return prefix + *length + 10;  // payload, " ", 8 hex digits, "\n"
}

// Is there an intact record starting after any newline of region?
bool intact_record_follows(std::string_view region) {
  for (std::size_t pos = region.find('\n'); pos != std::string_view::npos;
       pos = region.find('\n', pos + 1)) {
    const std::size_t start = pos + 1;
    const std::size_t end = region.find('\n', start);
    if (end == std::string_view::npos) return false;  // unterminated: not intact
    if (parse_frame(region.substr(start, end - start)).ok()) return true;
  }
  return false;
}

Error at_line(Error e, std::uint64_t line) {
  e.where =
      e.where.empty() ? fmt::format("line {}", line) : fmt::format("line {}#{}", line, e.where);
  return e;
}

}  // namespace

// Slicing by 8 (eight bytes per step through eight tables, table k being
// the CRC of a byte followed by k zero bytes): the same value as the
// byte-at-a-time loop at the tail, several times faster; every write checks
// the whole journal with it (docs/state-file.md). Bytes are read one by one,
// so the result does not depend on the machine's byte order.
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc) noexcept {
  using Tables = std::array<std::array<std::uint32_t, 256>, 8>;
  static const Tables tables = [] {
    Tables t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
      t[0][i] = c;
    }
    for (std::size_t k = 1; k < t.size(); ++k) {
      for (std::size_t i = 0; i < 256; ++i) {
        t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xffU];
      }
    }
    return t;
  }();
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i]));
  };
  crc = ~crc;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint32_t lo =
        crc ^ (byte(i) | byte(i + 1) << 8 | byte(i + 2) << 16 | byte(i + 3) << 24);
    const std::uint32_t hi = byte(i + 4) | byte(i + 5) << 8 | byte(i + 6) << 16 | byte(i + 7) << 24;
    crc = tables[7][lo & 0xffU] ^ tables[6][(lo >> 8) & 0xffU] ^ tables[5][(lo >> 16) & 0xffU] ^
          tables[4][lo >> 24] ^ tables[3][hi & 0xffU] ^ tables[2][(hi >> 8) & 0xffU] ^
          tables[1][(hi >> 16) & 0xffU] ^ tables[0][hi >> 24];
  }
  for (; i < bytes.size(); ++i) crc = tables[0][(crc ^ byte(i)) & 0xffU] ^ (crc >> 8);
  return ~crc;
}

std::string encode_journal_header(std::uint64_t base_seq) {
  const std::string covered = fmt::format("{}{} base={}", kHeaderPrefix, kJournalFormat, base_seq);
  return fmt::format("{} crc32c={}\n", covered, hex8(crc32c(covered)));
}

std::string encode_journal_record(std::uint64_t seq, const JobState& state) {
  REHEARSE_ASSERT(seq >= 1);
  const std::string payload = encode_job(state).dump(-1, ' ', false, kStrictDump);
  std::string line = fmt::format("{} {} {}", seq, payload.size(), payload);
  line += fmt::format(" {}\n", hex8(crc32c(line)));
  return line;
}

Result<JournalScan> decode_journal_region(std::string_view bytes, std::uint64_t offset,
                                          std::uint64_t line, std::uint64_t first_seq) {
  JournalScan scan;
  scan.valid_end = offset;
  std::uint64_t expected = first_seq;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t newline = bytes.find('\n', pos);
    std::optional<Error> bad;  // why [pos, ...) is not an intact record
    if (newline == std::string_view::npos) {
      bad = make_error(ErrorCode::corrupt, "unterminated record (no newline before end of file)");
    } else {
      auto frame = parse_frame(bytes.substr(pos, newline - pos));
      if (!frame.ok()) {
        bad = std::move(frame).error();
      } else {
        // An intact frame is no torn write: anything wrong with it now is corruption.
        if (frame->seq != expected) {
          return at_line(make_error(ErrorCode::corrupt,
                                    fmt::format("expected record sequence number {}, got {}",
                                                expected, frame->seq)),
                         line);
        }
        auto payload = parse_json_strict(frame->payload);
        if (!payload.ok()) {
          Error e = std::move(payload).error();
          e.message = "record payload: " + e.message;
          e.where.clear();
          return at_line(std::move(e), line);
        }
        auto state = decode_job(*payload, "");
        if (!state.ok()) return at_line(std::move(state).error(), line);
        JournalRecord record;
        record.seq = frame->seq;
        record.state = std::move(*state);
        record.offset = offset + pos;
        record.end = offset + newline + 1;
        record.line = line;
        scan.records.push_back(std::move(record));
        scan.valid_end = offset + newline + 1;
        ++expected;
        ++line;
        pos = newline + 1;
        continue;
      }
    }
    // [pos, end) starts with a record that is not intact. It is a torn tail
    // only if it can be what one interrupted append left behind.
    const std::string_view region = bytes.substr(pos);
    if (intact_record_follows(region)) {
      Error e = *bad;
      e.message = "bad record before intact ones (not a torn tail): " + e.message;
      return at_line(std::move(e), line);
    }
    if (const auto announced = announced_size(region); announced && region.size() > *announced) {
      Error e = *bad;
      e.message = fmt::format(
          "bad last record followed by {} more bytes than it announces (not "
          "a torn tail): {}",
          region.size() - *announced, e.message);
      return at_line(std::move(e), line);
    }
    scan.torn_tail = TornTail{offset + pos, region.size(), line, bad->message};
    break;
  }
  return scan;
}

Result<JournalHeader> decode_journal_header(std::string_view bytes) {
  const std::size_t newline = bytes.find('\n');
  const auto bad_header = [&](const std::string& why) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("bad journal header ({}); expected \"{}{} base=<seq> "
                                  "crc32c=<8 hex>\"",
                                  why, kHeaderPrefix, kJournalFormat),
                      "line 1");
  };
  if (newline == std::string_view::npos) {
    return bad_header(bytes.empty() ? "empty file" : "no newline");
  }
  std::string_view header = bytes.substr(0, newline);
  const std::string_view whole_header = header;
  if (!take_literal(header, kHeaderPrefix)) return bad_header("unknown prefix");
  const auto format = take_decimal(header);
  if (!format) return bad_header("no format number");
  if (*format != static_cast<std::uint64_t>(kJournalFormat)) {
    return bad_header(fmt::format("unsupported format {}", *format));
  }
  if (!take_literal(header, " base=")) return bad_header("no base");
  const auto base = take_decimal(header);
  if (!base) return bad_header("bad base sequence number");
  const std::string_view covered = whole_header.substr(0, whole_header.size() - header.size());
  if (!take_literal(header, " crc32c=")) return bad_header("no checksum");
  const auto stored = take_hex8(header);
  if (!stored || !header.empty()) return bad_header("bad checksum field");
  if (crc32c(covered) != *stored) return bad_header("checksum mismatch");
  return JournalHeader{*base, newline + 1};
}

Result<JournalScan> decode_journal(std::string_view bytes) {
  auto header = decode_journal_header(bytes);
  if (!header.ok()) return std::move(header).error();
  auto scan =
      decode_journal_region(bytes.substr(header->length), header->length, 2, header->base_seq + 1);
  if (!scan.ok()) return scan;
  scan->base_seq = header->base_seq;
  scan->header_length = header->length;
  return scan;
}

}  // namespace rehearse
