#include "sim/monitors/witness_cron.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace rehearse::sim {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

struct FieldSpec {
  int lo;
  int hi;
  const char* const* names;  // lower-case, index = value - names_base
  int names_base;
  int names_count;
};

const char* const kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                   "jul", "aug", "sep", "oct", "nov", "dec"};
const char* const kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

std::optional<int> read_value(const std::string& text, const FieldSpec& spec) {
  if (text.empty()) return std::nullopt;
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (text.size() > 4) return std::nullopt;
    const int v = std::stoi(text);
    if (v < spec.lo || v > spec.hi) return std::nullopt;
    return v;
  }
  const std::string l = lower(text);
  for (int i = 0; i < spec.names_count; ++i) {
    if (l == spec.names[i]) return spec.names_base + i;
  }
  return std::nullopt;
}

// Parses one field into a bitmap over [0, hi]. `single` is set when the field
// is one fixed value (the literal low-frequency rule, docs/semantics.md §3).
bool parse_field(const std::string& text, const FieldSpec& spec, std::vector<bool>& bits,
                 bool& single, std::string* why) {
  bits.assign(static_cast<std::size_t>(spec.hi) + 1, false);
  single = false;
  // Characters beyond these (`#`, a year, ...) are refused here; letters that
  // are not a month or weekday name (`L`, `W`, `H`) are refused by read_value.
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '*' || c == '?' ||
                    c == ',' || c == '-' || c == '/';
    if (!ok) {
      if (why) *why = fmt::format("the monitors' cron matcher does not know '{}'", text);
      return false;
    }
  }
  const std::vector<std::string> items = split(text, ',');
  for (const std::string& item : items) {
    std::string range = item;
    int step = 1;
    if (const auto slash = item.find('/'); slash != std::string::npos) {
      range = item.substr(0, slash);
      const std::string st = item.substr(slash + 1);
      if (st.empty() || st.size() > 4 ||
          !std::all_of(st.begin(), st.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (why) *why = fmt::format("the monitors' cron matcher does not know step '{}'", item);
        return false;
      }
      step = std::stoi(st);
      if (step < 1) {
        if (why) *why = fmt::format("the monitors' cron matcher refuses step 0 in '{}'", item);
        return false;
      }
    }
    int from = spec.lo;
    int to = spec.hi;
    if (range == "*" || range == "?") {
      // whole range
    } else if (const auto dash = range.find('-'); dash != std::string::npos) {
      const auto a = read_value(range.substr(0, dash), spec);
      const auto b = read_value(range.substr(dash + 1), spec);
      if (!a || !b || *a > *b) {
        if (why) *why = fmt::format("the monitors' cron matcher does not know '{}'", item);
        return false;
      }
      from = *a;
      to = *b;
    } else {
      const auto a = read_value(range, spec);
      if (!a) {
        if (why) *why = fmt::format("the monitors' cron matcher does not know '{}'", item);
        return false;
      }
      from = *a;
      to = item.find('/') != std::string::npos ? spec.hi : *a;  // a/n: from a to the end
      if (items.size() == 1 && item.find('/') == std::string::npos) single = true;
    }
    for (int v = from; v <= to; v += step) bits[static_cast<std::size_t>(v)] = true;
  }
  return true;
}

TimeMs floor_to(TimeMs t, DurationMs unit) {
  const TimeMs r = t % unit;
  return r < 0 ? t - r - unit : t - r;
}

}  // namespace

std::optional<WitnessCron> WitnessCron::parse(std::string_view expr_in, std::string* why) {
  std::string expr(expr_in);
  const std::string l = lower(expr);
  if (l == "@yearly" || l == "@annually") expr = "0 0 1 1 *";
  if (l == "@monthly") expr = "0 0 1 * *";
  if (l == "@weekly") expr = "0 0 * * 0";
  if (l == "@daily" || l == "@midnight") expr = "0 0 * * *";
  if (l == "@hourly") expr = "0 * * * *";
  std::vector<std::string> fields;
  std::string cur;
  for (char c : expr) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) fields.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) fields.push_back(cur);
  if (fields.size() != 5 && fields.size() != 6) {
    if (why)
      *why = fmt::format("'{}' has {} fields (the matcher knows 5 or 6)", expr_in, fields.size());
    return std::nullopt;
  }
  if (fields.size() == 5) fields.insert(fields.begin(), "0");
  static const FieldSpec kSec{0, 59, nullptr, 0, 0};
  static const FieldSpec kMin{0, 59, nullptr, 0, 0};
  static const FieldSpec kHour{0, 23, nullptr, 0, 0};
  static const FieldSpec kDom{1, 31, nullptr, 0, 0};
  static const FieldSpec kMon{1, 12, kMonthNames, 1, 12};
  static const FieldSpec kDow{0, 7, kDayNames, 0, 7};
  WitnessCron c;
  bool single = false, dom_single = false, dow_single = false;
  if (!parse_field(fields[0], kSec, c.seconds_, single, why) ||
      !parse_field(fields[1], kMin, c.minutes_, single, why) ||
      !parse_field(fields[2], kHour, c.hours_, single, why) ||
      !parse_field(fields[3], kDom, c.doms_, dom_single, why) ||
      !parse_field(fields[4], kMon, c.months_, single, why) ||
      !parse_field(fields[5], kDow, c.dows_, dow_single, why)) {
    return std::nullopt;
  }
  if (c.dows_[7]) c.dows_[0] = true;
  c.dows_.resize(7);
  c.dom_restricted_ = !std::all_of(c.doms_.begin() + 1, c.doms_.end(), [](bool b) { return b; });
  c.dow_restricted_ = !std::all_of(c.dows_.begin(), c.dows_.end(), [](bool b) { return b; });
  c.low_frequency_ = dom_single || dow_single;
  return c;
}

bool WitnessCron::matches_minute(TimeMs minute_start) const {
  const CivilTime ct = to_civil(minute_start);
  if (!months_[ct.date.month] || !hours_[ct.hour] || !minutes_[ct.minute]) return false;
  const bool dom = doms_[ct.date.day];
  const bool dow = dows_[ct.weekday];
  if (dom_restricted_ && dow_restricted_) return dom || dow;
  if (dom_restricted_) return dom;
  if (dow_restricted_) return dow;
  return true;
}

std::vector<TimeMs> WitnessCron::between(TimeMs after, TimeMs until, std::size_t limit) const {
  std::vector<TimeMs> out;
  if (until <= after) return out;
  // Brute force, minute by minute, skipping whole days and hours that cannot match.
  TimeMs minute = floor_to(after, kMinuteMs);
  while (minute <= until && out.size() < limit) {
    const CivilTime ct = to_civil(minute);
    const TimeMs day_start = floor_to(minute, kDayMs);
    const bool dom = doms_[ct.date.day];
    const bool dow = dows_[ct.weekday];
    bool day_ok = months_[ct.date.month];
    if (dom_restricted_ && dow_restricted_) {
      day_ok = day_ok && (dom || dow);
    } else if (dom_restricted_) {
      day_ok = day_ok && dom;
    } else if (dow_restricted_) {
      day_ok = day_ok && dow;
    }
    if (!day_ok) {
      minute = day_start + kDayMs;
      continue;
    }
    if (!hours_[ct.hour]) {
      minute = floor_to(minute, kHourMs) + kHourMs;
      continue;
    }
    if (minutes_[ct.minute]) {
      for (std::size_t s = 0; s < seconds_.size() && out.size() < limit; ++s) {
        if (!seconds_[s]) continue;
        const TimeMs at = minute + static_cast<TimeMs>(s) * kSecondMs;
        if (at > after && at <= until) out.push_back(at);
      }
    }
    minute += kMinuteMs;
  }
  return out;
}

std::optional<TimeMs> WitnessCron::next_after(TimeMs t, DurationMs horizon_ms) const {
  auto found = between(t, t + horizon_ms, 1);
  if (found.empty()) return std::nullopt;
  return found.front();
}

}  // namespace rehearse::sim
