#include "sim/monitors/witness_cron.hpp"

#include "sim/monitors/cron_grammar.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>

#include <date/tz.h>

#include "model/assert.hpp"

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
  // One piece more than there are separators.
  REHEARSE_ASSERT_EQ(out.size(), std::count(s.begin(), s.end(), sep) + 1);
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
    if (l != spec.names[i]) continue;
    // A name's value lies in its field's range (the bitmaps are indexed by it).
    REHEARSE_ASSERT_GE(spec.names_base + i, spec.lo);
    REHEARSE_ASSERT_LE(spec.names_base + i, spec.hi);
    return spec.names_base + i;
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
    // read_value keeps values in range: every bit set is inside the bitmap.
    REHEARSE_ASSERT_GE(from, spec.lo);
    REHEARSE_ASSERT_LE(to, spec.hi);
    for (int v = from; v <= to; v += step) bits[static_cast<std::size_t>(v)] = true;
  }
  REHEARSE_ASSERT_EQ(bits.size(), static_cast<std::size_t>(spec.hi) + 1);
  return true;
}

// Every item kept, empty ones too: `L,,5` must stay a list with an empty
// element (which parse_field refuses), not become `L,5`.
std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : ",") + items[i];
  REHEARSE_ASSERT_GE(out.size() + 1, items.size());  // one comma between each two
  return out;
}

// A day field's plain items (`rest`) after its `L` / `dL` items were taken
// out: `items` is how many the field had, so that one left beside an `L` is
// no single fixed value.
bool parse_rest(const std::vector<std::string>& rest, std::size_t items, const FieldSpec& spec,
                std::vector<bool>& bits, bool& single, std::string* why) {
  if (rest.empty()) {
    bits.assign(static_cast<std::size_t>(spec.hi) + 1, false);
    single = items == 1;
    return true;
  }
  // `rest` is what is left of the field's `items`.
  REHEARSE_ASSERT_LE(rest.size(), items);
  if (!parse_field(join(rest), spec, bits, single, why)) return false;
  single = single && rest.size() == items;
  return true;
}

// Day-of-month: a plain `L` item is the last day of the month (docs/cron.md).
// cron-parser also reads any token holding an `L` (`5L`, `LL`, `L/2`) as `L`,
// and with a single month keeps only a plain one: those readings are left to
// parse_field, which refuses them.
bool parse_dom(const std::string& text, const FieldSpec& spec, std::vector<bool>& bits, bool& last,
               bool& single, std::string* why) {
  const std::vector<std::string> items = split(text, ',');
  std::vector<std::string> rest;
  for (const std::string& item : items) {
    if (item == "L") {
      last = true;
    } else {
      rest.push_back(item);
    }
  }
  // Only the plain `L` items were taken out.
  REHEARSE_ASSERT_EQ(items.size() - rest.size(), std::count(items.begin(), items.end(), "L"));
  return parse_rest(rest, items.size(), spec, bits, single, why);
}

// Day-of-week `d#n`: the n-th weekday d of the month, n = 1..5; the whole
// field (docs/cron.md: one per expression, not in a list, range or step).
// cron-parser reads the occurrence with Number() (`5#1e0`): only a plain
// digit is read here.
bool parse_nth(const std::string& text, const FieldSpec& spec, std::vector<bool>& bits, int& nth,
               bool& single, std::string* why) {
  const auto hash = text.find('#');
  // parse_dow hands over only a field holding a `#`.
  REHEARSE_ASSERT_NE(hash, std::string::npos);
  const std::string n = text.substr(hash + 1);
  const auto day = read_value(text.substr(0, hash), spec);
  if (!day || n.size() != 1 || n[0] < '1' || n[0] > '5') {
    if (why) *why = fmt::format("the monitors' cron matcher does not know '{}'", text);
    return false;
  }
  bits.assign(static_cast<std::size_t>(spec.hi) + 1, false);
  bits[static_cast<std::size_t>(*day)] = true;
  nth = n[0] - '0';
  single = true;
  return true;
}

// Day-of-week: `d#n`, or items where `dL` (d a weekday number 0-7 or name)
// is the last weekday d of the month. cron-parser reads only the first
// character of `dL`, modulo 7 (`9L`, `55L`): a d that is no weekday is
// refused. So is a `dL` beside items covering every weekday, whose reading
// depends on cron-parser's count of list entries.
bool parse_dow(const std::string& text, const FieldSpec& spec, std::vector<bool>& bits,
               std::vector<bool>& last, int& nth, bool& single, std::string* why) {
  if (text.find('#') != std::string::npos) return parse_nth(text, spec, bits, nth, single, why);
  const std::vector<std::string> items = split(text, ',');
  std::vector<std::string> rest;
  bool any_last = false;
  // One flag per weekday 0..6 (WitnessCron::last_dows_), indexed by day % 7.
  REHEARSE_ASSERT_EQ(last.size(), 7u);
  for (const std::string& item : items) {
    if (item.size() < 2 || item.back() != 'L') {
      rest.push_back(item);
      continue;
    }
    const auto day = read_value(item.substr(0, item.size() - 1), spec);
    if (!day) {
      if (why) *why = fmt::format("the monitors' cron matcher does not know '{}'", item);
      return false;
    }
    last[static_cast<std::size_t>(*day % 7)] = true;
    any_last = true;
  }
  if (!parse_rest(rest, items.size(), spec, bits, single, why)) return false;
  // The weekday bitmap covers 0..7 (7 is Sunday again): bits[7] is read below.
  REHEARSE_ASSERT_EQ(bits.size(), 8u);
  const bool every_day =
      std::all_of(bits.begin(), bits.begin() + 7, [](bool b) { return b; }) ||
      (bits[7] && std::all_of(bits.begin() + 1, bits.begin() + 7, [](bool b) { return b; }));
  if (any_last && every_day) {
    if (why) *why = fmt::format("the monitors' cron matcher does not read '{}'", text);
    return false;
  }
  return true;
}

TimeMs floor_to(TimeMs t, DurationMs unit) {
  REHEARSE_ASSERT_GT(unit, 0);
  const TimeMs r = t % unit;
  const TimeMs out = r < 0 ? t - r - unit : t - r;
  // The start of the unit holding t, negative instants included.
  REHEARSE_ASSERT_LE(out, t);
  REHEARSE_ASSERT_LT(t - out, unit);
  return out;
}

// The macros, spelled exactly: cron-parser looks them up as written (lower
// case, no surrounding spaces: docs/cron.md), so `@DAILY` is no macro.
std::string expand_macro(std::string_view expr) {
  if (expr == "@yearly" || expr == "@annually") return "0 0 1 1 *";
  if (expr == "@monthly") return "0 0 1 * *";
  if (expr == "@weekly") return "0 0 * * 0";
  if (expr == "@daily" || expr == "@midnight") return "0 0 * * *";
  if (expr == "@hourly") return "0 * * * *";
  return std::string(expr);
}

std::vector<std::string> split_fields(const std::string& expr) {
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
  return fields;
}

const FieldSpec kSpecs[6] = {{0, 59, nullptr, 0, 0},      {0, 59, nullptr, 0, 0},
                             {0, 23, nullptr, 0, 0},      {1, 31, nullptr, 0, 0},
                             {1, 12, kMonthNames, 1, 12}, {0, 7, kDayNames, 0, 7}};
const char* const kFieldNames[6] = {"second",       "minute", "hour",
                                    "day-of-month", "month",  "day-of-week"};

// What the documented grammar refuses in the fields as written, before the
// matcher reads them (cron_grammar.hpp).
std::optional<std::string> field_refusal(std::string_view expr,
                                         const std::vector<std::string>& fields) {
  if (auto bad = cron_shape_refusal(expr, fields.size())) return bad;
  if (!cron_is_ascii(expr) || (fields.size() != 5 && fields.size() != 6)) return std::nullopt;
  const std::size_t skip = fields.size() == 5 ? 1 : 0;  // five fields: no second field
  for (std::size_t i = 0; i < fields.size(); ++i) {
    // Five or six fields, right-aligned on the six specs.
    REHEARSE_ASSERT_LT(i + skip, std::size(kSpecs));
    const FieldSpec& spec = kSpecs[i + skip];
    if (auto bad = cron_value_refusal(fields[i], kFieldNames[i + skip], spec.lo, spec.hi)) {
      return bad;
    }
  }
  return std::nullopt;
}

struct ZonePrefix {
  std::optional<std::string> zone;  // the name after CRON_TZ= or TZ=
  std::string_view fields;          // the expression after the prefix and its blank
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// `CRON_TZ=Europe/Berlin 30 2 * * *` (or `TZ=`): the name runs to the first
// blank, and the prefix (docs/semantics.md §3) ends with that one blank, so
// what follows is read as an expression of its own (`@daily` included).
ZonePrefix read_zone_prefix(std::string_view expr) {
  std::string_view text = expr;
  while (!text.empty() && is_blank(text.front())) text.remove_prefix(1);
  for (const std::string_view key : {std::string_view("CRON_TZ="), std::string_view("TZ=")}) {
    if (text.substr(0, key.size()) != key) continue;
    text.remove_prefix(key.size());
    std::size_t end = 0;
    while (end < text.size() && !is_blank(text[end])) ++end;
    const std::string_view rest = end < text.size() ? text.substr(end + 1) : std::string_view();
    // The name and the rest are disjoint pieces of the expression.
    REHEARSE_ASSERT_LE(end + rest.size(), text.size());
    return {std::string(text.substr(0, end)), rest};
  }
  return {std::nullopt, expr};
}

// The database's zone, or null when it has none of that name (a
// misspelling, a POSIX TZ string, an empty name) or cannot be read at all.
const date::time_zone* locate(const std::string& name) {
  if (name.empty()) return nullptr;
  try {
    return date::locate_zone(name);
  } catch (const std::exception&) {
    return nullptr;
  }
}

// A transition instant of the database in ms, clamped to the supported range
// (its first and last spans reach far beyond it either way).
TimeMs instant_of(date::sys_seconds at) {
  const std::int64_t s = at.time_since_epoch().count();
  const std::int64_t lo = kMinInstantMs / kSecondMs;
  const std::int64_t hi = kMaxInstantMs / kSecondMs + 1;
  const TimeMs out = std::clamp(s, lo, hi) * kSecondMs;
  REHEARSE_ASSERT_GE(out, kMinInstantMs);
  REHEARSE_ASSERT_LE(out, kMaxInstantMs + 1);
  return out;
}

DurationMs offset_ms(std::chrono::seconds offset) { return offset.count() * kSecondMs; }

}  // namespace

std::optional<WitnessCron> WitnessCron::parse(std::string_view expr, std::string* why,
                                              Refusal* refusal) {
  return parse(expr, why, refusal, std::nullopt);
}

std::optional<WitnessCron> WitnessCron::parse(std::string_view expr, std::string* why,
                                              Refusal* refusal,
                                              const std::optional<std::string>& zone) {
  if (refusal) *refusal = Refusal::unknown_syntax;
  const ZonePrefix prefix = read_zone_prefix(expr);
  const auto refuse = [&](std::string reason) -> std::optional<WitnessCron> {
    if (why) *why = std::move(reason);
    if (refusal) *refusal = Refusal::invalid;
    return std::nullopt;
  };
  if (prefix.zone && zone && *prefix.zone != *zone) {
    return refuse(
        fmt::format("not a valid schedule: the expression names the zone '{}' but the "
                    "job's zone is '{}'",
                    *prefix.zone, *zone));
  }
  const std::optional<std::string>& name = prefix.zone ? prefix.zone : zone;
  const date::time_zone* located = nullptr;
  if (name) {
    // Checked before the fields: a zone the database lacks is a certain
    // config error, whatever the fields hold.
    located = locate(*name);
    if (located == nullptr) {
      return refuse(
          fmt::format("not a valid schedule: unknown time zone '{}' (the tz database "
                      "has no such zone)",
                      *name));
    }
  }
  auto c = parse_fields(prefix.zone ? prefix.fields : expr, why, refusal);
  if (!c || located == nullptr) return c;
  c->zone_ = located;
  c->zone_name_ = *name;
  return c;
}

std::optional<WitnessCron> WitnessCron::parse_fields(std::string_view expr_in, std::string* why,
                                                     Refusal* refusal) {
  const auto invalid = [&](const std::string& reason) -> std::optional<WitnessCron> {
    // The grammar's refusals say why.
    REHEARSE_ASSERT(!reason.empty());
    if (why) *why = fmt::format("not a valid cron: {}", reason);
    if (refusal) *refusal = Refusal::invalid;
    return std::nullopt;
  };
  std::vector<std::string> fields = split_fields(expand_macro(expr_in));
  if (auto bad = field_refusal(expr_in, fields)) return invalid(*bad);
  if (fields.size() != 5 && fields.size() != 6) {
    if (why)
      *why = fmt::format("'{}' has {} fields (the matcher knows 5 or 6)", expr_in, fields.size());
    return std::nullopt;
  }
  if (fields.size() == 5) fields.insert(fields.begin(), "0");
  WitnessCron c;
  bool single = false, dom_single = false, month_single = false, dow_single = false;
  if (!parse_field(fields[0], kSpecs[0], c.seconds_, single, why) ||
      !parse_field(fields[1], kSpecs[1], c.minutes_, single, why) ||
      !parse_field(fields[2], kSpecs[2], c.hours_, single, why) ||
      !parse_dom(fields[3], kSpecs[3], c.doms_, c.last_dom_, dom_single, why) ||
      !parse_field(fields[4], kSpecs[4], c.months_, month_single, why) ||
      !parse_dow(fields[5], kSpecs[5], c.dows_, c.last_dows_, c.nth_, dow_single, why)) {
    return std::nullopt;
  }
  // Each bitmap is indexed by its field's values (matches_minute/matches_day).
  REHEARSE_ASSERT_EQ(c.seconds_.size(), 60u);
  REHEARSE_ASSERT_EQ(c.minutes_.size(), 60u);
  REHEARSE_ASSERT_EQ(c.hours_.size(), 24u);
  REHEARSE_ASSERT_EQ(c.doms_.size(), 32u);
  REHEARSE_ASSERT_EQ(c.months_.size(), 13u);
  const bool dow_any = fields[5] == "*" || fields[5] == "?";
  if (auto bad = cron_day_refusal(c.doms_, c.last_dom_, c.months_, month_single, dow_any)) {
    return invalid(*bad);
  }
  if (c.dows_[7]) c.dows_[0] = true;
  c.dows_.resize(7);
  c.dom_restricted_ = !std::all_of(c.doms_.begin() + 1, c.doms_.end(), [](bool b) { return b; });
  c.dow_restricted_ = !std::all_of(c.dows_.begin(), c.dows_.end(), [](bool b) { return b; });
  c.low_frequency_ = dom_single || dow_single;
  c.hour_star_ = std::all_of(c.hours_.begin(), c.hours_.end(), [](bool b) { return b; });
  return c;
}

bool WitnessCron::matches_minute(TimeMs minute_start) const {
  const CivilTime ct = to_civil(minute_start);
  // A parsed matcher: its bitmaps cover every hour and minute.
  REHEARSE_ASSERT_LT(ct.hour, hours_.size());
  REHEARSE_ASSERT_LT(ct.minute, minutes_.size());
  return hours_[ct.hour] && minutes_[ct.minute] && matches_day(ct);
}

// The day rule (docs/semantics.md §3): only a restricted field counts, both
// restricted: either; then a `#n` limits every matching day, whichever field
// matched it, to the n-th week of the month (days 7n-6 .. 7n: docs/cron.md).
bool WitnessCron::matches_day(const CivilTime& ct) const {
  REHEARSE_ASSERT_LT(ct.date.month, months_.size());
  if (!months_[ct.date.month]) return false;
  const unsigned day = ct.date.day;
  const unsigned length = days_in_month(ct.date.year, ct.date.month);
  // A civil date's day and weekday index the parsed bitmaps.
  REHEARSE_ASSERT_LT(day, doms_.size());
  REHEARSE_ASSERT_LT(ct.weekday, dows_.size());
  const bool dom = doms_[day] || (last_dom_ && day == length);
  const bool dow = dows_[ct.weekday] || (last_dows_[ct.weekday] && day + 7 > length);
  bool ok = true;
  if (dom_restricted_ && dow_restricted_) {
    ok = dom || dow;
  } else if (dom_restricted_) {
    ok = dom;
  } else if (dow_restricted_) {
    ok = dow;
  }
  return ok && (nth_ == 0 || static_cast<int>((day + 6) / 7) == nth_);
}

std::vector<TimeMs> WitnessCron::wall_matches(TimeMs after, TimeMs until, std::size_t limit) const {
  std::vector<TimeMs> out;
  if (until <= after) return out;
  // Brute force, minute by minute, skipping whole days and hours that cannot match.
  TimeMs minute = floor_to(after, kMinuteMs);
  while (minute <= until && out.size() < limit) {
    const CivilTime ct = to_civil(minute);
    const TimeMs day_start = floor_to(minute, kDayMs);
    if (!matches_day(ct)) {
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
        // The scan only moves forward: instants come out strictly in order.
        if (!out.empty()) REHEARSE_ASSERT_LT(out.back(), at);
        if (at > after && at <= until) out.push_back(at);
      }
    }
    minute += kMinuteMs;
  }
  return out;
}

std::vector<TimeMs> WitnessCron::between(TimeMs after, TimeMs until, std::size_t limit) const {
  // UTC: the wall reading is the instant.
  if (zone_ == nullptr) return wall_matches(after, until, limit);
  std::vector<TimeMs> out;
  // Forward through the spans of one offset, each judged on its own.
  for (TimeMs from = after; from < until && out.size() < limit;) {
    const Span span = span_at(from + 1);
    const TimeMs to = std::min(until, span.end - 1);
    collect_in_span(span, from, to, limit, out);
    if (to >= until || span.end > kMaxInstantMs) break;
    // The next span starts after this one: the walk moves forward.
    REHEARSE_ASSERT_GT(to, from);
    from = to;
  }
  return out;
}

WitnessCron::Span WitnessCron::span_at(TimeMs t) const {
  REHEARSE_ASSERT(zone_ != nullptr);
  const TimeMs whole = t < 0 ? 0 : t / kSecondMs;
  const date::sys_info info = zone_->get_info(date::sys_seconds{std::chrono::seconds{whole}});
  Span span;
  span.begin = instant_of(info.begin);
  span.end = instant_of(info.end);
  span.offset = offset_ms(info.offset);
  span.offset_before = span.begin > kMinInstantMs
                           ? offset_ms(zone_->get_info(info.begin - std::chrono::seconds{1}).offset)
                           : span.offset;
  return span;
}

// The firing instants in (after, until], all inside `span`: each instant u
// fires when its wall reading u + offset matches, except in a fold's second
// pass (readings already read before the span began) unless the hour field is
// `*`; a gap at the span's start adds its stand-in (gap_stand_in).
void WitnessCron::collect_in_span(const Span& span, TimeMs after, TimeMs until, std::size_t limit,
                                  std::vector<TimeMs>& out) const {
  REHEARSE_ASSERT_GE(after + 1, span.begin);
  REHEARSE_ASSERT_LT(until, span.end);
  REHEARSE_ASSERT_LT(out.size(), limit);
  const DurationMs offset = span.offset;
  TimeMs from = after;
  if (span.offset_before > offset && !hour_star_) {
    // Readings below begin + offset_before were read in the first pass.
    from = std::max(from, span.begin + (span.offset_before - offset) - 1);
  }
  std::vector<TimeMs> found;
  for (const TimeMs wall : wall_matches(from + offset, until + offset, limit - out.size())) {
    found.push_back(wall - offset);
  }
  if (span.offset_before < offset) {
    const auto stand_in = gap_stand_in(span);
    if (stand_in && *stand_in > after && *stand_in <= until) {
      // A real match at the same instant is the same firing.
      const auto at = std::lower_bound(found.begin(), found.end(), *stand_in);
      if (at == found.end() || *at != *stand_in) found.insert(at, *stand_in);
    }
  }
  for (const TimeMs t : found) {
    if (out.size() >= limit) break;
    // Spans are walked in order, and each span's firings come sorted.
    if (!out.empty()) REHEARSE_ASSERT_LT(out.back(), t);
    out.push_back(t);
  }
}

// A gap at `span`'s start skipped the readings [begin + offset_before, begin
// + offset). The first of them that matches (and only the first) runs at the
// instant it has under the offset before the gap, unless a real firing after
// the gap comes earlier than that instant and so stands for it.
std::optional<TimeMs> WitnessCron::gap_stand_in(const Span& span) const {
  REHEARSE_ASSERT_LT(span.offset_before, span.offset);
  const TimeMs skipped_from = span.begin + span.offset_before;
  const TimeMs skipped_to = span.begin + span.offset;  // exclusive
  const auto first = wall_matches(skipped_from - 1, skipped_to - 1, 1);
  if (first.empty()) return std::nullopt;
  const TimeMs shifted = first.front() - span.offset_before;
  // A skipped reading, shifted by the gap's length: inside the gap's hour of
  // instants after the transition.
  REHEARSE_ASSERT_GE(shifted, span.begin);
  REHEARSE_ASSERT_LT(shifted, span.begin + (span.offset - span.offset_before));
  const auto real = wall_matches(span.begin - 1 + span.offset, shifted - 1 + span.offset, 1);
  if (!real.empty()) return std::nullopt;
  return shifted;
}

std::optional<TimeMs> WitnessCron::next_after(TimeMs t, DurationMs horizon_ms) const {
  auto found = between(t, t + horizon_ms, 1);
  if (found.empty()) return std::nullopt;
  // between() answers within (t, t + horizon_ms], at most one instant.
  REHEARSE_ASSERT_EQ(found.size(), 1u);
  REHEARSE_ASSERT_GT(found.front(), t);
  REHEARSE_ASSERT_LE(found.front(), t + horizon_ms);
  return found.front();
}

}  // namespace rehearse::sim
