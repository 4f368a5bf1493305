// rehearse cron next | cron explain
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/time_zone.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/cron_explain.hpp"
#include "sim/cli/cron_zone_view.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/wall_clock.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kCronHelp =
    "usage: rehearse cron next EXPR [--from INSTANT] [--count N] [--tz ZONE] [--json]\n"
    "       rehearse cron explain EXPR [--tz ZONE [--from INSTANT]] [--json]\n"
    "\n"
    "EXPR is a 5-field (min hour dom mon dow) or 6-field (sec min hour dom mon dow)\n"
    "cron expression or a macro (@hourly, @daily, @weekly, ...), evaluated in UTC (or\n"
    "in ZONE) with cron-parser 4.9.0 semantics (see docs/cron.md). Quote it, or pass\n"
    "the fields as separate arguments.\n"
    "\n"
    "ZONE is an IANA time zone name from the system's tz database (Europe/Berlin,\n"
    "America/New_York, UTC; not a POSIX string such as CET-1CEST,M3.5.0,M10.5.0/3).\n"
    "A 'CRON_TZ=ZONE ' or 'TZ=ZONE ' prefix on EXPR does the same. In a zone the\n"
    "fields are read on its wall clock, with the daylight-saving rules of\n"
    "docs/semantics.md §3: a time in a spring-forward gap runs once, shifted by the\n"
    "gap; a time in a fall-back fold runs once, in the first pass, unless the hour\n"
    "field is * (then in both passes).\n";

const std::vector<OptionSpec> kNextOptions{
    {"--from", true, "INSTANT",
     "start instant, ISO-8601 UTC (default: now); results are strictly after it"},
    {"--count", true, "N", "how many instants to print (1-10000, default 5)"},
    {"--tz", true, "ZONE",
     "read EXPR in this IANA zone: local times, offsets, gap/fold marks, transitions"},
    {"--json", false, "", "print one JSON document"},
};
const std::vector<OptionSpec> kExplainOptions{
    {"--tz", true, "ZONE",
     "read EXPR in this IANA zone: its gap and fold rules, the zone's transitions"},
    {"--from", true, "INSTANT",
     "with a zone: start of the 12 months of transitions (default 2024-01-01T00:00:00Z)"},
    {"--json", false, "", "print one JSON document"},
};

constexpr const char* kZoneHint =
    "a zone is an IANA name from the system's tz database, such as Europe/Berlin or UTC "
    "(see 'rehearse cron --help')";

// Joins positionals so both `cron next '0 17 * * 5'` and `cron next 0 17 '*' '*' 5` work.
std::string join_expression(const std::vector<std::string>& parts) {
  REHEARSE_ASSERT(!parts.empty());  // the callers refuse a missing EXPR first
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ' ';
    out += p;
  }
  return out;
}

// An expression the command cannot use: exit 2, the error kind kept for --json.
int cron_error(const std::string& expr, const Error& e) {
  return input_error(
      make_error(e.code, fmt::format("cron expression \"{}\": {}", expr, e.describe())));
}

// Fewer instants than asked for: the schedule runs past the supported range.
// A complete answer for that range, so the exit code stays 0; the note says
// why the list is short (stderr, and "note" in --json).
std::string short_list_note(std::size_t got, long long asked) {
  // Only a list cut short by the range, after at least one instant, gets a note.
  REHEARSE_ASSERT_GE(got, 1u);
  REHEARSE_ASSERT_LT(got, asked);
  return fmt::format(
      "only {} of {} instants: the schedule has no further instant before the "
      "end of year 9999 (the supported range)",
      got, asked);
}

// The schedule EXPR names, in the zone of --tz when given. A zone the
// database does not hold is reported as the option's value it is.
int load_schedule(const ParsedArgs& parsed, const std::string& expr,
                  std::optional<CronSchedule>& out) {
  const std::optional<std::string> tz = parsed.value("--tz");
  if (tz) {
    auto zone = TimeZone::locate(*tz);
    if (!zone) {
      return input_error(
          make_error(zone.error().code, fmt::format("--tz: {}", zone.error().message)), kZoneHint);
    }
    // The core's message for two zones speaks of a job's zone; here it is --tz.
    auto prefixed = CronSchedule::parse(expr);
    if (!prefixed) return cron_error(expr, prefixed.error());
    if (prefixed->zone() && prefixed->zone()->name() != *tz) {
      return usage_error(
          fmt::format("cron expression \"{}\" names the zone \"{}\" and --tz names \"{}\"", expr,
                      prefixed->zone()->name(), *tz),
          "name one zone, in one place");
    }
  }
  auto schedule = CronSchedule::parse(expr, tz);
  if (!schedule) return cron_error(expr, schedule.error());
  out = std::move(*schedule);
  return kExitOk;
}

// The first `count` firing instants after `from`, fewer when the schedule runs
// past the supported range.
int collect_next(const CronSchedule& schedule, const std::string& expr, TimeMs from,
                 long long count, std::vector<TimeMs>& next) {
  REHEARSE_ASSERT_GE(count, 1);  // parse_count's range, or the default
  TimeMs t = from;
  for (long long i = 0; i < count; ++i) {
    auto n = schedule.next_after(t);
    if (!n) {
      // A never-firing expression is bad input; a schedule that runs past the
      // supported range (year 9999) simply ends the list.
      if (i == 0 || n.error().code == ErrorCode::never_fires) {
        return cron_error(expr, n.error());
      }
      break;
    }
    REHEARSE_ASSERT_GT(*n, t);  // strictly after: the list ascends and never repeats
    next.push_back(*n);
    t = *n;
  }
  REHEARSE_ASSERT_LE(next.size(), count);
  return kExitOk;
}

// Without a zone, one UTC instant per line (the format scripts read); in one,
// local readings and the zone's transitions too.
int print_next(const ParsedArgs& parsed, const std::string& expr, const CronSchedule& schedule,
               TimeMs from, long long count, const std::vector<TimeMs>& next) {
  std::optional<ZoneView> view;
  if (schedule.zone()) {
    auto made = ZoneView::make(schedule);
    if (!made) return cron_error(expr, made.error());
    view = std::move(*made);
  }
  const bool short_list = static_cast<long long>(next.size()) < count;
  if (short_list) fmt::print(stderr, "rehearse: note: {}\n", short_list_note(next.size(), count));
  if (parsed.has("--json")) {
    nlohmann::json doc;
    doc["expression"] = expr;
    doc["from"] = format_instant(from);
    doc["next"] = nlohmann::json::array();
    for (const TimeMs n : next) doc["next"].push_back(format_instant(n));
    if (short_list) {
      doc["count"] = count;
      doc["note"] = short_list_note(next.size(), count);
    }
    if (view) add_zoned_next_json(doc, *view, from, next);
    fmt::print("{}\n", doc.dump(2));
  } else if (view) {
    fmt::print("{}", zoned_next_text(*view, from, next));
  } else {
    for (const TimeMs n : next) fmt::print("{}\n", format_instant(n));
  }
  return kExitOk;
}

int cron_next(const Args& args) {
  auto parsed = parse_args(args, kNextOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse cron --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions for 'cron next':\n{}", kCronHelp, format_options_help(kNextOptions));
    return kExitOk;
  }
  if (parsed->positionals.empty()) return usage_error("cron next: missing EXPR");
  const std::string expr = join_expression(parsed->positionals);
  std::optional<CronSchedule> schedule;
  if (int code = load_schedule(*parsed, expr, schedule); code != kExitOk) return code;
  TimeMs from = 0;
  if (auto from_text = parsed->value("--from")) {
    auto t = parse_instant(*from_text);
    if (!t) return usage_error(fmt::format("--from: {}", t.error().describe()));
    from = *t;
  } else {
    from = wall_clock_now();
  }
  long long count = 5;
  if (auto count_text = parsed->value("--count")) {
    auto c = parse_count("--count", *count_text, 1, 10000);
    if (!c) return usage_error(c.error().describe());
    count = *c;
  }
  std::vector<TimeMs> next;
  if (int code = collect_next(*schedule, expr, from, count, next); code != kExitOk) return code;
  return print_next(*parsed, expr, *schedule, from, count, next);
}

int cron_explain(const Args& args) {
  auto parsed = parse_args(args, kExplainOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse cron --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions for 'cron explain':\n{}", kCronHelp,
               format_options_help(kExplainOptions));
    return kExitOk;
  }
  if (parsed->positionals.empty()) return usage_error("cron explain: missing EXPR");
  const std::string expr = join_expression(parsed->positionals);
  std::optional<CronSchedule> schedule;
  if (int code = load_schedule(*parsed, expr, schedule); code != kExitOk) return code;
  // An option that would change nothing is refused (docs/cli.md).
  TimeMs from = kRhythmStartMs;
  if (auto from_text = parsed->value("--from")) {
    if (!schedule->zone()) {
      return usage_error("cron explain: --from needs a zone (--tz ZONE or a CRON_TZ= prefix)",
                         "it moves the 12 months whose transitions the zone section shows");
    }
    auto t = parse_instant(*from_text);
    if (!t) return usage_error(fmt::format("--from: {}", t.error().describe()));
    from = *t;
  }
  auto explanation = explain_cron(*schedule);
  if (!explanation) return cron_error(expr, explanation.error());
  if (schedule->zone()) {
    auto view = ZoneView::make(*schedule);
    if (!view) return cron_error(expr, view.error());
    ZoneExplanation zone = explain_zone(*view, from);
    explanation->text += zone.text;
    explanation->json.update(zone.json);
  }
  if (parsed->has("--json")) {
    fmt::print("{}\n", explanation->json.dump(2));
  } else {
    fmt::print("{}", explanation->text);
  }
  return kExitOk;
}

}  // namespace

int cmd_cron(const Args& args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kCronHelp);
    return args.empty() ? kExitUsage : kExitOk;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args.front() == "next") return cron_next(rest);
  if (args.front() == "explain") return cron_explain(rest);
  return usage_error(fmt::format("unknown cron subcommand '{}'", args.front()),
                     "expected 'cron next' or 'cron explain'");
}

}  // namespace rehearse::cli
