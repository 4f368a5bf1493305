// A named IANA time zone, read from the system's tz database through Howard
// Hinnant's date/tz (the reference implementation of C++20's <chrono> zones;
// g++ 12 lacks std::chrono::locate_zone). The core never keeps offset tables
// of its own: every offset and transition comes from the database.
// docs/semantics.md §3 "Time zones" says what the schedules do with them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/result.hpp"
#include "model/time.hpp"

namespace rehearse {

// How a local wall-clock reading maps onto instants.
enum class LocalKind : unsigned char {
  unique,       // exactly one instant: local - first_offset
  nonexistent,  // skipped by a forward transition (a spring-forward gap)
  ambiguous,    // read twice around a backward transition (a fall-back fold)
};

struct LocalReading {
  LocalKind kind = LocalKind::unique;
  // unique: the offset in effect. nonexistent: the offsets before and after
  // the gap. ambiguous: the earlier pass's offset, then the later pass's.
  DurationMs first_offset = 0;
  DurationMs second_offset = 0;
  // nonexistent and ambiguous: the transition's instant.
  TimeMs transition = 0;
};

struct ZoneTransition {
  TimeMs at = 0;                 // the first instant under the new offset
  DurationMs offset_before = 0;  // UTC offsets, local = instant + offset
  DurationMs offset_after = 0;
};

// A stretch of time under one UTC offset: [begin, end).
struct ZoneSpan {
  TimeMs begin = kMinInstantMs;
  TimeMs end = kMaxInstantMs + 1;  // past the supported range: no further change
  DurationMs offset = 0;
  DurationMs offset_before = 0;  // the offset just before `begin`
};

class TimeZone {
 public:
  // `name` as the tz database spells it ("Europe/Berlin", "UTC"). Anything
  // the database does not hold (a misspelling, a POSIX TZ string such as
  // "CET-1CEST,M3.5.0", an empty name) is ErrorCode::invalid_argument naming it.
  static Result<TimeZone> locate(std::string_view name);

  const std::string& name() const noexcept { return name_; }
  // The UTC offset at instant `t` (local wall time = t + offset).
  DurationMs offset_at(TimeMs t) const;
  // How the wall-clock reading `local` (ms since 1970 as if it were UTC) maps
  // onto instants.
  LocalReading read_local(TimeMs local) const;
  // The span of one offset that holds instant `t`.
  ZoneSpan span_at(TimeMs t) const;
  // Where the database's listed transitions end for a zone whose rules keep
  // changing its offset: the system's zone files list transitions through
  // 2037 and leave later years to a rule string the library does not read,
  // so instants from then on cannot be trusted. None: a fixed offset.
  const std::optional<TimeMs>& listed_until() const noexcept { return listed_until_; }
  // The first change of offset strictly after `t` and no later than `until`.
  std::optional<ZoneTransition> next_transition(TimeMs t, TimeMs until) const;

  friend bool operator==(const TimeZone& a, const TimeZone& b) noexcept {
    return a.zone_ == b.zone_;
  }

 private:
  const void* zone_ = nullptr;  // a date::time_zone owned by the database
  std::string name_;
  // Read once at locate(): every zoned next_after asks it.
  std::optional<TimeMs> listed_until_;
  std::optional<TimeMs> find_listed_until() const;
};

// The tz database's version ("2025b"), as the library read it from the system.
std::string tz_database_version();

}  // namespace rehearse
