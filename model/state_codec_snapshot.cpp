// The snapshot file (retry_state.json): every job's record keyed by its id,
// one per line in byte order, with a checksum over the canonical encoding
// (docs/state-file.md). Decoding hands each job to decode_job as soon as the
// parser has it, so a large snapshot never exists as one JSON tree.
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "model/assert.hpp"
#include "model/state_codec.hpp"
#include "model/state_codec_detail.hpp"

namespace rehearse {

using nlohmann::json;
using state_codec_detail::check_keys;
using state_codec_detail::hex8;
using state_codec_detail::job_placeholder;
using state_codec_detail::kStrictDump;
using state_codec_detail::parse_with;
using state_codec_detail::printable;
using state_codec_detail::read_integer;
using state_codec_detail::schema;
using state_codec_detail::StrictSax;
using state_codec_detail::take_hex8;
using state_codec_detail::take_literal;
using state_codec_detail::type_of;

namespace {

constexpr std::string_view kSnapshotChecksumPrefix = "crc32c=";

// The snapshot without its checksum key: what format 1 wrote before the
// checksum existed, and what the checksum covers.
std::string encode_state_body(const StateDocument& document) {
  std::string out = fmt::format("{{\"format\":{},\"journal_seq\":{},\"jobs\":{{", kStateFormat,
                                document.journal_seq);
  bool first = true;
  for (const auto& [id, state] : document.jobs) {
    REHEARSE_ASSERT(id == state.job_id);
    out += first ? "\n" : ",\n";
    first = false;
    out += json(id).dump(-1, ' ', false, kStrictDump);
    out += ":";
    out += encode_job(state).dump(-1, ' ', false, kStrictDump);
  }
  out += first ? "}}\n" : "\n}}\n";
  return out;
}

// The snapshot's "checksum" (docs/state-file.md): crc32c of the canonical
// encoding of what was decoded, so whitespace and key order stay free and
// any changed value is caught. Absent in snapshots written before it existed.
Status check_snapshot_checksum(const json& value, const StateDocument& document) {
  std::string_view text;
  if (value.is_string()) text = value.get_ref<const std::string&>();
  std::string_view rest = text;
  const auto stored = take_literal(rest, kSnapshotChecksumPrefix) ? take_hex8(rest) : std::nullopt;
  if (!stored || !rest.empty()) {
    return schema("/checksum",
                  "expected \"crc32c=<8 lowercase hex digits>\", got " +
                      (value.is_string() ? "\"" + printable(text) + "\"" : type_of(value)));
  }
  const std::uint32_t computed = crc32c(encode_state_body(document));
  if (computed != *stored) {
    return make_error(ErrorCode::corrupt,
                      fmt::format("checksum mismatch (stored {}, computed {}): the snapshot was "
                                  "altered after it was written",
                                  hex8(*stored), hex8(computed)),
                      "/checksum");
  }
  return {};
}

}  // namespace

std::string encode_state(const StateDocument& document) {
  std::string out = encode_state_body(document);
  const std::uint32_t crc = crc32c(out);
  // "...}\n" becomes "...,\"checksum\":\"crc32c=xxxxxxxx\"}\n": the last key.
  REHEARSE_ASSERT(out.size() >= 2 && out.compare(out.size() - 2, 2, "}\n") == 0);
  out.resize(out.size() - 2);
  out += fmt::format(",\"checksum\":\"{}{}\"}}\n", kSnapshotChecksumPrefix, hex8(crc));
  return out;
}

Result<StateDocument> decode_state(std::string_view bytes) {
  // Jobs are decoded one by one while the document is parsed; the first
  // job error (in document order) is reported after the document-level
  // checks, so that e.g. a newer format says so first.
  StateDocument document;
  std::optional<Error> job_error;
  StrictSax sax;
  sax.on_job = [&](const std::string& id, json&& record) {
    if (job_error) return;
    const std::string where = "/jobs/" + json_pointer_token(id);
    auto state = decode_job(record, where);
    if (!state.ok()) {
      job_error = std::move(state).error();
      return;
    }
    if (state->job_id != id) {
      job_error =
          schema(where + "/job_id", fmt::format("expected the job id \"{}\" (its key), got \"{}\"",
                                                printable(id), printable(state->job_id)));
      return;
    }
    document.jobs.emplace(id, std::move(*state));
  };
  auto parsed = parse_with(bytes, sax);
  if (!parsed.ok()) return std::move(parsed).error();
  const json& root = *parsed;
  if (!root.is_object()) {
    return schema("",
                  "expected the state document, an object {\"format\": 1, \"journal_seq\": "
                  "N, \"jobs\": {...}}, got " +
                      type_of(root));
  }
  // The format first, so that a newer file says so instead of "unknown key".
  if (!root.contains("format")) return schema("", "missing key \"format\" in the state document");
  if (auto format = read_integer(root.at("format"), "/format", kStateFormat, kStateFormat,
                                 "the state format version 1");
      !format.ok()) {
    return std::move(format).error();
  }
  static const std::vector<std::string> top_keys = {"checksum", "format", "jobs", "journal_seq"};
  // "checksum" is absent from snapshots written before it existed.
  if (auto s = check_keys(root, "", top_keys, "the state document", {"checksum"}); !s.ok()) {
    return s.error();
  }
  std::int64_t seq = 0;
  REHEARSE_READ(seq, read_integer(root.at("journal_seq"), "/journal_seq", 0,
                                  std::numeric_limits<std::int64_t>::max(),
                                  "the journal sequence number"));
  document.journal_seq = static_cast<std::uint64_t>(seq);
  const json& jobs = root.at("jobs");
  if (!jobs.is_object()) {
    return schema("/jobs",
                  "expected an object of job records keyed by job id, got " + type_of(jobs));
  }
  if (job_error) return *job_error;
  for (const auto& [id, record] : jobs.items()) {
    if (record == job_placeholder()) continue;  // decoded while parsing
    // Not a container, so never handed over: not a job record either.
    auto state = decode_job(record, "/jobs/" + json_pointer_token(id));
    REHEARSE_ASSERT(!state.ok());
    return std::move(state).error();
  }
  REHEARSE_ASSERT_EQ(document.jobs.size(), jobs.size());
  if (root.contains("checksum")) {
    if (auto s = check_snapshot_checksum(root.at("checksum"), document); !s.ok()) return s.error();
  }
  return document;
}

}  // namespace rehearse
