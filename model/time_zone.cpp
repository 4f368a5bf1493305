#include "model/time_zone.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string_view>

#include <date/tz.h>

#include "model/assert.hpp"

namespace rehearse {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::seconds;

const date::time_zone& zone_of(const void* zone) {
  REHEARSE_ASSERT(zone != nullptr);
  return *static_cast<const date::time_zone*>(zone);
}

DurationMs to_ms(seconds s) { return duration_cast<milliseconds>(s).count(); }

// Whole seconds at or before `t` (instants before 1970 round down too).
seconds floor_seconds(TimeMs t) {
  const TimeMs q = t / kSecondMs;
  return seconds{(t % kSecondMs < 0) ? q - 1 : q};
}

date::sys_seconds sys_at(TimeMs t) { return date::sys_seconds{floor_seconds(t)}; }

TimeMs ms_of(date::sys_seconds s) { return to_ms(s.time_since_epoch()); }

}  // namespace

Result<TimeZone> TimeZone::locate(std::string_view name) {
  if (name.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      "empty time zone name (expected an IANA name such as \"Europe/Berlin\")");
  }
  try {
    TimeZone zone;
    zone.zone_ = date::locate_zone(name);
    zone.name_ = std::string(name);
    zone.listed_until_ = zone.find_listed_until();
    return zone;
  } catch (const std::exception&) {
    return make_error(ErrorCode::invalid_argument,
                      "unknown time zone \"" + std::string(name) + "\" (expected an IANA name " +
                          "from the tz database " + tz_database_version() +
                          ", such as \"Europe/Berlin\" or \"UTC\"; POSIX TZ strings are not read)");
  }
}

DurationMs TimeZone::offset_at(TimeMs t) const {
  return to_ms(zone_of(zone_).get_info(sys_at(t)).offset);
}

LocalReading TimeZone::read_local(TimeMs local) const {
  const date::local_seconds l{floor_seconds(local)};
  const date::local_info info = zone_of(zone_).get_info(l);
  LocalReading r;
  r.first_offset = to_ms(info.first.offset);
  r.second_offset = to_ms(info.second.offset);
  switch (info.result) {
    case date::local_info::unique:
      r.kind = LocalKind::unique;
      r.second_offset = r.first_offset;
      break;
    case date::local_info::nonexistent:
      r.kind = LocalKind::nonexistent;
      r.transition = ms_of(info.second.begin);
      REHEARSE_ASSERT_LT(r.first_offset, r.second_offset);
      break;
    case date::local_info::ambiguous:
      r.kind = LocalKind::ambiguous;
      r.transition = ms_of(info.second.begin);
      REHEARSE_ASSERT_GT(r.first_offset, r.second_offset);
      break;
  }
  return r;
}

ZoneSpan TimeZone::span_at(TimeMs t) const {
  const date::time_zone& zone = zone_of(zone_);
  const date::sys_info info = zone.get_info(sys_at(t));
  ZoneSpan span;
  span.offset = to_ms(info.offset);
  span.begin = std::max(ms_of(info.begin), kMinInstantMs);
  span.end = std::min(ms_of(info.end), kMaxInstantMs + 1);
  span.offset_before = span.begin > kMinInstantMs
                           ? to_ms(zone.get_info(info.begin - seconds{1}).offset)
                           : span.offset;
  REHEARSE_ASSERT_LE(span.begin, t);
  REHEARSE_ASSERT_LT(t, span.end);
  return span;
}

std::optional<TimeMs> TimeZone::find_listed_until() const {
  constexpr TimeMs k2036 = 2082758400000;  // 2036-01-01T00:00:00Z
  constexpr TimeMs k2038 = 2145916800000;  // 2038-01-01T00:00:00Z
  if (!next_transition(k2036, k2038)) return std::nullopt;
  return k2038;
}

std::optional<ZoneTransition> TimeZone::next_transition(TimeMs t, TimeMs until) const {
  const date::time_zone& zone = zone_of(zone_);
  date::sys_info info = zone.get_info(sys_at(t));
  // A rule change that keeps the offset (only the abbreviation or the `save`
  // split moves) is no transition of wall time; look past it.
  for (int hops = 0; hops < 8; ++hops) {
    const TimeMs end = ms_of(info.end);
    if (end > until || end <= t) return std::nullopt;
    const date::sys_info next = zone.get_info(info.end);
    if (next.offset != info.offset) {
      return ZoneTransition{end, to_ms(info.offset), to_ms(next.offset)};
    }
    info = next;
  }
  return std::nullopt;
}

std::string tz_database_version() {
  std::string version;
  try {
    version = date::get_tzdb().version;
  } catch (const std::exception& e) {
    return std::string("unavailable (") + e.what() + ")";
  }
  if (version != "unknown" && !version.empty()) return version;
  // Debian's build reads the system database, which keeps its version in the
  // first line of tzdata.zi ("# version 2025b") rather than in +VERSION.
  const char* dir = std::getenv("TZDIR");
  std::ifstream zi(std::string(dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo") +
                   "/tzdata.zi");
  std::string line;
  constexpr std::string_view kPrefix = "# version ";
  if (std::getline(zi, line) && line.rfind(kPrefix, 0) == 0) return line.substr(kPrefix.size());
  return version;
}

}  // namespace rehearse
