// Cron parsing and next_after (docs/fuzzing.md, target `cron`).
// Input: 8 bytes of instant, then the expression.
//  - a refused expression is an invalid_argument / unsupported / never_fires
//    error whose message places it: a field position ("field 3 (hour) ...") or
//    the whole expression (empty, unknown macro, field count, never fires);
//  - an accepted one: next_after(t) > t, a whole second, in range, matches the
//    expression, and equals the first match a brute-force day-by-day search
//    finds (no earlier instant matches); next_after is monotonic;
//  - the explain readers take it (the 400-year low-frequency scan on an
//    eighth of the inputs: see check_descriptions).
#include <string>

#include "model/cron.hpp"
#include "tests/fuzz/properties.hpp"

namespace rehearse::fuzz {
namespace {

// The brute-force search walks at most this many days (a few leap cycles), so
// one input stays well under a millisecond.
constexpr std::int64_t kBruteForceDays = 5 * 366;

bool placed(const std::string& message) {
  // A zone prefix's error names the zone.
  for (const char* anchor :
       {"field ", "field(s)", "macro", "empty cron", "never fires", "time zone"}) {
    if (message.find(anchor) != std::string::npos) return true;
  }
  return false;
}

void check_refused(std::string_view expression, const Error& error) {
  const std::string what = "'" + std::string(expression) + "': " + error.describe();
  REHEARSE_FUZZ_CHECK(error.code == ErrorCode::invalid_argument ||
                          error.code == ErrorCode::unsupported ||
                          error.code == ErrorCode::never_fires,
                      what);
  REHEARSE_FUZZ_CHECK(placed(error.message), what);
}

unsigned lowest_bit(std::uint64_t bits) { return static_cast<unsigned>(__builtin_ctzll(bits)); }

// The first whole second after `t` on day `day` (ms since the epoch at 00:00)
// whose hour, minute and second are in the fields' sets, or -1.
TimeMs first_time_of_day_after(const CronSchedule& s, TimeMs day, TimeMs t) {
  const auto& f = s.fields();
  for (unsigned h = 0; h < 24; ++h) {
    if (((f[2].values >> h) & 1U) == 0 || day + (h + 1) * kHourMs - 1 <= t) continue;
    for (unsigned m = 0; m < 60; ++m) {
      const TimeMs minute = day + h * kHourMs + m * kMinuteMs;
      if (((f[1].values >> m) & 1U) == 0 || minute + kMinuteMs - 1 <= t) continue;
      for (unsigned sec = 0; sec < 60; ++sec) {
        const TimeMs at = minute + sec * kSecondMs;
        if (((f[0].values >> sec) & 1U) != 0 && at > t) return at;
      }
    }
  }
  return -1;
}

// The first match after t, day by day: a day matches when its earliest
// time-of-day in the sets matches (the day rule does not depend on the time).
// -1 when none is found within kBruteForceDays.
TimeMs brute_force_next(const CronSchedule& s, TimeMs t) {
  const auto& f = s.fields();
  const TimeMs earliest = lowest_bit(f[2].values) * kHourMs + lowest_bit(f[1].values) * kMinuteMs +
                          lowest_bit(f[0].values) * kSecondMs;
  const TimeMs first_day = (t / kDayMs) * kDayMs;
  for (std::int64_t i = 0; i < kBruteForceDays; ++i) {
    const TimeMs day = first_day + i * kDayMs;
    if (day > kMaxInstantMs) return -1;
    if (!s.matches(day + earliest)) continue;
    if (const TimeMs at = first_time_of_day_after(s, day, t); at >= 0) return at;
  }
  return -1;
}

// A zoned schedule: the brute force reads UTC, so only the search's own
// properties are checked (the differential suite checks the instants).
void check_zoned_next(const CronSchedule& s, TimeMs t) {
  const Result<TimeMs> next = s.next_after(t);
  const std::string what = "'" + s.source() + "' after " + std::to_string(t);
  if (!next.ok()) {
    REHEARSE_FUZZ_CHECK(next.error().code == ErrorCode::invalid_argument ||
                            next.error().code == ErrorCode::unsupported,
                        what + ": " + next.error().describe());
    return;
  }
  const std::string got = what + " gave " + format_instant(*next);
  REHEARSE_FUZZ_CHECK(*next > t && *next % kSecondMs == 0 && s.matches(*next), got);
  const Result<TimeMs> again = s.next_after(*next - 1);
  REHEARSE_FUZZ_CHECK(again.ok() && *again == *next, got + ": next_after(r - 1ms) differs");
}

void check_next(const CronSchedule& s, TimeMs t) {
  if (s.zone()) return check_zoned_next(s, t);
  const Result<TimeMs> next = s.next_after(t);
  const std::string what = "'" + s.source() + "' after " + std::to_string(t);
  const TimeMs expected = brute_force_next(s, t);
  if (!next.ok()) {
    // Only "no match before the end of year 9999" may stop the search.
    REHEARSE_FUZZ_CHECK(next.error().code == ErrorCode::invalid_argument,
                        what + ": " + next.error().describe());
    REHEARSE_FUZZ_CHECK(expected < 0, what + ": brute force found " + format_instant(expected));
    return;
  }
  const TimeMs r = *next;
  const std::string got = what + " gave " + format_instant(r);
  REHEARSE_FUZZ_CHECK(r > t, got);
  REHEARSE_FUZZ_CHECK(r % kSecondMs == 0, got);
  REHEARSE_FUZZ_CHECK(r <= kMaxInstantMs, got);
  REHEARSE_FUZZ_CHECK(s.matches(r), got);
  if (expected >= 0) {
    REHEARSE_FUZZ_CHECK(expected == r, got + ", brute force " + format_instant(expected));
  } else {
    REHEARSE_FUZZ_CHECK(r - t > (kBruteForceDays - 1) * kDayMs, got + ", brute force found none");
  }
  const Result<TimeMs> again = s.next_after(r - 1);
  REHEARSE_FUZZ_CHECK(again.ok() && *again == r, got + ": next_after(r - 1ms) differs");
  if (const Result<TimeMs> after = s.next_after(r); after.ok()) {
    REHEARSE_FUZZ_CHECK(*after > r, got + ": next_after(r) = " + format_instant(*after));
  }
}

// The explain-side readers must take every accepted schedule.
// low_frequency_warnings() scans a 400-year cycle firing by firing (over
// 20,000 next_after calls for a weekly schedule): it was 83% of this target's
// time, so it runs only when `scan` is set (an eighth of the inputs, chosen by
// the fuzzer through the instant's top three bits).
void check_descriptions(const CronSchedule& s, bool scan) {
  REHEARSE_FUZZ_CHECK(s.fields().size() == 6, s.source());
  for (const CronField& field : s.fields()) {
    REHEARSE_FUZZ_CHECK(!describe_field(field).empty(), s.source());
  }
  REHEARSE_FUZZ_CHECK(!s.describe_day_rule().empty(), s.source());
  (void)s.is_low_frequency();
  if (scan) (void)s.low_frequency_warnings();
}

}  // namespace

void check_cron(std::string_view input) {
  Input in(input);
  const std::uint64_t raw = in.u64();
  const TimeMs t = static_cast<TimeMs>(raw % static_cast<std::uint64_t>(kMaxInstantMs + 1));
  const std::string_view expression = in.rest();
  const Result<CronSchedule> parsed = CronSchedule::parse(expression);
  if (!parsed.ok()) {
    check_refused(expression, parsed.error());
    return;
  }
  check_descriptions(*parsed, (raw >> 61) == 7);
  check_next(*parsed, t);
}

}  // namespace rehearse::fuzz
