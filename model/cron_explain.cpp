// Cron schedules in words and in kind: field names, each field and the day
// rule described for people, and the low-frequency test (docs/cron.md's
// literal rule) with the warnings where it disagrees with the real gaps
// between firings.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "model/cron.hpp"
#include "model/cron_detail.hpp"

namespace rehearse {

using cron_detail::FieldSpec;
using cron_detail::kDom;
using cron_detail::kDow;
using cron_detail::kMonthNames;
using cron_detail::kSpecs;
using cron_detail::kWeekdayNames;

const char* to_string(CronFieldKind kind) noexcept {
  switch (kind) {
    case CronFieldKind::second: return "second";
    case CronFieldKind::minute: return "minute";
    case CronFieldKind::hour: return "hour";
    case CronFieldKind::day_of_month: return "day-of-month";
    case CronFieldKind::month: return "month";
    case CronFieldKind::day_of_week: return "day-of-week";
  }
  return "unknown";
}

namespace {

// "1-5,10,12" from a bit mask.
std::string compress(std::uint64_t bits, int min, int max, const char* const* names = nullptr) {
  std::string out;
  int v = min;
  while (v <= max) {
    if (((bits >> v) & 1U) == 0) {
      ++v;
      continue;
    }
    int end = v;
    while (end + 1 <= max && ((bits >> (end + 1)) & 1U) != 0) ++end;
    if (!out.empty()) out += ',';
    auto name = [&](int x) { return names != nullptr ? std::string(names[x]) : std::to_string(x); };
    out += name(v);
    if (end == v + 1) {
      out += ',' + name(end);
    } else if (end > v) {
      out += '-' + name(end);
    }
    v = end + 1;
  }
  return out;
}

const char* ordinal(unsigned n) {
  switch (n) {
    case 1: return "1st";
    case 2: return "2nd";
    case 3: return "3rd";
    case 4: return "4th";
    case 5: return "5th";
    default: return "n-th";
  }
}

// The literal rule's "one fixed value": a single number, name, `L`, `dL` or
// `d#n`; not `*`, `?`, a range, a list or a step.
bool is_one_fixed_value(const std::string& text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == ',' || c == '-' || c == '/') return false;
  }
  return true;
}

}  // namespace

bool CronSchedule::is_low_frequency() const {
  if (fields_.size() != 6) return false;
  return is_one_fixed_value(fields_[kDom].text) || is_one_fixed_value(fields_[kDow].text);
}

std::vector<std::string> CronSchedule::low_frequency_warnings() const {
  std::vector<std::string> warnings;
  if (fields_.size() != 6) return warnings;
  // "Really low-frequency" here: consecutive firings are always at least a
  // week apart. The literal rule is meant to single out schedules whose next
  // run is far away, and its own example (`0 17 * * 5`) runs weekly. Whether
  // some gap is shorter is decided over one whole 400-year Gregorian cycle
  // (from 2000-01-01); once a shorter gap is seen the scan only goes on for a
  // year or 2000 firings, so the gap reported is the shortest seen there.
  constexpr DurationMs kWeekMs = 7 * kDayMs;
  constexpr TimeMs kCycleStartMs = 946684800000;                     // 2000-01-01T00:00:00Z
  constexpr TimeMs kCycleEndMs = kCycleStartMs + 146097LL * kDayMs;  // 2400-01-01T00:00:00Z
  constexpr int kFiringsAfterShortGapMax = 2000;
  const bool literal = is_low_frequency();
  DurationMs shortest_ms = std::numeric_limits<DurationMs>::max();
  auto previous = next_after(kCycleStartMs - kSecondMs);
  int firings = 0;
  while (previous && *previous < kCycleEndMs) {
    auto next = next_after(*previous);
    if (!next) break;
    shortest_ms = std::min(shortest_ms, *next - *previous);
    ++firings;
    const bool short_gap_seen = shortest_ms < kWeekMs;
    if (short_gap_seen &&
        (firings >= kFiringsAfterShortGapMax || *next - kCycleStartMs >= 366 * kDayMs)) {
      break;
    }
    previous = next;
  }
  if (shortest_ms == std::numeric_limits<DurationMs>::max()) return warnings;
  const bool both_restricted = !fields_[kDom].unrestricted && !fields_[kDow].unrestricted;
  if (literal && shortest_ms < kWeekMs) {
    std::string why =
        "counts as low-frequency by the literal rule (a day field is one fixed "
        "value), yet consecutive firings can be only " +
        format_duration(shortest_ms) + " apart";
    if (both_restricted) {
      why += "; both day fields are restricted, so a day matches when EITHER matches";
    }
    warnings.push_back(why);
  } else if (!literal && shortest_ms >= kWeekMs) {
    warnings.push_back(
        "does not count as low-frequency by the literal rule (no day field is "
        "one fixed value), yet consecutive firings are at least " +
        format_duration(shortest_ms) + " apart");
  }
  return warnings;
}

std::string CronSchedule::describe_day_rule() const {
  if (fields_.size() != 6) return "never (not parsed)";
  const CronField& dom = fields_[kDom];
  const CronField& dow = fields_[kDow];
  std::string rule;
  if (dow.unrestricted) {
    rule = dom.unrestricted ? "any day" : "day-of-month only (day-of-week is unrestricted)";
  } else if (dom.unrestricted) {
    rule = "day-of-week only (day-of-month is unrestricted)";
  } else if (dom.entry_count >= 29) {
    rule = "day-of-week only in months of up to " + std::to_string(dom.entry_count) +
           " days, day-of-month OR day-of-week in longer months (cron-parser counts "
           "day-of-month entries)";
  } else {
    rule = "day-of-month OR day-of-week (both are restricted)";
  }
  if (dow.nth_occurrence != 0) {
    rule += ", and only days " + std::to_string(dow.nth_occurrence * 7 - 6) + "-" +
            std::to_string(dow.nth_occurrence * 7) + " of the month (#" +
            std::to_string(dow.nth_occurrence) + ")";
  }
  return rule;
}

std::string describe_field(const CronField& field) {
  const auto index = static_cast<std::size_t>(field.kind);
  const FieldSpec& spec = kSpecs[index];
  switch (field.kind) {
    case CronFieldKind::second:
    case CronFieldKind::minute:
    case CronFieldKind::hour:
      if (field.unrestricted) return std::string("every ") + to_string(field.kind);
      return compress(field.values, spec.min, spec.max);
    case CronFieldKind::month:
      if (field.unrestricted) return "every month";
      return compress(field.values, 1, 12, kMonthNames.data()) + " (" +
             compress(field.values, 1, 12) + ")";
    case CronFieldKind::day_of_month: {
      if (field.unrestricted) return "any day (unrestricted)";
      std::vector<std::string> parts;
      if (field.values != 0) parts.push_back("days " + compress(field.values, 1, 31));
      if (field.last_day_of_month) parts.emplace_back("the last day of the month");
      std::string out;
      for (const auto& p : parts) out += (out.empty() ? "" : " and ") + p;
      if (out.empty()) out = "no day";
      if (field.entry_count >= 29) {
        out += " (" + std::to_string(field.entry_count) +
               " entries: unrestricted in months of up to that many days)";
      }
      return out;
    }
    case CronFieldKind::day_of_week: {
      if (field.unrestricted) return "any day (unrestricted)";
      std::vector<std::string> parts;
      if (field.values != 0) {
        std::string days = compress(field.values, 0, 6, kWeekdayNames.data());
        if (field.nth_occurrence != 0) {
          days = "the " + std::string(ordinal(field.nth_occurrence)) + " " + days + " of the month";
        } else {
          days += " (" + compress(field.values, 0, 6) + ")";
        }
        parts.push_back(days);
      }
      for (unsigned d = 0; d < 7; ++d) {
        if (((field.last_weekday_mask >> d) & 1U) != 0) {
          parts.push_back(std::string("the last ") + kWeekdayNames[d] + " of the month");
        }
      }
      std::string out;
      for (const auto& p : parts) out += (out.empty() ? "" : " and ") + p;
      if (out.empty()) out = "no day";
      if ((field.values & 0x7f) == 0x7f && !field.unrestricted) {
        out +=
            " (restricted: cron-parser treats only an 8-entry list such as * or 0-7 as "
            "unrestricted)";
      }
      return out;
    }
  }
  return field.text;
}

}  // namespace rehearse
