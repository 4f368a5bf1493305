// State codec: JobState <-> JSON, the snapshot document and the journal
// framing of the persistent state store (format described in
// docs/state-file.md, JSON Schema in docs/schema/state-file.schema.json).
//
// Decoding is strict schema validation: unknown or missing keys, wrong types,
// unknown enum names, bad instants, negative counts, a job whose "job_id"
// differs from its key, duplicate keys... are errors naming the JSON pointer
// and what was expected. Bytes that are not JSON at all (empty, truncated,
// invalid UTF-8) are ErrorCode::corrupt with "line:column"; well-formed JSON of
// the wrong shape is ErrorCode::schema_error with the pointer in `where`.
// Nothing here touches a disk.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job_state.hpp"
#include "model/result.hpp"

namespace rehearse {

inline constexpr int kStateFormat = 1;
inline constexpr int kJournalFormat = 1;

// The snapshot file (retry_state.json): every job's state as of journal
// sequence number journal_seq (0 = no journal record folded in yet).
struct StateDocument {
  std::uint64_t journal_seq = 0;
  std::map<std::string, JobState> jobs;

  bool operator==(const StateDocument&) const = default;
};

// --- JSON helpers -----------------------------------------------------------

// Parses exactly one JSON document: trailing bytes, duplicate object keys and
// invalid UTF-8 are errors (nlohmann alone keeps the last duplicate). Errors
// are ErrorCode::corrupt with where = "line:column" (1-based) for syntax
// errors, or the pointer of a duplicate key.
Result<nlohmann::json> parse_json_strict(std::string_view bytes);

// RFC 6901 escaping of one reference token ("~" -> "~0", "/" -> "~1").
std::string json_pointer_token(std::string_view token);

// True when bytes are well-formed UTF-8 (no overlongs, surrogates or code
// points past U+10FFFF).
bool is_valid_utf8(std::string_view bytes) noexcept;

// --- One job ----------------------------------------------------------------

// Checks a record before it is written (the pair of the decode check): a
// non-empty UTF-8 job id, enum values in range, non-negative counts and
// durations, instants within [kMinInstantMs, kMaxInstantMs], slot keys equal
// to their records' `slot`. ErrorCode::invalid_argument, where = pointer
// relative to the record.
Status validate_job_state(const JobState& state);

// The record as a JSON object, every field present (absent optionals as
// null). Precondition: validate_job_state(state) is ok. Text fields that are
// not valid UTF-8 (error messages from the outside) are stored with each bad
// byte replaced by U+FFFD.
nlohmann::json encode_job(const JobState& state);

// Strict inverse of encode_job. `pointer` locates `value` in its document and
// prefixes every error's `where`.
Result<JobState> decode_job(const nlohmann::json& value, const std::string& pointer = "");

// The names of the keys of an encoded job / slot record, sorted (what the
// schema file lists; a test compares them).
const std::vector<std::string>& job_field_names();
const std::vector<std::string>& slot_field_names();

// --- Snapshot document ------------------------------------------------------

// {"format":1,"journal_seq":N,"jobs":{...}} with one job per line, keys in
// byte order, ending in a newline. Deterministic: equal documents give equal
// bytes. Precondition: every job is valid and keyed by its own id.
std::string encode_state(const StateDocument& document);
Result<StateDocument> decode_state(std::string_view bytes);

// --- Journal framing --------------------------------------------------------

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial value and
// final xor 0xFFFFFFFF): crc32c("123456789") == 0xE3069283. `crc` chains
// calls (pass the previous result).
std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc = 0) noexcept;

// "#rehearse-journal format=1 base=<seq> crc32c=<8 hex>\n": the journal
// continues the snapshot whose journal_seq is base_seq.
std::string encode_journal_header(std::uint64_t base_seq);

// "<seq> <payload length> <payload> <crc32c 8 lower-case hex>\n" where the
// payload is the compact JSON of encode_job and the checksum covers every
// byte of the line before the space that precedes it.
std::string encode_journal_record(std::uint64_t seq, const JobState& state);

struct JournalRecord {
  std::uint64_t seq = 0;
  JobState state;
  std::uint64_t offset = 0;  // of the record's first byte in the file
  std::uint64_t end = 0;     // one past its newline
  std::uint64_t line = 0;    // 1-based line number in the file (the header is line 1)
};

// The bytes after the last good record that a crash mid-append left behind.
struct TornTail {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t line = 0;
  std::string reason;  // why the first bad record is not a record
};

struct JournalScan {
  std::uint64_t base_seq = 0;  // from the header (0 for a region scan)
  std::uint64_t header_length = 0;
  std::vector<JournalRecord> records;  // consecutive seqs
  std::uint64_t valid_end = 0;         // offset one past the last good record
  std::optional<TornTail> torn_tail;
};

// Decodes a whole journal file. Recovery rules (docs/state-file.md):
//  - the header must be present and intact, records must carry consecutive
//    sequence numbers starting at base+1, and every record whose checksum
//    holds must decode as a valid job (otherwise: corrupt);
//  - the region from the first record that is not intact (unterminated,
//    malformed frame, checksum mismatch) to the end of the file is a torn
//    tail, dropped and reported, when no intact record follows it and it is
//    no longer than the record its intact header (if any) announces;
//    otherwise it is corruption ("a bad record before the tail").
// Errors are ErrorCode::corrupt (framing) or schema_error (a record's
// content), where = "line N" or "line N#/pointer".
Result<JournalScan> decode_journal(std::string_view bytes);

struct JournalHeader {
  std::uint64_t base_seq = 0;
  std::uint64_t length = 0;  // bytes, newline included
};
// Only the header line at the start of bytes (which may hold more).
Result<JournalHeader> decode_journal_header(std::string_view bytes);

// The same rules over a region of a journal that starts at a record
// boundary: file offset `offset`, line number `line`, whose first record
// must carry `first_seq`. Used to follow a journal incrementally.
Result<JournalScan> decode_journal_region(std::string_view bytes, std::uint64_t offset,
                                          std::uint64_t line, std::uint64_t first_seq);

}  // namespace rehearse
