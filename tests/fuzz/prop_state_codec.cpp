// The state snapshot and journal decoders (docs/fuzzing.md, target
// `state_codec`). Input: one byte choosing the decoder, then the bytes.
//  - snapshot: a refusal is corrupt (with line:column) or schema_error (with
//    a pointer); an accepted document holds only valid jobs keyed by their
//    ids, decode(encode(doc)) == doc, and encoding is a fixed point;
//  - journal (whole file, and a region after the header): an accepted scan
//    has consecutive seqs from base+1, records that end in a newline at
//    ascending offsets, a valid end within the bytes, a torn tail that runs
//    from the valid end to the end of the bytes; re-encoding its records
//    decodes to the same jobs; every record's state round-trips;
//  - one job record: decode(encode(state)) == state.
#include <string>

#include "model/state_codec.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

void check_error(const Error& error) {
  REHEARSE_FUZZ_CHECK(error.code == ErrorCode::corrupt || error.code == ErrorCode::schema_error,
                      error.describe());
  REHEARSE_FUZZ_CHECK(!error.message.empty(), error.describe());
}

void check_job_round_trip(const JobState& state, const std::string& what) {
  REHEARSE_FUZZ_CHECK(validate_job_state(state).ok(), what);
  const Result<JobState> back = decode_job(encode_job(state));
  REHEARSE_FUZZ_CHECK(back.ok() && *back == state, what + ": " + encode_job(state).dump());
}

void check_snapshot(std::string_view bytes) {
  const Result<StateDocument> doc = decode_state(bytes);
  if (!doc.ok()) return check_error(doc.error());
  for (const auto& [id, state] : doc->jobs) {
    REHEARSE_FUZZ_CHECK(id == state.job_id, id);
    check_job_round_trip(state, id);
  }
  const std::string encoded = encode_state(*doc);
  const Result<StateDocument> back = decode_state(encoded);
  REHEARSE_FUZZ_CHECK(back.ok() && *back == *doc, encoded);
  REHEARSE_FUZZ_CHECK(encode_state(*back) == encoded, encoded);
}

void check_scan(const JournalScan& scan, std::string_view bytes, std::uint64_t offset,
                std::uint64_t first_seq) {
  std::uint64_t at = offset + scan.header_length;
  std::uint64_t seq = first_seq;
  std::string reencoded = encode_journal_header(scan.base_seq);
  for (const JournalRecord& r : scan.records) {
    const std::string what = "record " + std::to_string(r.seq);
    REHEARSE_FUZZ_CHECK(r.seq == seq, what + ", expected " + std::to_string(seq));
    REHEARSE_FUZZ_CHECK(r.offset == at && r.end > r.offset, what);
    REHEARSE_FUZZ_CHECK(r.end - offset <= bytes.size() && bytes[r.end - offset - 1] == '\n', what);
    check_job_round_trip(r.state, what);
    reencoded += encode_journal_record(r.seq, r.state);
    at = r.end;
    ++seq;
  }
  REHEARSE_FUZZ_CHECK(scan.valid_end == at, std::to_string(scan.valid_end));
  if (scan.torn_tail) {
    REHEARSE_FUZZ_CHECK(scan.torn_tail->offset == scan.valid_end &&
                            scan.torn_tail->offset + scan.torn_tail->length ==
                                offset + bytes.size(),
                        scan.torn_tail->reason);
  } else {
    REHEARSE_FUZZ_CHECK(scan.valid_end == offset + bytes.size(), "bytes after the valid end");
  }
  if (offset != 0 || first_seq != scan.base_seq + 1) return;
  const Result<JournalScan> again = decode_journal(reencoded);
  REHEARSE_FUZZ_CHECK(again.ok() && again->records.size() == scan.records.size(), reencoded);
  for (std::size_t i = 0; i < scan.records.size(); ++i) {
    REHEARSE_FUZZ_CHECK(again->records[i].state == scan.records[i].state, reencoded);
  }
}

void check_journal(std::string_view bytes) {
  const Result<JournalScan> scan = decode_journal(bytes);
  if (!scan.ok()) return check_error(scan.error());
  check_scan(*scan, bytes, 0, scan->base_seq + 1);
}

// The incremental reader: the part after the header, read as a region.
void check_region(std::string_view bytes) {
  const Result<JournalHeader> header = decode_journal_header(bytes);
  if (!header.ok()) return check_error(header.error());
  REHEARSE_FUZZ_CHECK(header->length <= bytes.size() && header->length > 0,
                      std::to_string(header->length));
  const std::string_view region = bytes.substr(header->length);
  const Result<JournalScan> scan =
      decode_journal_region(region, header->length, 2, header->base_seq + 1);
  if (!scan.ok()) return check_error(scan.error());
  check_scan(*scan, region, header->length, header->base_seq + 1);
  const Result<JournalScan> whole = decode_journal(bytes);
  REHEARSE_FUZZ_CHECK(whole.ok() && whole->records.size() == scan->records.size(),
                      "the whole file and its region disagree");
}

void check_job_bytes(std::string_view bytes) {
  const Result<nlohmann::json> value = parse_json_strict(bytes);
  if (!value.ok()) return check_error(value.error());
  const Result<JobState> state = decode_job(*value, "");
  if (!state.ok()) return check_error(state.error());
  check_job_round_trip(*state, value->dump());
}

}  // namespace

void check_state_codec(std::string_view input) {
  Input in(input);
  switch (in.byte() % 4) {
    case 0: return check_snapshot(in.rest());
    case 1: return check_journal(in.rest());
    case 2: return check_region(in.rest());
    default: return check_job_bytes(in.rest());
  }
}

}  // namespace rehearse::fuzz
