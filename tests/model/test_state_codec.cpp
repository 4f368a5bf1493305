// Goal: the state file codec is exact (every JobState field round-trips, the
// bytes are pinned), strict (every schema rule rejects with a JSON pointer and
// what was expected) and never turns damaged bytes into an empty state.
// Method: a golden document; a table of one-edit schema violations; a
// tripwire that counts JobState's fields at compile time and compares them
// with the codec's and the JSON Schema's key lists; RapidCheck properties for
// round trips of fully populated states and for random damage (byte flips,
// truncation, deletion, insertion) of snapshots.
#include "model/state_codec.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "tests/model/job_state_gen.hpp"
#include "tests/model/state_codec_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::codec_test {
namespace {

using nlohmann::json;

// --- Field-count tripwire -------------------------------------------------
// Counts an aggregate's fields by trying brace-initialisation with more and
// more arguments. When someone adds a field to JobState or SlotRecord, the
// static_asserts below fail until the codec, the schema file and the
// generators cover it (then update the counts).
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT: never defined, only used in unevaluated context
};

template <typename T, typename... Args>
constexpr std::size_t field_count() {
  if constexpr (requires { T{Args{}..., AnyField{}}; }) {
    return field_count<T, Args..., AnyField>();
  } else {
    return sizeof...(Args);
  }
}

constexpr std::size_t kJobStateFields = 16;
constexpr std::size_t kSlotRecordFields = 10;
static_assert(field_count<JobState>() == kJobStateFields,
              "JobState gained or lost a field: cover it in model/state_codec.cpp (encode, decode, "
              "validate, job_field_names), docs/schema/state-file.schema.json, "
              "docs/state-file.md and tests/model/job_state_gen.hpp, then update this count");
static_assert(field_count<SlotRecord>() == kSlotRecordFields,
              "SlotRecord gained or lost a field: cover it in the codec, the schema, the docs "
              "and the generator, then update this count");

TEST(StateCodecFields, CodecNamesEveryFieldOnce) {
  EXPECT_EQ(job_field_names().size(), kJobStateFields);
  EXPECT_EQ(slot_field_names().size(), kSlotRecordFields);
  JobState s;
  s.job_id = "x";
  s.slots[0] = SlotRecord{};
  s.slots[0].rule_counts = {1, 0};  // written only when a policy has several retriers
  s.slots[0].last_delay_ms = 1500;  // written only under decorrelated jitter
  const json j = encode_job(s);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, job_field_names());
  std::vector<std::string> slot_keys;
  for (const auto& [k, v] : j["slots"]["1970-01-01T00:00:00Z"].items()) slot_keys.push_back(k);
  EXPECT_EQ(slot_keys, slot_field_names());
}

std::string source_dir() {
  if (const char* env = std::getenv("REHEARSE_SOURCE_DIR")) return env;
  std::string file = __FILE__;  // .../tests/model/test_state_codec.cpp
  for (int i = 0; i < 3; ++i) file = file.substr(0, file.rfind('/'));
  return file;
}

std::vector<std::string> sorted_keys(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : object.items()) keys.push_back(k);
  return keys;
}

std::vector<std::string> sorted_strings(const json& array) {
  std::vector<std::string> out = array.get<std::vector<std::string>>();
  std::sort(out.begin(), out.end());
  return out;
}

// The JSON Schema shipped for editors must describe exactly what the codec
// writes and accepts.
TEST(StateCodecFields, SchemaFileMatchesCodec) {
  const std::string path = source_dir() + "/docs/schema/state-file.schema.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  auto schema = parse_json_strict(buffer.str());
  ASSERT_TRUE(schema.ok()) << schema.error().describe();
  const json& defs = (*schema)["$defs"];
  EXPECT_EQ(sorted_keys(defs["job"]["properties"]), job_field_names());
  EXPECT_EQ(sorted_strings(defs["job"]["required"]), job_field_names());
  EXPECT_EQ(defs["job"]["additionalProperties"], false);
  EXPECT_EQ(sorted_keys(defs["slot"]["properties"]), slot_field_names());
  std::vector<std::string> slot_required = slot_field_names();
  std::erase(slot_required, "rule_counts");    // optional: several retriers only
  std::erase(slot_required, "last_delay_ms");  // optional: decorrelated jitter only
  EXPECT_EQ(sorted_strings(defs["slot"]["required"]), slot_required);
  EXPECT_EQ(defs["slot"]["additionalProperties"], false);
  EXPECT_EQ(sorted_strings((*schema)["required"]),
            (std::vector<std::string>{"format", "jobs", "journal_seq"}));
  EXPECT_EQ((*schema)["additionalProperties"], false);
  std::vector<std::string> statuses;
  for (const auto& v : defs["retry_status"]["enum"]) statuses.push_back(v.get<std::string>());
  EXPECT_EQ(statuses, (std::vector<std::string>{"ok", "retrying", "retry_exhausted", "failed"}));
  std::vector<std::string> classes;
  for (const auto& v : defs["failure_class"]["enum"]) classes.push_back(v.get<std::string>());
  std::vector<std::string> expected_classes;
  for (const FailureClass c : all_failure_classes()) expected_classes.emplace_back(to_string(c));
  EXPECT_EQ(classes, expected_classes);
}

// --- Golden bytes -----------------------------------------------------------

// crc32c of kGoldenSnapshot: the checksum its encoding carries.
const char* const kGoldenCrc = "ece6f873";

const char* const kGoldenSnapshot =
    "{\"format\":1,\"journal_seq\":7,\"jobs\":{\n"
    "\"fresh\":{\"coalesced_slots\":0,\"failure_class\":null,\"job_id\":\"fresh\","
    "\"last_error\":\"\",\"last_slot\":null,\"max_lateness_ms\":0,\"misfire_runs\":0,"
    "\"next_action\":\"none\",\"next_retry_at\":null,\"next_run_at\":null,\"policy_error\":\"\","
    "\"retry_count\":0,\"retry_limit\":0,\"retry_status\":\"ok\",\"slots\":{},"
    "\"updated_at\":null},\n"
    "\"weekly-summary\":{\"coalesced_slots\":0,\"failure_class\":\"rate_limit\","
    "\"job_id\":\"weekly-summary\",\"last_error\":\"HTTP 429\","
    "\"last_slot\":\"2026-12-04T17:00:00Z\",\"max_lateness_ms\":0,\"misfire_runs\":0,"
    "\"next_action\":\"retry\",\"next_retry_at\":\"2026-12-04T17:05:00Z\","
    "\"next_run_at\":\"2026-12-11T17:00:00Z\",\"policy_error\":\"\",\"retry_count\":1,"
    "\"retry_limit\":2,\"retry_status\":\"retrying\",\"slots\":{\"2026-12-04T17:00:00Z\":"
    "{\"failure_class\":\"rate_limit\",\"last_error\":\"HTTP 429\",\"next_action\":\"retry\","
    "\"next_retry_at\":\"2026-12-04T17:05:00Z\",\"retry_count\":1,\"retry_status\":\"retrying\","
    "\"slot\":\"2026-12-04T17:00:00Z\",\"stalled_count\":0}},"
    "\"updated_at\":\"2026-12-04T17:00:00Z\"}\n"
    "}}\n";

StateDocument sample_document() {
  StateDocument d;
  d.journal_seq = 7;
  JobState fresh;
  fresh.job_id = "fresh";
  d.jobs["fresh"] = fresh;
  d.jobs["weekly-summary"] = sample_job();
  return d;
}

// The golden snapshot as the writer ends it now: a "checksum" key last, the
// crc32c of the bytes above (kGoldenSnapshot, which is also what a snapshot
// written before the checksum existed looks like).
std::string with_checksum(const std::string& body, const std::string& crc) {
  return body.substr(0, body.size() - 2) + ",\"checksum\":\"crc32c=" + crc + "\"}\n";
}

TEST(StateCodec, EncodesTheGoldenDocument) {
  EXPECT_EQ(encode_state(sample_document()), with_checksum(kGoldenSnapshot, kGoldenCrc));
  const std::string empty = "{\"format\":1,\"journal_seq\":0,\"jobs\":{}}\n";
  EXPECT_EQ(crc32c(empty), 0xc8304787U);
  EXPECT_EQ(encode_state(StateDocument{}), with_checksum(empty, "c8304787"));
}

// A snapshot written before the checksum existed (no "checksum" key) loads.
TEST(StateCodec, SnapshotWithoutChecksumStillLoads) {
  auto d = decode_state(kGoldenSnapshot);
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(*d, sample_document());
}

TEST(StateCodec, ChecksummedSnapshotRoundTripsAlsoReformatted) {
  const std::string bytes = encode_state(sample_document());
  auto d = decode_state(bytes);
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(*d, sample_document());
  EXPECT_EQ(encode_state(*d), bytes);
  // The checksum covers the content, not the layout: a re-indented file with
  // its keys reordered still verifies.
  auto pretty = decode_state(json::parse(bytes).dump(4));
  ASSERT_TRUE(pretty.ok()) << pretty.error().describe();
  EXPECT_EQ(*pretty, sample_document());
}

// One changed value (a bit flip, a hand edit) under an intact checksum: the
// document still parses and validates, only the checksum catches it.
TEST(StateCodec, AlteredValueUnderTheChecksumIsCorrupt) {
  std::string bytes = encode_state(sample_document());
  const std::size_t at = bytes.find("HTTP 429");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 8, "HTTP 428");
  auto d = decode_state(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_EQ(d.error().where, "/checksum");
  EXPECT_NE(d.error().message.find("checksum mismatch (stored " + std::string(kGoldenCrc)),
            std::string::npos)
      << d.error().message;
}

TEST(StateCodec, CorruptChecksumIsCorrupt) {
  std::string bytes = encode_state(sample_document());
  const std::size_t at = bytes.find("crc32c=");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 7] = bytes[at + 7] == '0' ? '1' : '0';
  auto d = decode_state(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_EQ(d.error().where, "/checksum");
  EXPECT_NE(d.error().message.find("checksum mismatch"), std::string::npos) << d.error().message;
}

TEST(StateCodec, MalformedChecksumSaysWhatIsExpected) {
  for (const std::string& value : {std::string("\"crc32c=12\""), std::string("\"md5=0123abcd\""),
                                   std::string("\"crc32c=0123ABCD\""), std::string("17")}) {
    const std::string bytes =
        "{\"format\":1,\"journal_seq\":0,\"jobs\":{},\"checksum\":" + value + "}\n";
    auto d = decode_state(bytes);
    ASSERT_FALSE(d.ok()) << value;
    EXPECT_EQ(d.error().where, "/checksum") << value;
    EXPECT_NE(d.error().message.find("crc32c=<8 lowercase hex digits>"), std::string::npos)
        << d.error().message;
  }
}

TEST(StateCodec, DecodesTheGoldenDocument) {
  auto d = decode_state(kGoldenSnapshot);
  ASSERT_TRUE(d.ok()) << d.error().describe();
  EXPECT_EQ(*d, sample_document());
  // Whitespace and key order are free on input: a hand-edited file decodes.
  auto pretty = decode_state(json::parse(kGoldenSnapshot).dump(4));
  ASSERT_TRUE(pretty.ok()) << pretty.error().describe();
  EXPECT_EQ(*pretty, sample_document());
}

// --- Bytes that are not a JSON document: corrupt, with line:column ---------

TEST(StateCodec, EmptyBytesAreCorrupt) {
  auto d = decode_state("");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_EQ(d.error().where, "1:1");
  EXPECT_NE(d.error().message.find("empty"), std::string::npos);
}

TEST(StateCodec, TruncatedJsonIsCorruptWithLineAndColumn) {
  const std::string golden = kGoldenSnapshot;
  const std::string cut = golden.substr(0, golden.find("\"weekly-summary\":{") + 30);
  auto d = decode_state(cut);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_EQ(d.error().where.rfind("3:", 0), 0u) << d.error().where;  // on line 3
  EXPECT_NE(d.error().message.find("invalid JSON"), std::string::npos) << d.error().message;
}

TEST(StateCodec, SyntaxErrorPointsAtTheOffendingCharacter) {
  auto d = decode_state("{\"format\":1,\n  \"jobs\": x}");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_EQ(d.error().where, "2:11");
}

TEST(StateCodec, InvalidUtf8IsCorrupt) {
  std::string bytes = kGoldenSnapshot;
  bytes.replace(bytes.find("HTTP 429"), 1, "\xff");
  auto d = decode_state(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_NE(d.error().message.find("UTF-8"), std::string::npos) << d.error().message;
  // The message itself stays printable (no raw invalid bytes in reports).
  EXPECT_TRUE(is_valid_utf8(d.error().message));
}

TEST(StateCodec, TrailingBytesAreCorrupt) {
  auto d = decode_state(std::string(kGoldenSnapshot) + "{}");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
}

TEST(StateCodec, DuplicateKeysAreCorruptWithTheirPointer) {
  auto d = decode_state(
      "{\"format\":1,\"journal_seq\":0,\"jobs\":{\"a\":{\"job_id\":\"a\",\"job_id\":\"b\"}}}");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::corrupt);
  EXPECT_EQ(d.error().where, "/jobs/a/job_id");
  EXPECT_NE(d.error().message.find("duplicate key"), std::string::npos);
}

// --- Schema violations: schema_error with the JSON pointer ----------------

struct SchemaCase {
  const char* name;
  std::function<void(json&)> edit;
  const char* where;
  const char* message_part;
};

TEST(StateCodec, SchemaViolationsNameThePointerAndTheExpectation) {
  const char* job = "/jobs/weekly-summary";
  (void)job;
  const std::vector<SchemaCase> cases = {
      {"root not an object", [](json& d) { d = json::array(); }, "", "expected the state document"},
      {"missing format", [](json& d) { d.erase("format"); }, "", "missing key \"format\""},
      {"newer format", [](json& d) { d["format"] = 2; }, "/format", "format version 1"},
      {"unknown top key", [](json& d) { d["extra"] = 1; }, "/extra", "unknown key \"extra\""},
      {"missing jobs", [](json& d) { d.erase("jobs"); }, "", "missing key \"jobs\""},
      {"negative journal_seq", [](json& d) { d["journal_seq"] = -1; }, "/journal_seq",
       "journal sequence number"},
      {"jobs not an object", [](json& d) { d["jobs"] = json::array(); }, "/jobs",
       "expected an object of job records"},
      {"job not an object", [](json& d) { d["jobs"]["weekly-summary"] = 3; },
       "/jobs/weekly-summary", "expected a job record object, got integer"},
      {"unknown job key", [](json& d) { d["jobs"]["weekly-summary"]["retries"] = 1; },
       "/jobs/weekly-summary/retries", "unknown key \"retries\""},
      {"missing job key", [](json& d) { d["jobs"]["weekly-summary"].erase("retry_limit"); },
       "/jobs/weekly-summary", "missing key \"retry_limit\""},
      {"count as string", [](json& d) { d["jobs"]["weekly-summary"]["retry_count"] = "1"; },
       "/jobs/weekly-summary/retry_count", "expected a retry count"},
      {"negative count", [](json& d) { d["jobs"]["weekly-summary"]["retry_count"] = -1; },
       "/jobs/weekly-summary/retry_count", "got -1"},
      {"fractional count", [](json& d) { d["jobs"]["weekly-summary"]["retry_limit"] = 1.5; },
       "/jobs/weekly-summary/retry_limit", "non-integer number"},
      {"count past int", [](json& d) { d["jobs"]["weekly-summary"]["misfire_runs"] = 4294967296; },
       "/jobs/weekly-summary/misfire_runs", "got 4294967296"},
      {"negative lateness", [](json& d) { d["jobs"]["weekly-summary"]["max_lateness_ms"] = -5; },
       "/jobs/weekly-summary/max_lateness_ms", "lateness in milliseconds"},
      {"bad status", [](json& d) { d["jobs"]["weekly-summary"]["retry_status"] = "retry"; },
       "/jobs/weekly-summary/retry_status", "one of: ok, retrying, retry_exhausted, failed"},
      {"bad action", [](json& d) { d["jobs"]["weekly-summary"]["next_action"] = "RETRY"; },
       "/jobs/weekly-summary/next_action", "got \"RETRY\""},
      {"bad class", [](json& d) { d["jobs"]["weekly-summary"]["failure_class"] = "quota"; },
       "/jobs/weekly-summary/failure_class", "a failure class (or null)"},
      {"bad instant",
       [](json& d) { d["jobs"]["weekly-summary"]["next_retry_at"] = "2026-13-01T00:00:00Z"; },
       "/jobs/weekly-summary/next_retry_at", "ISO-8601"},
      {"instant as number", [](json& d) { d["jobs"]["weekly-summary"]["updated_at"] = 1000; },
       "/jobs/weekly-summary/updated_at", "got integer"},
      {"local time instant",
       [](json& d) { d["jobs"]["weekly-summary"]["next_run_at"] = "2026-12-11T17:00:00+09:00"; },
       "/jobs/weekly-summary/next_run_at", "ISO-8601"},
      {"text not a string", [](json& d) { d["jobs"]["weekly-summary"]["last_error"] = nullptr; },
       "/jobs/weekly-summary/last_error", "the last error text (a string)"},
      {"job id mismatch", [](json& d) { d["jobs"]["weekly-summary"]["job_id"] = "other"; },
       "/jobs/weekly-summary/job_id", "expected the job id \"weekly-summary\""},
      {"empty job id",
       [](json& d) {
         d["jobs"][""] = d["jobs"]["fresh"];
         d["jobs"][""]["job_id"] = "";
       },
       "/jobs//job_id", "non-empty job id"},
      {"slots not an object", [](json& d) { d["jobs"]["fresh"]["slots"] = json::array(); },
       "/jobs/fresh/slots", "keyed by slot instant"},
      {"slot key not an instant",
       [](json& d) {
         auto& slots = d["jobs"]["weekly-summary"]["slots"];
         slots["friday"] = slots["2026-12-04T17:00:00Z"];
         slots.erase("2026-12-04T17:00:00Z");
       },
       "/jobs/weekly-summary/slots/friday", "ISO-8601"},
      {"slot key not canonical",
       [](json& d) {
         auto& slots = d["jobs"]["weekly-summary"]["slots"];
         slots["2026-12-04T17:00Z"] = slots["2026-12-04T17:00:00Z"];
         slots.erase("2026-12-04T17:00:00Z");
       },
       "/jobs/weekly-summary/slots/2026-12-04T17:00Z", "canonical spelling"},
      {"slot record under another key",
       [](json& d) {
         d["jobs"]["weekly-summary"]["slots"]["2026-12-04T17:00:00Z"]["slot"] =
             "2026-12-04T18:00:00Z";
       },
       "/jobs/weekly-summary/slots/2026-12-04T17:00:00Z/slot", "its key"},
      {"unknown slot key",
       [](json& d) { d["jobs"]["weekly-summary"]["slots"]["2026-12-04T17:00:00Z"]["x"] = 1; },
       "/jobs/weekly-summary/slots/2026-12-04T17:00:00Z/x", "unknown key \"x\" in a slot record"},
      {"negative stall count",
       [](json& d) {
         d["jobs"]["weekly-summary"]["slots"]["2026-12-04T17:00:00Z"]["stalled_count"] = -1;
       },
       "/jobs/weekly-summary/slots/2026-12-04T17:00:00Z/stalled_count", "a stall count"},
      {"pointer escaping",
       [](json& d) {
         d["jobs"]["a/b~c"] = d["jobs"]["fresh"];
         d["jobs"]["a/b~c"]["job_id"] = "a/b~c";
         d["jobs"]["a/b~c"]["retry_count"] = true;
       },
       "/jobs/a~1b~0c/retry_count", "got boolean"},
  };
  for (const auto& c : cases) {
    json d = json::parse(kGoldenSnapshot);
    c.edit(d);
    auto r = decode_state(d.dump());
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.error().code, ErrorCode::schema_error) << c.name;
    EXPECT_EQ(r.error().where, c.where) << c.name << ": " << r.error().describe();
    EXPECT_NE(r.error().message.find(c.message_part), std::string::npos)
        << c.name << ": " << r.error().message;
  }
}

// --- Validation before writing ----------------------------------------------

TEST(StateCodec, ValidateRejectsWhatCouldNotBeReadBack) {
  const auto rejects = [](const std::function<void(JobState&)>& edit, const char* where) {
    JobState s = sample_job();
    edit(s);
    const Status st = validate_job_state(s);
    EXPECT_FALSE(st.ok()) << where;
    if (!st.ok()) {
      EXPECT_EQ(st.error().code, ErrorCode::invalid_argument);
      EXPECT_EQ(st.error().where, where);
    }
  };
  EXPECT_TRUE(validate_job_state(sample_job()).ok());
  rejects([](JobState& s) { s.job_id.clear(); }, "/job_id");
  rejects([](JobState& s) { s.job_id = "bad\xc3"; }, "/job_id");
  rejects([](JobState& s) { s.retry_count = -1; }, "/retry_count");
  rejects([](JobState& s) { s.retry_limit = -2; }, "/retry_limit");
  rejects([](JobState& s) { s.misfire_runs = -1; }, "/misfire_runs");
  rejects([](JobState& s) { s.coalesced_slots = -1; }, "/coalesced_slots");
  rejects([](JobState& s) { s.max_lateness_ms = -1; }, "/max_lateness_ms");
  rejects([](JobState& s) { s.next_retry_at = -1; }, "/next_retry_at");
  rejects([](JobState& s) { s.updated_at = kMaxInstantMs + 1; }, "/updated_at");
  rejects([](JobState& s) { s.next_run_at = -5; }, "/next_run_at");
  rejects([](JobState& s) { s.last_slot = kMaxInstantMs + 1; }, "/last_slot");
  rejects([](JobState& s) { s.retry_status = static_cast<RetryStatus>(9); }, "/retry_status");
  rejects([](JobState& s) { s.next_action = static_cast<NextAction>(4); }, "/next_action");
  rejects([](JobState& s) { s.failure_class = static_cast<FailureClass>(9); }, "/failure_class");
  rejects([](JobState& s) { s.slots.begin()->second.slot += 1; },
          "/slots/2026-12-04T17:00:00Z/slot");
  rejects([](JobState& s) { s.slots.begin()->second.retry_count = -1; },
          "/slots/2026-12-04T17:00:00Z/retry_count");
  rejects([](JobState& s) { s.slots.begin()->second.stalled_count = -1; },
          "/slots/2026-12-04T17:00:00Z/stalled_count");
}

TEST(StateCodec, TextThatIsNotUtf8IsStoredReplaced) {
  JobState s = sample_job();
  s.last_error = "upstream said \xff\xfe then \xc3";
  const json j = encode_job(s);
  const std::string bytes = j.dump(-1, ' ', false, json::error_handler_t::replace);
  auto parsed = parse_json_strict(bytes);
  ASSERT_TRUE(parsed.ok());
  auto back = decode_job(*parsed);
  ASSERT_TRUE(back.ok()) << back.error().describe();
  EXPECT_EQ(back->last_error, "upstream said \xef\xbf\xbd\xef\xbf\xbd then \xef\xbf\xbd");
  // Through the journal framing as well.
  auto scan = decode_journal_region(encode_journal_record(1, s), 0, 1, 1);
  ASSERT_TRUE(scan.ok()) << scan.error().describe();
  EXPECT_EQ(scan->records.at(0).state.last_error, back->last_error);
}

TEST(Utf8, ValidatorFollowsRfc3629) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("é한😀"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
  EXPECT_FALSE(is_valid_utf8("\x80"));              // stray continuation
}

// --- Properties ---------------------------------------------------------------

REHEARSE_PROP(StateCodecProps, FullyPopulatedJobRoundTrips, ()) {
  const JobState s = *gen_job_state(true);
  RC_ASSERT(validate_job_state(s).ok());
  const std::string bytes = encode_job(s).dump();
  auto parsed = parse_json_strict(bytes);
  RC_ASSERT(parsed.ok());
  auto back = decode_job(*parsed);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == s);
}

REHEARSE_PROP(StateCodecProps, DocumentRoundTripsAndEncodesDeterministically, ()) {
  const auto states = *gen_states(0);
  StateDocument d;
  d.journal_seq = *rc::gen::inRange<std::uint64_t>(0, 1'000'000'000'000);
  for (const auto& s : states) d.jobs[s.job_id] = s;
  const std::string bytes = encode_state(d);
  auto back = decode_state(bytes);
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == d);
  RC_ASSERT(encode_state(*back) == bytes);
}

// One random kind of damage to a byte string.
std::string damage(const std::string& bytes) {
  const auto kind = *rc::gen::inRange(0, 4);
  const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
  std::string out = bytes;
  switch (kind) {
    case 0:  // flip to a different byte
      out[at] = static_cast<char>(out[at] ^ *rc::gen::inRange(1, 256));
      break;
    case 1:  // truncate
      out.resize(at);
      break;
    case 2:  // delete a run
      out.erase(at, *rc::gen::inRange<std::size_t>(1, 16));
      break;
    default:  // insert a byte
      out.insert(out.begin() + static_cast<std::ptrdiff_t>(at),
                 static_cast<char>(*rc::gen::inRange(0, 256)));
      break;
  }
  return out;
}

REHEARSE_PROP(StateCodecProps, DamagedSnapshotIsNeverAnEmptyState, ()) {
  const auto states = *gen_states(1);
  StateDocument d;
  for (const auto& s : states) d.jobs[s.job_id] = s;
  const std::string bytes = encode_state(d);
  const std::string damaged = damage(bytes);
  auto back = decode_state(damaged);
  if (back.ok()) {
    // Damage that still forms a valid document (a digit changed, a byte in
    // a text field...) must not lose a job silently.
    RC_ASSERT(back->jobs.size() == d.jobs.size());
  } else {
    RC_ASSERT(back.error().code == ErrorCode::corrupt ||
              back.error().code == ErrorCode::schema_error);
    RC_ASSERT(!back.error().message.empty());
  }
}

}  // namespace
}  // namespace rehearse::codec_test
