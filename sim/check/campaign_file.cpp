#include "sim/check/campaign_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

using nlohmann::json;
// The lines keep their keys in the documented order ("type" first).
using ordered = nlohmann::ordered_json;

ordered header_json(const CampaignHeader& h) {
  return ordered{{"type", "header"},
                 {"format", kCampaignFormat},
                 {"command", h.command},
                 {"scenarios", h.scenarios},
                 {"first_seed", h.first_seed},
                 {"seeds", h.seeds},
                 {"shard", to_string(h.shard)},
                 {"options", h.options}};
}

ordered case_json(const TimedRecord& r) {
  ordered line{{"type", "case"}};
  const json record = to_json(r.record);
  for (const auto& [key, value] : record.items()) line[key] = value;
  line["wall_ms"] = r.wall_ms;
  // No record field may take the place of the line's type.
  REHEARSE_ASSERT(line["type"] == "case");
  return line;
}

ordered summary_json(const CampaignSummary& s) {
  // Counted by count_verdicts: every case is passed, failed or erred.
  REHEARSE_ASSERT_EQ(s.counts.passed + s.counts.failed + s.counts.errors, s.counts.cases);
  return ordered{{"type", "summary"},         {"cases", s.counts.cases},
                 {"passed", s.counts.passed}, {"failed", s.counts.failed},
                 {"errors", s.counts.errors}, {"exit_code", s.exit_code},
                 {"wall_ms", s.wall_ms}};
}

}  // namespace

std::string campaign_jsonl(const CampaignHeader& header, const std::vector<TimedRecord>& records,
                           int exit_code, double wall_ms) {
  std::string out = header_json(header).dump() + "\n";
  for (const TimedRecord& r : records) out += case_json(r).dump() + "\n";
  out += summary_json({count_verdicts(records), exit_code, wall_ms}).dump() + "\n";
  // One line per record between the header and the summary (a dump has no newline).
  REHEARSE_ASSERT_EQ(static_cast<std::size_t>(std::count(out.begin(), out.end(), '\n')),
                     records.size() + 2);
  return out;
}

namespace {

// "path:line:column: message"
Error at(const std::string& path, std::size_t line, std::size_t column, std::string message) {
  // Both 1-based.
  REHEARSE_ASSERT_GE(line, 1u);
  REHEARSE_ASSERT_GE(column, 1u);
  return make_error(ErrorCode::parse_error, std::move(message),
                    fmt::format("{}:{}:{}", path, line, column));
}

std::string type_of(const json& object) {
  const auto it = object.find("type");
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The key's value when it is an unsigned integer.
std::optional<std::uint64_t> count_of(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

// What is wrong with a header object, or nothing.
std::optional<std::string> read_header(const json& j, CampaignHeader& h) {
  const auto format = count_of(j, "format");
  if (!format || *format != kCampaignFormat) {
    return fmt::format("header: expected \"format\": {} (a file of another format)",
                       kCampaignFormat);
  }
  if (!j.contains("command") || !j["command"].is_string()) {
    return "header: expected \"command\": a string";
  }
  h.command = j["command"].get<std::string>();
  if (!j.contains("scenarios") || !j["scenarios"].is_array()) {
    return "header: expected \"scenarios\": an array of paths";
  }
  for (const json& s : j["scenarios"]) {
    if (!s.is_string()) return "header: expected \"scenarios\": an array of paths";
    h.scenarios.push_back(s.get<std::string>());
  }
  const auto first = count_of(j, "first_seed");
  const auto seeds = count_of(j, "seeds");
  if (!first || !seeds) return "header: expected \"first_seed\" and \"seeds\": unsigned integers";
  h.first_seed = *first;
  h.seeds = *seeds;
  auto shard = j.contains("shard") && j["shard"].is_string()
                   ? parse_shard(j["shard"].get<std::string>())
                   : Result<Shard>(make_error(ErrorCode::parse_error, ""));
  if (!shard) return "header: expected \"shard\": \"K/N\" with 1 <= K <= N";
  h.shard = *shard;
  if (!j.contains("options") || !j["options"].is_object()) {
    return "header: expected \"options\": an object";
  }
  h.options = j["options"];
  REHEARSE_ASSERT_LE(h.shard.index, h.shard.count);  // parse_shard's K <= N
  return std::nullopt;
}

std::optional<std::string> read_case(const json& j, TimedRecord& r) {
  auto record = case_record_from_json(j);
  if (!record) return "case: " + record.error().describe();
  r.record = std::move(*record);
  const auto wall = j.find("wall_ms");
  if (wall != j.end()) {
    if (!wall->is_number() || wall->get<double>() < 0) {
      return "case: /wall_ms: expected a number of milliseconds";
    }
    r.wall_ms = wall->get<double>();
  }
  REHEARSE_ASSERT_GE(r.wall_ms, 0.0);
  return std::nullopt;
}

std::optional<std::string> read_summary(const json& j, CampaignSummary& s) {
  const auto cases = count_of(j, "cases");
  const auto passed = count_of(j, "passed");
  const auto failed = count_of(j, "failed");
  const auto errors = count_of(j, "errors");
  const auto exit_code = count_of(j, "exit_code");
  if (!cases || !passed || !failed || !errors || !exit_code || *exit_code > 255) {
    return "summary: expected \"cases\", \"passed\", \"failed\", \"errors\" (unsigned integers) "
           "and \"exit_code\" (0..255)";
  }
  s.counts = {*cases, *passed, *failed, *errors};
  s.exit_code = static_cast<int>(*exit_code);
  const auto wall = j.find("wall_ms");
  if (wall != j.end()) {
    if (!wall->is_number() || wall->get<double>() < 0) {
      return "summary: /wall_ms: expected a number of milliseconds";
    }
    s.wall_ms = wall->get<double>();
  }
  REHEARSE_ASSERT(s.exit_code >= 0 && s.exit_code <= 255);
  return std::nullopt;
}

std::string describe_counts(const CampaignCounts& c) {
  return fmt::format("{} cases ({} passed, {} failed, {} errors)", c.cases, c.passed, c.failed,
                     c.errors);
}

// Where the reader is: which line kinds may come next.
enum class Expect : unsigned char { header, case_or_summary, nothing };

// One non-empty line, by what may come at this point.
Status read_line(const json& j, std::size_t number, Expect& expect, CampaignFile& file) {
  const std::string type = type_of(j);
  std::optional<std::string> problem;
  if (expect == Expect::header) {
    if (type != "header")
      return at(file.path, number, 1,
                "expected the header line first "
                "({\"type\":\"header\",...})");
    problem = read_header(j, file.header);
    expect = Expect::case_or_summary;
  } else if (expect == Expect::nothing) {
    return at(file.path, number, 1, "expected nothing after the summary line");
  } else if (type == "case") {
    file.records.emplace_back();
    file.lines.push_back(number);
    problem = read_case(j, file.records.back());
  } else if (type == "summary") {
    problem = read_summary(j, file.summary);
    file.summary_line = number;
    expect = Expect::nothing;
  } else {
    problem = "expected a case line ({\"type\":\"case\",...}) or the summary line";
  }
  // A case line is recorded with its line number, or not at all.
  REHEARSE_ASSERT_EQ(file.lines.size(), file.records.size());
  if (problem) return at(file.path, number, 1, *problem);
  return {};
}

Error parse_failure(const std::string& path, std::size_t number, const json::parse_error& e) {
  // e.byte is 1-based within the parsed line.
  // what(): "[json.exception.parse_error.101] parse error at line 1, column 148: syntax ..."
  std::string what = e.what();
  const auto column = what.find("column ");
  const auto colon = what.find(": ", column == std::string::npos ? 0 : column);
  if (colon != std::string::npos) what = what.substr(colon + 2);
  return at(path, number, std::max<std::size_t>(1, e.byte),
            "expected one complete JSON object per line (" + what + ")");
}

}  // namespace

Result<CampaignFile> parse_campaign_jsonl(std::string_view text, const std::string& path) {
  CampaignFile file;
  file.path = path;
  Expect expect = Expect::header;
  std::size_t number = 0;
  while (!text.empty()) {
    ++number;
    const auto newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (line.empty()) return at(path, number, 1, "expected a JSON object, got an empty line");
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      return parse_failure(path, number, e);
    }
    if (!j.is_object()) return at(path, number, 1, "expected a JSON object");
    if (Status s = read_line(j, number, expect, file); !s.ok()) return s.error();
  }
  // Every case line recorded the line it came from.
  REHEARSE_ASSERT_EQ(file.lines.size(), file.records.size());
  if (expect != Expect::nothing) {
    return at(path, number + 1, 1,
              fmt::format("expected the {} line: the file ends after line {} (truncated?)",
                          expect == Expect::header ? "header" : "summary", number));
  }
  const CampaignCounts counted = count_verdicts(file.records);
  if (!(counted == file.summary.counts)) {
    return at(path, file.summary_line, 1,
              fmt::format("the summary says {} but the file holds {}",
                          describe_counts(file.summary.counts), describe_counts(counted)));
  }
  // The summary came last: after every case line, at most the last line.
  REHEARSE_ASSERT(file.lines.empty() || file.lines.back() < file.summary_line);
  REHEARSE_ASSERT_LE(file.summary_line, number);
  return file;
}

Result<CampaignFile> read_campaign_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::not_found, "cannot open the shard file", path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::io_error, "cannot read the shard file", path);
  return parse_campaign_jsonl(bytes.str(), path);
}

namespace {

// The first header field in which `b` differs from `a`, described.
std::optional<std::string> header_difference(const CampaignHeader& a, const CampaignHeader& b) {
  if (a.command != b.command) return fmt::format("command '{}', not '{}'", b.command, a.command);
  if (a.scenarios != b.scenarios) {
    return fmt::format("scenarios {}, not {}", json(b.scenarios).dump(), json(a.scenarios).dump());
  }
  if (a.whole() != b.whole()) {
    return fmt::format("seeds {}+{}, not {}+{} (first_seed+seeds)", b.first_seed, b.seeds,
                       a.first_seed, a.seeds);
  }
  if (a.shard.count != b.shard.count) {
    return fmt::format("shard {}, not of {} shards", to_string(b.shard), a.shard.count);
  }
  if (a.options != b.options) {
    return fmt::format("options {}, not {}", b.options.dump(), a.options.dump());
  }
  return std::nullopt;
}

std::string seeds_text(SeedRange r) {
  if (r.count == 0) return "no seeds";
  return fmt::format("seeds {}..{}", r.first, r.first + (r.count - 1));
}

// The files by shard index (0-based), each K exactly once.
Result<std::vector<const CampaignFile*>> files_by_shard(const std::vector<CampaignFile>& files) {
  REHEARSE_ASSERT(!files.empty());  // merge_campaign_files refused no file
  const CampaignFile& first = files.front();
  std::vector<const CampaignFile*> by_shard(first.header.shard.count, nullptr);
  for (const CampaignFile& f : files) {
    if (auto diff = header_difference(first.header, f.header)) {
      return at(f.path, 1, 1,
                fmt::format("not a shard of the same run as {}: expected the same header, got {}",
                            first.path, *diff));
    }
    // parse_shard keeps K in 1..N, and N is the first file's (checked above).
    REHEARSE_ASSERT_GE(f.header.shard.index, 1u);
    REHEARSE_ASSERT_LE(f.header.shard.index, by_shard.size());
    const CampaignFile*& slot = by_shard[f.header.shard.index - 1];
    if (slot != nullptr) {
      return at(f.path, 1, 1,
                fmt::format("shard {} again: {} is that shard already (expected each K once)",
                            to_string(f.header.shard), slot->path));
    }
    slot = &f;
  }
  for (std::size_t k = 0; k < by_shard.size(); ++k) {
    if (by_shard[k] != nullptr) continue;
    const Shard missing{static_cast<std::uint32_t>(k + 1), first.header.shard.count};
    return make_error(ErrorCode::not_found,
                      fmt::format("shard {} ({}) is missing: expected a file whose header says "
                                  "\"shard\":\"{}\" among the {} given",
                                  to_string(missing),
                                  seeds_text(shard_seeds(first.header.whole(), missing)),
                                  to_string(missing), files.size()),
                      "");
  }
  // Each K exactly once, so the files' ranges follow one another without a
  // gap or an overlap, from the run's first seed to its last.
  std::uint64_t next = first.header.first_seed;
  for (const CampaignFile* f : by_shard) {
    REHEARSE_ASSERT(f != nullptr);
    REHEARSE_ASSERT_EQ(f->header.shard_range().first, next);
    next += f->header.shard_range().count;
  }
  REHEARSE_ASSERT_EQ(next - first.header.first_seed, first.header.seeds);
  return by_shard;
}

// A case's place in the run: (scenario index, seed offset from first_seed).
using CaseKey = std::pair<std::size_t, std::uint64_t>;
struct Placed {
  const CampaignFile* file = nullptr;
  std::size_t index = 0;  // in file->records
};

std::vector<std::string> scenario_keys(const CampaignHeader& h) {
  std::vector<std::string> keys = h.scenarios.empty() ? std::vector<std::string>{""} : h.scenarios;
  REHEARSE_ASSERT(!keys.empty());  // a run has at least one scenario key
  return keys;
}

Status place_cases(const CampaignFile& f, std::map<CaseKey, Placed>& placed) {
  const std::vector<std::string> keys = scenario_keys(f.header);
  const SeedRange mine = f.header.shard_range();
  // The parser kept one line number per case (errors cite it).
  REHEARSE_ASSERT_EQ(f.lines.size(), f.records.size());
  for (std::size_t i = 0; i < f.records.size(); ++i) {
    const CaseRecord& r = f.records[i].record;
    const auto s = std::find(keys.begin(), keys.end(), r.path);
    if (s == keys.end()) {
      return at(f.path, f.lines[i], 1,
                fmt::format("case of '{}': expected one of the header's scenarios", r.path));
    }
    if (!mine.contains(r.seed)) {
      return at(f.path, f.lines[i], 1,
                fmt::format("seed {}: expected a seed of shard {} ({})", r.seed,
                            to_string(f.header.shard), seeds_text(mine)));
    }
    const CaseKey key{static_cast<std::size_t>(s - keys.begin()), r.seed - f.header.first_seed};
    // A seed of the shard is a seed of the run.
    REHEARSE_ASSERT_LT(key.second, f.header.seeds);
    const auto [it, fresh] = placed.emplace(key, Placed{&f, i});
    if (!fresh) {
      return at(f.path, f.lines[i], 1,
                fmt::format("the case of '{}' seed {} again (first at {}:{}): expected each once",
                            r.path, r.seed, it->second.file->path,
                            it->second.file->lines[it->second.index]));
    }
  }
  return {};
}

// The first case of the run (in order) that no file holds, as an error.
Status find_missing(const CampaignHeader& h, const std::map<CaseKey, Placed>& placed,
                    const std::vector<const CampaignFile*>& by_shard) {
  const std::vector<std::string> keys = scenario_keys(h);
  // place_cases placed each key once, each inside the run.
  REHEARSE_ASSERT_LE(placed.size(), keys.size() * h.seeds);
  auto it = placed.begin();
  for (std::size_t s = 0; s < keys.size(); ++s) {
    for (std::uint64_t offset = 0; offset < h.seeds; ++offset, ++it) {
      if (it != placed.end() && it->first == CaseKey{s, offset}) continue;
      const std::uint64_t seed = h.first_seed + offset;
      const CampaignFile* owner = nullptr;
      for (const CampaignFile* f : by_shard) {
        if (f->header.shard_range().contains(seed)) owner = f;
      }
      // The shards cover the run's seeds, so some shard owns every seed.
      REHEARSE_ASSERT(owner != nullptr);
      return at(owner->path, owner->summary_line, 1,
                fmt::format("the case of '{}' seed {} is missing: expected shard {} to hold {}",
                            keys[s], seed, to_string(owner->header.shard),
                            seeds_text(owner->header.shard_range())));
    }
  }
  return {};
}

}  // namespace

Result<MergedCampaign> merge_campaign_files(const std::vector<CampaignFile>& files) {
  if (files.empty()) {
    return make_error(ErrorCode::invalid_argument, "expected at least one shard file");
  }
  auto by_shard = files_by_shard(files);
  if (!by_shard) return by_shard.error();
  std::map<CaseKey, Placed> placed;
  for (const CampaignFile* f : *by_shard) {
    if (Status s = place_cases(*f, placed); !s.ok()) return s.error();
  }
  if (Status s = find_missing(files.front().header, placed, *by_shard); !s.ok()) return s.error();
  MergedCampaign merged;
  merged.header = files.front().header;
  merged.header.shard = Shard{};
  // Nothing missing (find_missing) and nothing twice (place_cases): one case
  // per scenario and seed of the run.
  REHEARSE_ASSERT_EQ(placed.size(), scenario_keys(merged.header).size() * merged.header.seeds);
  for (const auto& [key, where] : placed) {
    REHEARSE_ASSERT_LT(where.index, where.file->records.size());
    merged.records.push_back(where.file->records[where.index]);
  }
  REHEARSE_ASSERT_EQ(merged.records.size(), placed.size());
  for (const CampaignFile& f : files) {
    merged.exit_code = std::max(merged.exit_code, f.summary.exit_code);
    merged.wall_ms += f.summary.wall_ms;
  }
  return merged;
}

}  // namespace rehearse::sim
