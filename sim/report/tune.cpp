#include "sim/report/tune.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <mutex>
#include <thread>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "sim/kernel/rng.hpp"
#include "sim/monitors/monitored_run.hpp"
#include "sim/world/job_kind_table.hpp"

namespace rehearse::sim {

using nlohmann::json;

namespace {

Error bad(std::string where, std::string message) {
  return make_error(ErrorCode::invalid_argument, std::move(message), std::move(where));
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (true) {
    const std::size_t at = text.find(sep, from);
    std::string part(
        text.substr(from, at == std::string_view::npos ? std::string_view::npos : at - from));
    // trim
    const auto b = part.find_first_not_of(" \t\r\n");
    const auto e = part.find_last_not_of(" \t\r\n");
    out.push_back(b == std::string::npos ? std::string() : part.substr(b, e - b + 1));
    if (at == std::string_view::npos) {
      // One part more than there are separators (empty parts included).
      REHEARSE_ASSERT_EQ(out.size(),
                         static_cast<std::size_t>(std::count(text.begin(), text.end(), sep)) + 1);
      return out;
    }
    from = at + 1;
  }
}

Result<DurationMs> positive_duration(const std::string& text, const std::string& where) {
  auto d = parse_duration(text);
  if (!d.ok() || *d <= 0 || *d > kBackoffDelayMaxMs) {
    return bad(where, fmt::format("expected a duration such as 30m or 2h (above 0, at most "
                                  "366d), got \"{}\"",
                                  text));
  }
  return *d;
}

Result<int> small_int(const std::string& text, const std::string& where, int lo, int hi) {
  REHEARSE_ASSERT_LE(lo, hi);  // read_attempts' high end starts at the low one read
  int v = 0;
  if (text.empty() || text.size() > 6 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return bad(where, fmt::format("expected an integer from {} to {}, got \"{}\"", lo, hi, text));
  }
  v = std::stoi(text);
  if (v < lo || v > hi) {
    return bad(where, fmt::format("expected an integer from {} to {}, got \"{}\"", lo, hi, text));
  }
  return v;
}

// "2-6" or "2,3,5".
Result<std::vector<int>> read_attempts(const std::string& value) {
  std::vector<int> out;
  for (const auto& part : split(value, ',')) {
    const auto dash = part.find('-');
    if (dash == std::string::npos) {
      auto n = small_int(part, "--grid attempts", 1, kRetryCountMax + 1);
      if (!n) return std::move(n).error();
      out.push_back(*n);
      continue;
    }
    auto lo = small_int(part.substr(0, dash), "--grid attempts", 1, kRetryCountMax + 1);
    if (!lo) return std::move(lo).error();
    auto hi = small_int(part.substr(dash + 1), "--grid attempts", *lo, kRetryCountMax + 1);
    if (!hi) return std::move(hi).error();
    for (int a = *lo; a <= *hi; ++a) out.push_back(a);
  }
  // split gives at least one part, and each part read adds at least one count.
  REHEARSE_ASSERT(!out.empty());
  return out;
}

Status read_grid_entry(TuneGrid& grid, const std::string& key, const std::string& value) {
  const std::string where = "--grid " + key;
  const auto items = split(value, ',');
  if (key == "attempts") {
    auto a = read_attempts(value);
    if (!a) return std::move(a).error();
    grid.attempts = *a;
  } else if (key == "delay") {
    grid.delays.clear();
    for (const auto& i : items) {
      auto d = positive_duration(i, where);
      if (!d) return std::move(d).error();
      grid.delays.push_back(*d);
    }
  } else if (key == "backoff") {
    grid.kinds.clear();
    for (const auto& i : items) {
      auto k = parse_backoff_kind(i);
      if (!k)
        return bad(where, fmt::format("expected exponential, fixed or linear, got \"{}\"", i));
      grid.kinds.push_back(*k);
    }
  } else if (key == "cap") {
    grid.caps.clear();
    for (const auto& i : items) {
      if (i == "none") {
        grid.caps.push_back(0);
        continue;
      }
      auto d = positive_duration(i, where);
      if (!d) return std::move(d).error();
      grid.caps.push_back(*d);
    }
  } else if (key == "jitter") {
    grid.jitters.clear();
    for (const auto& i : items) {
      char* end = nullptr;
      const double j = std::strtod(i.c_str(), &end);
      if (i.empty() || *end != '\0' || !(j >= 0.0 && j <= 1.0)) {
        return bad(where, fmt::format("expected a jitter from 0 to 1, got \"{}\"", i));
      }
      grid.jitters.push_back(j);
    }
  } else {
    return bad("--grid", fmt::format("unknown key \"{}\": expected attempts, delay, backoff, cap "
                                     "or jitter",
                                     key));
  }
  // A key read replaces its list with one value per item (split gives at least one).
  REHEARSE_ASSERT(!grid.attempts.empty() && !grid.delays.empty() && !grid.kinds.empty() &&
                  !grid.caps.empty() && !grid.jitters.empty());
  return {};
}

}  // namespace

Result<TuneGrid> parse_tune_grid(std::string_view text) {
  TuneGrid grid;
  for (const auto& entry : split(text, ';')) {
    if (entry.empty()) continue;
    const auto eq = entry.find('=');
    if (eq == std::string::npos) {
      return bad("--grid", fmt::format("expected KEY=VALUES, got \"{}\"", entry));
    }
    if (auto s = read_grid_entry(grid, entry.substr(0, eq), entry.substr(eq + 1)); !s.ok()) {
      return std::move(s).error();
    }
  }
  const std::size_t size = grid.attempts.size() * grid.delays.size() * grid.kinds.size() *
                           grid.caps.size() * grid.jitters.size();
  if (size == 0) return bad("--grid", "the grid is empty");
  if (size > 5000) return bad("--grid", fmt::format("{} policies: at most 5000", size));
  return grid;
}

Result<OutageDistribution> parse_outages(std::string_view text) {
  OutageDistribution out;
  out.text = std::string(text);
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    out.shape = OutageShape::list;
    for (const auto& i : split(text, ',')) {
      auto d = positive_duration(i, "--outages");
      if (!d) return std::move(d).error();
      out.values.push_back(*d);
    }
    // split gives at least one part, and each part read is a duration: draw_outage_length picks
    // one.
    REHEARSE_ASSERT(!out.values.empty());
    return out;
  }
  const std::string shape(text.substr(0, colon));
  if (shape == "uniform") {
    out.shape = OutageShape::uniform;
  } else if (shape == "lognormal") {
    out.shape = OutageShape::lognormal;
  } else {
    return bad("--outages", fmt::format("unknown shape \"{}\": expected a list (30m,2h), "
                                        "uniform:LOW-HIGH, lognormal:LOW-HIGH or @FILE",
                                        shape));
  }
  const std::string range(text.substr(colon + 1));
  const auto dash = range.find('-');
  if (dash == std::string::npos) return bad("--outages", "expected LOW-HIGH, e.g. 30m-12h");
  auto lo = positive_duration(range.substr(0, dash), "--outages");
  if (!lo) return std::move(lo).error();
  auto hi = positive_duration(range.substr(dash + 1), "--outages");
  if (!hi) return std::move(hi).error();
  if (*hi < *lo) return bad("--outages", "expected LOW <= HIGH");
  out.low_ms = *lo;
  out.high_ms = *hi;
  return out;
}

Result<OutageDistribution> empirical_outages(std::string_view file_text, std::string name) {
  OutageDistribution out;
  out.shape = OutageShape::empirical;
  out.text = "@" + name;
  int line_no = 0;
  for (auto line : split(file_text, '\n')) {
    ++line_no;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line = split(line.substr(0, hash), '\n').front();
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (line.empty()) continue;
    auto d = positive_duration(line, fmt::format("{}:{}", name, line_no));
    if (!d) return std::move(d).error();
    out.values.push_back(*d);
  }
  if (out.values.empty()) return bad(name, "no outage durations (one per line, e.g. 2h)");
  return out;
}

void wilson_interval(int k, int n, double& low, double& high) {
  // k successes out of n runs.
  REHEARSE_ASSERT_GE(k, 0);
  REHEARSE_ASSERT(n <= 0 || k <= n);
  if (n <= 0) {
    low = 0.0;
    high = 1.0;
    return;
  }
  constexpr double z = 1.96;
  const double nn = n;
  const double p = k / nn;
  const double denom = 1.0 + z * z / nn;
  const double centre = (p + z * z / (2.0 * nn)) / denom;
  const double half = z * std::sqrt(p * (1.0 - p) / nn + z * z / (4.0 * nn * nn)) / denom;
  // Mathematically low <= p <= high, with 0 and 1 exact at k = 0 and k = n;
  // rounding must not break that.
  low = k == 0 ? 0.0 : std::clamp(centre - half, 0.0, p);
  high = k == n ? 1.0 : std::clamp(centre + half, p, 1.0);
  // The interval holds the observed share and stays a probability.
  REHEARSE_ASSERT(0.0 <= low && low <= p && p <= high && high <= 1.0);
}

namespace {

// ------------------------------------------------------------ the job

// The service an outage breaks: a built-in one or a service of the user's own.
struct Provider {
  std::optional<ServiceKind> builtin;
  std::string name;  // as traces and reports name it
};

struct JobFacts {
  const JobSpec* spec = nullptr;
  CronSchedule schedule;
  Provider provider;
  std::vector<std::string> services;  // every breakable service the job calls
  FaultKind fault = FaultKind::quota_exhausted;
  std::vector<TimeMs> slots;  // in [start, until)
};

// The services one run of the job calls whose failure fails the run, in the
// order it calls them: the model API for a group job with a task that calls
// it and for a publish job, the brokerage for a fetch job, a call job's own
// services. The messenger is not among them (its outage is messenger_down).
std::vector<Provider> breakable_services(const JobSpec& spec) {
  std::vector<Provider> out;
  for (const std::string& name : job_kind_def(spec.kind).services(spec)) {
    out.push_back({parse_service_kind(name), name});
  }
  return out;
}

Result<Provider> choose_provider(const JobSpec& spec, const std::vector<Provider>& services,
                                 const std::string& wanted) {
  std::string names;
  for (const Provider& p : services)
    names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  if (services.empty()) {
    return bad("--job", fmt::format("job \"{}\" calls no service an outage can break (a {} job "
                                    "whose runs make no model-api, brokerage or own-service "
                                    "call); tune has nothing to sweep (docs/tune.md)",
                                    spec.id, to_string(spec.kind)));
  }
  if (wanted.empty()) return services.front();
  for (const Provider& p : services) {
    if (p.name == wanted) return p;
  }
  return bad("--service",
             fmt::format("job \"{}\" does not call \"{}\" (it calls: {})", spec.id, wanted, names));
}

const JobSpec* find_tuned_job(const Scenario& scenario, const std::string& id, Error& error) {
  const JobSpec* spec = scenario.find_job(id);
  if (spec == nullptr) {
    std::string ids;
    for (const auto& j : scenario.jobs) ids += fmt::format("{}{}", ids.empty() ? "" : ", ", j.id);
    error = bad("--job", fmt::format("no job \"{}\" in the scenario (jobs: {})", id, ids));
  } else if (spec->kind == JobKind::reconcile) {
    error = bad("--job",
                "tune sweeps group, publish, fetch and call jobs; a reconcile job's "
                "failures are per item (docs/tune.md)");
    spec = nullptr;
  }
  REHEARSE_ASSERT(spec == nullptr || spec->id == id);
  return spec;
}

Result<JobFacts> job_facts(const Scenario& scenario, const TuneOptions& options) {
  Error error;
  const JobSpec* spec = find_tuned_job(scenario, options.job_id, error);
  if (spec == nullptr) return error;
  auto effective = effective_schedule(spec->schedule, spec->schedule_env, scenario.env, spec->tz);
  if (!effective) return bad(spec->pointer + "/schedule", effective.error().describe());
  JobFacts f;
  f.spec = spec;
  f.schedule = effective->schedule;
  const std::vector<Provider> services = breakable_services(*spec);
  for (const Provider& p : services) f.services.push_back(p.name);
  auto provider = choose_provider(*spec, services, options.service);
  if (!provider) return std::move(provider).error();
  f.provider = *provider;
  const bool model_api = f.provider.builtin == ServiceKind::model_api;
  f.fault = options.fault.value_or(model_api ? FaultKind::quota_exhausted : FaultKind::http_errors);
  if (f.fault == FaultKind::quota_exhausted && f.provider.builtin && !model_api) {
    return bad("--fault", fmt::format("quota_exhausted is a fault of the model API or a service "
                                      "of your own, not of {}; use http_errors",
                                      f.provider.name));
  }
  for (auto t = f.schedule.next_after(scenario.start_ms - 1); t && *t < scenario.until_ms;
       t = f.schedule.next_after(*t)) {
    f.slots.push_back(*t);
    if (f.slots.size() >= 1000) break;
  }
  if (f.slots.empty()) {
    return bad("--job", fmt::format("job \"{}\" has no slot between the scenario's start and "
                                    "until",
                                    spec->id));
  }
  // The slots, strictly ascending inside [start, until): samples pick among them.
  REHEARSE_ASSERT_GE(f.slots.front(), scenario.start_ms);
  REHEARSE_ASSERT_LT(f.slots.back(), scenario.until_ms);
  REHEARSE_ASSERT(std::adjacent_find(f.slots.begin(), f.slots.end(), std::greater_equal<>()) ==
                  f.slots.end());
  return f;
}

// ------------------------------------------------------------ the policies

std::string policy_label(int attempts, const Backoff& b) {
  REHEARSE_ASSERT_GE(attempts, 1);  // the first run counts: a grid's or max_retries + 1
  std::string s =
      fmt::format("{} x {} {}", attempts, format_duration(b.delay_ms), to_string(b.kind));
  if (b.max_delay_ms > 0) s += fmt::format(" cap {}", format_duration(b.max_delay_ms));
  if (b.jitter > 0.0) s += fmt::format(" jitter {}", b.jitter);
  return s;
}

json grid_policy_json(int attempts, const Backoff& b) {
  // The grid's values: attempts from 1, delays above 0 (parse_tune_grid).
  REHEARSE_ASSERT_GE(attempts, 1);
  REHEARSE_ASSERT_GT(b.delay_ms, 0);
  json backoff{{"type", to_string(b.kind)}, {"delay", b.delay_ms}};
  if (b.max_delay_ms > 0) backoff["max_delay"] = b.max_delay_ms;
  if (b.jitter > 0.0) backoff["jitter"] = b.jitter;
  return json{{"attempts", attempts}, {"backoff", backoff}};
}

bool same_behaviour(const RetryPolicy& a, const RetryPolicy& b) {
  return a.max_retries == b.max_retries && a.deadline_ms == b.deadline_ms &&
         a.backoff == b.backoff && a.retryable_classes == b.retryable_classes &&
         a.budget == b.budget;
}

Result<std::vector<TunePolicy>> tune_policies(const TuneGrid& grid, const JobFacts& job) {
  std::vector<TunePolicy> out;
  const ScheduleFacts facts = schedule_facts(job.schedule);
  const json current_written = job.spec->retry_policy.value_or(json());
  auto current = parse_retry_policy(current_written, facts);
  bool current_found = false;
  for (const BackoffKind kind : grid.kinds) {
    for (const DurationMs cap : grid.caps) {
      for (const double jitter : grid.jitters) {
        for (const int attempts : grid.attempts) {
          for (const DurationMs delay : grid.delays) {
            TunePolicy p;
            p.attempts = attempts;
            p.backoff = Backoff{kind, delay, jitter};
            p.backoff.max_delay_ms = cap;
            p.written = grid_policy_json(attempts, p.backoff);
            p.label = policy_label(attempts, p.backoff);
            auto parsed = parse_retry_policy(p.written);
            if (!parsed)
              return bad("--grid", fmt::format("{}: {}", p.label, parsed.error().describe()));
            if (current && !current_found && same_behaviour(*parsed, *current)) {
              p.current = current_found = true;
            }
            out.push_back(std::move(p));
          }
        }
      }
    }
  }
  if (!current_found) {
    TunePolicy p;
    p.in_grid = false;
    p.current = true;
    p.written = current_written;
    if (current) {
      p.backoff = current->backoff;
      if (unlimited_retries(*current)) {
        // Unlimited until a deadline: no count of attempts to show.
        p.attempts = kRetriesUnlimited;
        p.label = describe(*current) + " (own)";
      } else {
        p.attempts = current->max_retries + 1;
        p.label = policy_label(p.attempts, p.backoff) + " (own)";
      }
    } else {
      p.label = "the job's own (invalid: never retried)";
    }
    out.push_back(std::move(p));
  }
  // One policy per point of the grid, plus the job's own when the grid lacks
  // it; exactly one of them is the current one.
  const std::size_t grid_size = grid.kinds.size() * grid.caps.size() * grid.jitters.size() *
                                grid.attempts.size() * grid.delays.size();
  REHEARSE_ASSERT_EQ(out.size(), grid_size + (current_found ? 0u : 1u));
  REHEARSE_ASSERT_EQ(
      std::count_if(out.begin(), out.end(), [](const TunePolicy& p) { return p.current; }), 1);
  return out;
}

// ------------------------------------------------------------ the sample

struct OutageSample {
  DurationMs length_ms = 0;
  TimeMs slot_ms = 0;
  TimeMs next_slot_ms = 0;
  TimeMs start_ms = 0;
  std::uint64_t world_seed = 0;
};

// A standard normal from two uniforms (Box-Muller; our own draws, no std::*_distribution).
double standard_normal(Rng& rng) {
  const double u1 = 1.0 - rng.next_unit();  // (0, 1]
  REHEARSE_ASSERT(u1 > 0.0 && u1 <= 1.0);   // log(u1) is finite
  const double u2 = rng.next_unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
}

}  // namespace

DurationMs draw_outage_length(const OutageDistribution& d, std::size_t run, Rng& rng) {
  // The parsers refuse a list or a file without a duration.
  const bool listed = d.shape == OutageShape::list || d.shape == OutageShape::empirical;
  REHEARSE_ASSERT(!listed || !d.values.empty());
  switch (d.shape) {
    case OutageShape::list: return d.values[run % d.values.size()];
    case OutageShape::empirical: return d.values[rng.next_below(d.values.size())];
    case OutageShape::uniform: return rng.next_in(d.low_ms, d.high_ms);
    case OutageShape::lognormal: break;
  }
  REHEARSE_ASSERT(d.low_ms > 0 && d.low_ms <= d.high_ms);
  // low and high are the 5th and 95th percentiles: z = 1.645.
  const double mu =
      (std::log(static_cast<double>(d.low_ms)) + std::log(static_cast<double>(d.high_ms))) / 2;
  const double sigma = (std::log(static_cast<double>(d.high_ms)) - mu) / 1.6448536269514722;
  const double v = std::exp(mu + sigma * standard_normal(rng));
  return std::clamp(static_cast<DurationMs>(v), std::max<DurationMs>(kSecondMs, d.low_ms / 4),
                    d.high_ms * 4);
}

namespace {

// Run i's outage: a length, one of the job's slots, and a phase: the outage
// is already in progress when the slot fires, begun a uniform share of its
// length earlier (at least 1 s, so the slot's first run fails).
OutageSample draw_sample(const TuneOptions& options, const JobFacts& job, std::size_t run) {
  REHEARSE_ASSERT(!job.slots.empty());  // job_facts refuses a job without a slot
  Rng rng = Rng(options.seed).derive(static_cast<std::uint64_t>(run));
  OutageSample s;
  s.length_ms = draw_outage_length(options.outages, run, rng);
  s.slot_ms = job.slots[rng.next_below(job.slots.size())];
  const auto elapsed = static_cast<DurationMs>(rng.next_unit() * static_cast<double>(s.length_ms));
  s.start_ms = s.slot_ms - std::clamp<DurationMs>(elapsed, kSecondMs,
                                                  std::max(kSecondMs, s.length_ms - kSecondMs));
  auto next = job.schedule.next_after(s.slot_ms);
  s.next_slot_ms = next ? *next : kMaxInstantMs;
  s.world_seed = rng.next_u64();
  // The outage is in progress at the slot (begun at least 1 s before it) and
  // the next slot comes after it.
  REHEARSE_ASSERT_GT(s.length_ms, 0);
  REHEARSE_ASSERT_LT(s.start_ms, s.slot_ms);
  REHEARSE_ASSERT_GT(s.next_slot_ms, s.slot_ms);
  return s;
}

// ------------------------------------------------------------ one run

struct RunMetrics {
  bool recovered = false;
  DurationMs ttr_ms = 0;
  int extra_calls = 0;
  DurationMs queue_delay_ms = 0;
  bool overrun = false;
};

Scenario run_scenario_for(const Scenario& base, const JobFacts& job, const TunePolicy& policy,
                          const OutageSample& s, TimeMs until) {
  // The span covers the slot and the first retries after it.
  REHEARSE_ASSERT_GT(until, s.slot_ms);
  Scenario sc = base;
  sc.until_ms = until;
  sc.expect = Expectations{};
  sc.faults.clear();
  for (JobSpec& j : sc.jobs) {
    if (j.id == job.spec->id) j.retry_policy = policy.written;
  }
  FaultSpec f;
  f.kind = job.fault;
  // An outage begun before the scenario's start is in progress at the start:
  // it ends at the same instant.
  f.at_ms = std::max(s.start_ms, base.start_ms);
  f.for_ms = s.start_ms + s.length_ms - f.at_ms;
  if (job.provider.builtin) {
    f.service = job.provider.builtin;
  } else {
    f.user_service = job.provider.name;
  }
  f.http_status = 503;
  f.note = "rehearse tune outage";
  f.pointer = "/faults/0";
  sc.faults.push_back(f);
  return sc;
}

RunMetrics measure(const ScenarioRunResult& r, const JobFacts& job, const OutageSample& s) {
  RunMetrics m;
  const std::string& id = job.spec->id;
  const std::string& provider = job.provider.name;
  bool in_retry = false;
  for (const TraceEvent& e : r.trace.events()) {
    if (e.type == "run_started" && e.job != id && e.t >= s.slot_ms) {
      m.queue_delay_ms = std::max<DurationMs>(m.queue_delay_ms, e.num("start_delay_ms"));
    }
    if (e.job != id || e.slot != s.slot_ms) continue;
    if (e.type == "run_started") {
      in_retry = e.str("kind") == "retry";
      if (e.t >= s.next_slot_ms) m.overrun = true;
    } else if (e.type == "service_call" && e.service == provider && in_retry) {
      ++m.extra_calls;
    } else if (e.type == "retry_scheduled") {
      auto at = parse_instant(e.str("next_retry_at"));
      if (at && *at >= s.next_slot_ms) m.overrun = true;
    } else if (e.type == "run_finished" && !m.recovered) {
      const std::string outcome = e.str("outcome");
      if (outcome == "success" || outcome == "skipped" || outcome == "already_complete") {
        m.recovered = true;
        m.ttr_ms = e.t - s.slot_ms;
      }
    }
  }
  // Recovery is measured from the slot: never before it.
  REHEARSE_ASSERT(!m.recovered || m.ttr_ms >= 0);
  REHEARSE_ASSERT_GE(m.extra_calls, 0);
  return m;
}

// ------------------------------------------------------------ aggregation

std::optional<DurationMs> percentile(std::vector<DurationMs> v, double q) {
  REHEARSE_ASSERT(q > 0.0 && q <= 1.0);
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

TuneRow aggregate(const TunePolicy& policy, const std::vector<RunMetrics>& runs) {
  TuneRow row;
  row.policy = policy;
  row.runs = static_cast<int>(runs.size());
  std::vector<DurationMs> ttr;
  double calls = 0, delay = 0, overruns = 0;
  for (const RunMetrics& m : runs) {
    if (m.recovered) {
      ++row.recovered;
      ttr.push_back(m.ttr_ms);
    }
    calls += m.extra_calls;
    delay += static_cast<double>(m.queue_delay_ms);
    row.queue_delay_max_ms = std::max(row.queue_delay_max_ms, m.queue_delay_ms);
    overruns += m.overrun ? 1 : 0;
  }
  const double n = std::max(1, row.runs);
  row.recovery = row.recovered / n;
  wilson_interval(row.recovered, row.runs, row.recovery_low, row.recovery_high);
  row.ttr_p50_ms = percentile(ttr, 0.50);
  row.ttr_p95_ms = percentile(ttr, 0.95);
  row.extra_calls = calls / n;
  row.queue_delay_ms = delay / n;
  row.next_slot_overrun = overruns / n;
  // Every run counted once; the percentiles ordered.
  REHEARSE_ASSERT_LE(row.recovered, row.runs);
  REHEARSE_ASSERT_EQ(ttr.size(), static_cast<std::size_t>(row.recovered));
  REHEARSE_ASSERT(!row.ttr_p50_ms || *row.ttr_p50_ms <= *row.ttr_p95_ms);
  REHEARSE_ASSERT(0.0 <= row.next_slot_overrun && row.next_slot_overrun <= 1.0);
  return row;
}

// p95 time to recovery; a policy that never recovered waits forever.
DurationMs ttr_p95_or_never(const TuneRow& r) {
  REHEARSE_ASSERT(!r.ttr_p95_ms || *r.ttr_p95_ms >= 0);  // measured from the slot
  return r.ttr_p95_ms.value_or(kMaxInstantMs);
}

// Recovery against cost: a recovers at least as often, with no more extra
// calls and no later p95 time to recovery, and is better in one of them.
bool dominates(const TuneRow& a, const TuneRow& b) {
  REHEARSE_ASSERT_EQ(a.runs, b.runs);  // recovery counts compare over the same runs
  const DurationMs ta = ttr_p95_or_never(a), tb = ttr_p95_or_never(b);
  return a.recovered >= b.recovered && a.extra_calls <= b.extra_calls && ta <= tb &&
         (a.recovered > b.recovered || a.extra_calls < b.extra_calls || ta < tb);
}

void mark_front(TuneResult& result) {
  REHEARSE_ASSERT_LT(result.current, result.rows.size());
  for (TuneRow& row : result.rows) {
    row.pareto = std::none_of(result.rows.begin(), result.rows.end(),
                              [&](const TuneRow& other) { return dominates(other, row); });
  }
  const TuneRow& current = result.rows[result.current];
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    const TuneRow& row = result.rows[i];
    if (!row.pareto) continue;
    if (dominates(row, current)) result.dominating.push_back(i);
    if (row.recovered > current.recovered) result.front_above.push_back(i);
  }
  // Domination is irreflexive: the current policy never dominates itself.
  REHEARSE_ASSERT(std::find(result.dominating.begin(), result.dominating.end(), result.current) ==
                  result.dominating.end());
  // Domination is a strict order, so some row is never dominated.
  REHEARSE_ASSERT(std::any_of(result.rows.begin(), result.rows.end(),
                              [](const TuneRow& row) { return row.pareto; }));
}

}  // namespace

void run_sweep_parallel(std::size_t total, int threads, const std::function<void(std::size_t)>& one,
                        const std::function<void(std::size_t, std::size_t)>& progress) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < total; i = next++) {
      one(i);
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  if (!progress) {
    worker();
  } else {
    // The calling thread works too, reporting between its runs at most once
    // per percent.
    std::size_t reported = total + 1;
    for (std::size_t i = next++; i < total; i = next++) {
      one(i);
      const std::size_t d = ++done;
      if (d < total && d * 100 / total != reported) {
        reported = d * 100 / total;
        progress(d, total);
      }
    }
  }
  for (auto& t : pool) t.join();
  // Each index was taken by exactly one thread.
  REHEARSE_ASSERT_EQ(done.load(), total);
  if (progress) progress(total, total);
}

Result<TuneResult> run_tune(const Scenario& scenario, const TuneOptions& options) {
  auto job = job_facts(scenario, options);
  if (!job) return std::move(job).error();
  auto policies = tune_policies(options.grid, *job);
  if (!policies) return std::move(policies).error();
  DurationMs longest_window = 0;
  for (const TunePolicy& p : *policies) {
    if (auto parsed = parse_retry_policy(p.written, schedule_facts(job->schedule))) {
      longest_window = std::max(longest_window, plan_retries(*parsed).longest_window_ms);
    }
  }
  const auto runs = static_cast<std::size_t>(options.runs);
  std::vector<OutageSample> samples;
  for (std::size_t i = 0; i < runs; ++i) samples.push_back(draw_sample(options, *job, i));

  std::vector<RunMetrics> metrics(policies->size() * runs);
  std::mutex error_mutex;
  std::optional<Error> first_error;
  auto one = [&](std::size_t index) {
    const TunePolicy& policy = (*policies)[index / runs];
    const OutageSample& s = samples[index % runs];
    // Long enough for the longest chain of any policy (the same span for all).
    const TimeMs until =
        std::min(kMaxInstantMs,
                 std::max(s.next_slot_ms + kMinuteMs,
                          s.slot_ms + std::max(longest_window, s.length_ms) + kHourMs));
    const Scenario sc = run_scenario_for(scenario, *job, policy, s, until);
    RunOptions ro;
    ro.seed = s.world_seed;
    ro.stop_on_violation = false;
    auto r = run_scenario(sc, std::move(ro));
    if (!r) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = r.error();
      return;
    }
    metrics[index] = measure(*r, *job, s);
  };
  run_sweep_parallel(metrics.size(), std::max(1, options.threads), one, options.progress);
  if (first_error) return *first_error;

  TuneResult result;
  result.scenario = scenario.name;
  result.job = options.job_id;
  result.schedule = job->schedule.source();
  result.provider = job->provider.name;
  result.services = job->services;
  result.fault = to_string(job->fault);
  result.outages = options.outages.text;
  result.runs_per_policy = options.runs;
  result.seed = options.seed;
  for (std::size_t p = 0; p < policies->size(); ++p) {
    const std::vector<RunMetrics> mine(metrics.begin() + static_cast<std::ptrdiff_t>(p * runs),
                                       metrics.begin() +
                                           static_cast<std::ptrdiff_t>((p + 1) * runs));
    result.rows.push_back(aggregate((*policies)[p], mine));
    if ((*policies)[p].current) result.current = p;
  }
  // One row per policy, each over the same runs; the current one among them.
  REHEARSE_ASSERT_EQ(result.rows.size(), policies->size());
  REHEARSE_ASSERT(result.rows[result.current].policy.current);
  for (const TuneRow& row : result.rows) REHEARSE_ASSERT_EQ(row.runs, options.runs);
  mark_front(result);
  return result;
}

}  // namespace rehearse::sim
