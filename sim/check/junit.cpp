#include "sim/check/junit.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <map>
#include <set>
#include <utility>

#include "model/assert.hpp"

namespace rehearse::sim {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the UTF-8 sequence at the start of `s` when it encodes a
// character XML 1.0 allows (no surrogates, no U+FFFE / U+FFFF); 0 otherwise.
std::size_t valid_utf8_length(std::string_view s) {
  REHEARSE_ASSERT(!s.empty());  // xml_escape asks only while text is left
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  char32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0Fu;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07u;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i) & 0x3Fu);
  }
  const char32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[length] || cp > 0x10FFFF) return 0;  // overlong or too large
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
  return length;
}

// One ASCII byte as XML text; empty when it is copied as it is.
std::string_view ascii_escape(char c) {
  REHEARSE_ASSERT_LT(static_cast<unsigned char>(c), 0x80u);  // bytes above go to valid_utf8_length
  switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&apos;";
    case '\t': return "&#9;";
    case '\n': return "&#10;";
    case '\r': return "&#13;";
    default: break;
  }
  return static_cast<unsigned char>(c) < 0x20 ? kReplacement : std::string_view();
}

}  // namespace

std::string xml_escape(std::string_view text) {
  const std::size_t input_size = text.size();
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    if (c < 0x80) {
      const std::string_view escaped = ascii_escape(text.front());
      if (escaped.empty()) out += text.front();
      out += escaped;
      text.remove_prefix(1);
      continue;
    }
    const std::size_t length = valid_utf8_length(text);
    out += length == 0 ? kReplacement : text.substr(0, length);
    text.remove_prefix(length == 0 ? 1 : length);
  }
  // No byte is dropped, and no markup character is left unescaped.
  REHEARSE_ASSERT_GE(out.size(), input_size);
  REHEARSE_ASSERT_EQ(out.find_first_of("<>\"'"), std::string::npos);
  return out;
}

namespace {

// One <testcase>: the records of one scenario's block of seeds.
struct Group {
  std::string classname;
  std::uint64_t low = 0, high = 0;  // the seeds present
  std::vector<const TimedRecord*> records;
  double seconds = 0;
  std::size_t failed = 0, errors = 0;
};

// One <testsuite>: a scenario's groups in seed order.
struct Suite {
  std::string name;
  std::map<std::uint64_t, Group> groups;  // by block number
  double seconds = 0;
  std::size_t failures = 0, errors = 0;
};

std::vector<Suite> group_records(const CampaignHeader& header,
                                 const std::vector<TimedRecord>& records) {
  std::vector<Suite> suites;
  std::map<std::string, std::size_t> suite_of;  // name -> index, in order of appearance
  for (const TimedRecord& r : records) {
    const std::string name = r.record.path.empty() ? r.record.scenario : r.record.path;
    const auto [it, fresh] = suite_of.emplace(name, suites.size());
    if (fresh) suites.push_back(Suite{name, {}, 0, 0, 0});
    Suite& suite = suites[it->second];
    // The run's cases use the run's seeds (the block count starts at first_seed).
    REHEARSE_ASSERT_GE(r.record.seed, header.first_seed);
    const std::uint64_t block = (r.record.seed - header.first_seed) / kJunitSeedGroup;
    const auto [g, new_group] = suite.groups.try_emplace(block);
    Group& group = g->second;
    if (new_group) group = Group{r.record.scenario, r.record.seed, r.record.seed, {}, 0, 0, 0};
    group.low = std::min(group.low, r.record.seed);
    group.high = std::max(group.high, r.record.seed);
    group.records.push_back(&r);
    group.seconds += r.wall_ms / 1000.0;
    suite.seconds += r.wall_ms / 1000.0;
    if (r.record.verdict == CaseVerdict::fail) ++group.failed;
    if (r.record.verdict == CaseVerdict::error) ++group.errors;
  }
  for (Suite& suite : suites) {
    for (const auto& [block, group] : suite.groups) {
      if (group.failed > 0)
        ++suite.failures;
      else if (group.errors > 0)
        ++suite.errors;
    }
  }
  // Every record is in exactly one group; a group counts once at most.
  std::size_t grouped = 0;
  for (const Suite& suite : suites) {
    for (const auto& [block, group] : suite.groups) grouped += group.records.size();
    REHEARSE_ASSERT_LE(suite.failures + suite.errors, suite.groups.size());
  }
  REHEARSE_ASSERT_EQ(grouped, records.size());
  return suites;
}

// The failing and erring seeds of a group, one paragraph each.
std::string failure_text(const Group& group) {
  REHEARSE_ASSERT_GT(group.failed + group.errors, 0u);  // render_group skips passing groups
  std::string text;
  for (const TimedRecord* t : group.records) {
    const CaseRecord& r = t->record;
    if (r.verdict == CaseVerdict::pass) continue;
    text += fmt::format("seed {}: {}", r.seed, to_string(r.verdict));
    if (!r.violations.empty()) text += ": " + fmt::format("{}", fmt::join(r.violations, ", "));
    text += "\n";
    if (!r.message.empty()) text += "  " + r.message + "\n";
    if (!r.replay.empty()) text += "  replay: " + r.replay + "\n";
    if (!r.shrunk.empty()) text += "  shrunk: " + r.shrunk + "\n";
  }
  return text;
}

// The first failing (else erring) record's summary for the element's attributes.
std::pair<std::string, std::string> failure_head(const Group& group) {
  const bool failed = group.failed > 0;
  const std::size_t count = failed ? group.failed : group.errors;
  // render_group skips passing groups; the counts came from these records.
  REHEARSE_ASSERT_GT(count, 0u);
  REHEARSE_ASSERT_LE(count, group.records.size());
  for (const TimedRecord* t : group.records) {
    const CaseRecord& r = t->record;
    if (r.verdict != (failed ? CaseVerdict::fail : CaseVerdict::error)) continue;
    const std::string type =
        r.violations.empty() ? std::string(to_string(r.verdict)) : r.violations.front();
    return {fmt::format("{} of {} seeds {} (first: seed {}: {})", count, group.records.size(),
                        failed ? "failed" : "could not run", r.seed,
                        r.message.empty() ? type : r.message),
            type};
  }
  return {"", ""};
}

void render_group(std::string& out, const Group& group) {
  // group_records made the group for a record and widened it with each one.
  REHEARSE_ASSERT(!group.records.empty());
  REHEARSE_ASSERT_LE(group.low, group.high);
  out += fmt::format("    <testcase classname=\"{}\" name=\"seeds {}..{}\" time=\"{:.3f}\"",
                     xml_escape(group.classname), group.low, group.high, group.seconds);
  if (group.failed == 0 && group.errors == 0) {
    out += "/>\n";
    return;
  }
  const char* element = group.failed > 0 ? "failure" : "error";
  const auto [message, type] = failure_head(group);
  out +=
      fmt::format(">\n      <{} message=\"{}\" type=\"{}\">{}</{}>\n    </testcase>\n", element,
                  xml_escape(message), xml_escape(type), xml_escape(failure_text(group)), element);
}

void render_properties(std::string& out, const CampaignHeader& header) {
  out += "    <properties>\n";
  const std::pair<std::string, std::string> properties[] = {{"first_seed",
                                                             std::to_string(header.first_seed)},
                                                            {"seeds", std::to_string(header.seeds)},
                                                            {"shard", to_string(header.shard)},
                                                            {"options", header.options.dump()}};
  for (const auto& [name, value] : properties) {
    out += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", name, xml_escape(value));
  }
  out += "    </properties>\n";
}

}  // namespace

std::string render_junit(const CampaignHeader& header, const std::vector<TimedRecord>& records) {
  const std::vector<Suite> suites = group_records(header, records);
  std::size_t tests = 0, failures = 0, errors = 0;
  double seconds = 0;
  for (const Suite& s : suites) {
    tests += s.groups.size();
    failures += s.failures;
    errors += s.errors;
    seconds += s.seconds;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"rehearse {}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" "
      "time=\"{:.3f}\">\n",
      xml_escape(header.command), tests, failures, errors, seconds);
  for (const Suite& s : suites) {
    out += fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"0\" "
        "time=\"{:.3f}\">\n",
        xml_escape(s.name), s.groups.size(), s.failures, s.errors, s.seconds);
    render_properties(out, header);
    for (const auto& [block, group] : s.groups) render_group(out, group);
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  // A test is a group, and a failing or erring one counts once.
  REHEARSE_ASSERT_LE(failures + errors, tests);
  return out;
}

}  // namespace rehearse::sim
