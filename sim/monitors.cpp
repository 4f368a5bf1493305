#include "sim/monitors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <utility>

namespace rehearse::sim {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------- cron

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

// ---------------------------------------------------------------- policy

const std::vector<std::string>& class_vocabulary() {
  static const std::vector<std::string> kNames{"timeout",    "network", "provider_5xx",
                                               "rate_limit", "auth",    "validation",
                                               "not_found",  "config",  "unknown"};
  return kNames;
}

std::optional<DurationMs> read_delay(const json& v) {
  if (v.is_number_integer()) {
    const auto ms = v.get<std::int64_t>();
    if (ms < 0) return std::nullopt;
    return ms;
  }
  if (v.is_string()) {
    auto d = parse_duration(v.get<std::string>());
    if (!d.ok() || *d < 0) return std::nullopt;
    return *d;
  }
  return std::nullopt;
}

bool read_backoff(const json& b, WitnessPolicy& p, bool allow_jitter) {
  if (b.is_object()) {
    for (const auto& [k, v] : b.items()) {
      if (k != "type" && k != "delay" && k != "max_delay" && !(allow_jitter && k == "jitter")) {
        return false;
      }
    }
    if (!b.contains("type") || !b.at("type").is_string() || !b.contains("delay")) return false;
    const std::string type = b.at("type").get<std::string>();
    if (type != "fixed" && type != "exponential" && type != "linear") return false;
    p.exponential = type == "exponential";
    p.linear = type == "linear";
    auto d = read_delay(b.at("delay"));
    if (!d) return false;
    p.delay_ms = *d;
    if (b.contains("max_delay")) {
      auto cap = read_delay(b.at("max_delay"));
      if (!cap) return false;
      p.cap_ms = *cap;
    }
    if (b.contains("jitter")) {
      if (!b.at("jitter").is_number()) return false;
      p.jitter = b.at("jitter").get<double>();
      if (p.jitter < 0.0 || p.jitter > 1.0) return false;
    }
    return true;
  }
  if (!allow_jitter) return false;  // per-job form: a bare number is refused
  auto d = read_delay(b);
  if (!d) return false;
  p.exponential = false;
  p.delay_ms = *d;
  return true;
}

// The name of the system when `j` is another system's policy form: one key
// naming the system, maybe with retryable_classes, budget or reason beside it.
std::optional<std::string> other_system_form(const json& j) {
  static const std::vector<std::string> kSystems{"bullmq", "temporal", "stepfunctions",
                                                 "sidekiq", "celery",  "k8s"};
  for (const std::string& name : kSystems) {
    if (j.contains(name)) return name;
  }
  return std::nullopt;
}

// {"bullmq": {attempts, backoff}} with its siblings is the native BullMQ
// form; BullMQ job options beyond those two keys are not read here.
std::optional<json> bullmq_as_native(const json& j) {
  if (!j.contains("bullmq") || !j.at("bullmq").is_object()) return std::nullopt;
  json native = j;
  native.erase("bullmq");
  for (const auto& [k, v] : j.at("bullmq").items()) {
    if (k != "attempts" && k != "backoff") return std::nullopt;
    native[k] = v;
  }
  return native;
}

// The monitors' own reading of a retry policy (docs/monitors.md has the table).
// `low_frequency` is empty when the effective schedule is unknown.
WitnessPolicy read_policy(const std::optional<json>& written, std::optional<bool> low_frequency,
                          bool* judged);

WitnessPolicy read_policy(const json& written, std::optional<bool> low_frequency, bool* judged) {
  return read_policy(std::optional<json>(written), low_frequency, judged);
}

WitnessPolicy read_policy(const std::optional<json>& written, std::optional<bool> low_frequency,
                          bool* judged) {
  WitnessPolicy p;
  *judged = true;
  auto invalid = [&](std::string why) {
    p = WitnessPolicy{};
    p.why_invalid = std::move(why);
    return p;
  };
  if (!written) return invalid("no retry policy");
  const json& j = *written;
  if (j.is_string() && j.get<std::string>() == "auto") {
    if (!low_frequency) {
      *judged = false;
      return invalid("\"auto\" with a schedule the monitors cannot read");
    }
    p.valid = true;
    p.per_slot = true;
    p.all_classes = true;
    p.exponential = true;
    p.retries_max = *low_frequency ? 3 : 1;
    p.delay_ms = *low_frequency ? 30 * kMinuteMs : 60 * kSecondMs;
    return p;
  }
  if (!j.is_object()) return invalid("not an object nor \"auto\"");
  if (const auto native = bullmq_as_native(j)) return read_policy(*native, low_frequency, judged);
  if (const auto system = other_system_form(j)) {
    // Another system's form ({"temporal": {...}}, ...): the monitors keep no
    // second copy of six systems' conversions (docs/policies.md), so they do
    // not judge this job's retries; the run shows it as unchecked (ok*).
    *judged = false;
    return invalid("a " + *system + " policy, which the monitors do not read");
  }
  const bool bullmq = j.contains("attempts");
  const std::vector<std::string> keys =
      bullmq
          ? std::vector<std::string>{"attempts", "backoff", "retryable_classes", "budget", "reason"}
          : std::vector<std::string>{"max",    "backoff_sec", "backoff", "retryable_classes",
                                     "reason", "budget"};
  for (const auto& [k, v] : j.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) return invalid("key " + k);
  }
  const char* count_key = bullmq ? "attempts" : "max";
  if (!j.contains(count_key) || !j.at(count_key).is_number_integer()) {
    return invalid(std::string(count_key) + " missing or not an integer");
  }
  const auto count = j.at(count_key).get<std::int64_t>();
  if (count < (bullmq ? 1 : 0) || count > 1001) return invalid("count out of range");
  p.retries_max = static_cast<int>(bullmq ? count - 1 : count);
  p.per_slot = bullmq;
  p.all_classes = bullmq;
  if (!bullmq) p.classes = {"timeout", "network", "provider_5xx", "rate_limit"};
  if (j.contains("retryable_classes")) {
    const json& list = j.at("retryable_classes");
    if (!list.is_array()) return invalid("retryable_classes not a list");
    p.all_classes = false;
    p.classes.clear();
    for (const json& c : list) {
      if (!c.is_string()) return invalid("class not a string");
      const std::string name = c.get<std::string>();
      const auto& vocab = class_vocabulary();
      if (std::find(vocab.begin(), vocab.end(), name) == vocab.end()) {
        return invalid("unknown class " + name);
      }
      p.classes.insert(name);
    }
  }
  if (j.contains("budget")) {
    if (!j.at("budget").is_string()) return invalid("budget not a string");
    const std::string b = j.at("budget").get<std::string>();
    if (b != "per_slot" && b != "per_episode") return invalid("budget " + b);
    p.per_slot = b == "per_slot";
  }
  bool has_backoff = false;
  if (!bullmq && j.contains("backoff_sec")) {
    if (j.contains("backoff")) return invalid("backoff_sec and backoff");
    if (!j.at("backoff_sec").is_number_integer() || j.at("backoff_sec").get<std::int64_t>() < 0) {
      return invalid("backoff_sec");
    }
    p.delay_ms = j.at("backoff_sec").get<std::int64_t>() * kSecondMs;
    has_backoff = true;
  } else if (j.contains("backoff")) {
    if (!read_backoff(j.at("backoff"), p, bullmq)) return invalid("backoff");
    has_backoff = true;
  }
  // BullMQ without a backoff retries at once; the per-job form needs one.
  if (p.retries_max > 0 && !has_backoff && !bullmq) return invalid("no backoff");
  p.valid = true;
  return p;
}

const json* field(const TraceEvent& e, std::string_view key) {
  const auto it = e.data.find(key);
  return it == e.data.end() ? nullptr : &*it;
}

std::string slot_text(std::optional<TimeMs> slot) {
  return slot ? format_instant(*slot) : std::string("(no slot)");
}

bool is_boot(const std::string& type) { return type == "process_boot"; }
bool is_crash(const std::string& type) {
  return type == "process_crash" || type == "disk_process_crashed" || type == "disk_crash";
}

bool is_notification(const std::string& type) {
  const auto& names = notification_event_names();
  return std::find(names.begin(), names.end(), type) != names.end();
}

int stage_rank(const std::string& s) {
  if (s == "DESIGNING") return 0;
  if (s == "BUILDING") return 1;
  if (s == "REVIEWING") return 2;
  if (s == "DONE" || s == "DESIGN_FAILED") return 3;
  return -1;
}
bool terminal_stage(const std::string& s) { return s == "DONE" || s == "DESIGN_FAILED"; }

constexpr DurationMs kScheduleHorizonMs = 4 * 366 * kDayMs;  // a search limit, like everything
constexpr DurationMs kConfigDeferralMs = kHourMs;
constexpr std::size_t kAgentPrefixChars = 8;  // logs may carry this much of an agent id

}  // namespace

// ---------------------------------------------------------------- WitnessCron

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

// ---------------------------------------------------------------- WitnessPolicy

bool WitnessPolicy::retries_class(const std::string& failure_class) const {
  if (!valid || retries_max <= 0) return false;
  return all_classes || classes.count(failure_class) != 0;
}

DurationMs WitnessPolicy::base_delay_ms(int n) const {
  double base = static_cast<double>(delay_ms);
  if (exponential) base = std::round(base * std::pow(2.0, std::min(n - 1, 40)));
  if (linear) base *= static_cast<double>(n);
  if (cap_ms) base = std::min(base, static_cast<double>(*cap_ms));
  return static_cast<DurationMs>(base);
}

DurationMs WitnessPolicy::min_delay_ms(int n) const {
  const double low = std::floor(static_cast<double>(base_delay_ms(n)) * (1.0 - jitter));
  // 1 ms of slack for rounding on either side.
  return std::max<DurationMs>(0, static_cast<DurationMs>(low) - 1);
}

DurationMs WitnessPolicy::max_delay_ms(int n) const { return base_delay_ms(n) + 1; }

// The token client's reuse margin (docs/semantics.md §7), the monitors' own copy.
constexpr DurationMs kTokenReuseMarginMs = 60 * 1000;

// ---------------------------------------------------------------- the table

const std::vector<InvariantSpec>& invariant_specs() {
  // Event types each monitor reads (docs/monitors.md lists them with their
  // source; docs/trace-events.md the fields).
  static const std::vector<InvariantSpec> kSpecs{
      {"stage_monotonic", {"durable_stage"}},
      {"retries_bounded",
       {"queue_take", "queue_intent", "queue_done", "durable_job_state", "outbox_add",
        "queue_add"}},
      {"schedule_kept", {"queue_add", "durable_job_state"}},
      {"nothing_lost",
       {"queue_take", "queue_intent", "queue_done", "durable_job_state", "outbox_add",
        "durable_delivery", "message_delivered",
        "message_refused", "queue_take", "queue_add", "service_reply"}},
      {"no_duplicate_delivery",
       {"message_delivered", "durable_delivery", "queue_take", "queue_intent", "queue_done",
        "durable_job_state"}},
      {"state_durable",
       {"store_corrupt_injected", "disk_corrupted", "state_tail_dropped", "disk_write",
        "disk_append", "disk_remove", "disk_rename", "disk_lock", "disk_unlock", "queue_take",
        "queue_intent", "queue_done", "durable_job_state", "outbox_add"}},
      {"token_reissue_bounded",
       {"service_call", "service_reply", "auth_rejected", "token_issued", "token_issue_failed",
        "token_presented"}},
      {"item_queries_bounded",
       {"service_call", "service_reply", "durable_stage", "agent_removed", "agent_restored",
        "instance_changed"}},
      {"no_secret_leak", {"*"}},
      {"deterministic", {}},
      {"bounded_run", {"*"}},
  };
  return kSpecs;
}

const std::vector<std::string>& shared_reads() {
  static const std::vector<std::string> kReads{
      "process_boot",  "process_crash",    "disk_process_crashed", "disk_crash",
      "service_call",  "queue_add",
      "durable_delivery", "outbox_add",    "queue_take",           "queue_intent",
      "queue_done",    "queue_cancel",     "durable_job_state"};
  return kReads;
}

const std::vector<std::string>& invariant_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const InvariantSpec& spec : invariant_specs()) names.push_back(spec.name);
    return names;
  }();
  return kNames;
}

namespace {

// The union of every declared subscription: MonitorSet::observe drops the rest.
const std::set<std::string>& subscribed_types() {
  static const std::set<std::string> kTypes = [] {
    std::set<std::string> types(shared_reads().begin(), shared_reads().end());
    for (const InvariantSpec& spec : invariant_specs()) {
      for (const std::string& t : spec.reads) {
        if (t != "*") types.insert(t);
      }
    }
    return types;
  }();
  return kTypes;
}

}  // namespace

// ---------------------------------------------------------------- MonitorSet

MonitorSet::MonitorSet(const Scenario& scenario)
    : start_ms_(scenario.start_ms), max_events_(scenario.queue.max_events) {
  notifications_seen_ = scenario.services.messenger.has_value();
  if (const auto lead = env_lookup(scenario.env, "AGENT_LEAD_ID"); lead && !lead->empty()) {
    const std::string id(*lead);
    lead_prefix_ = id.substr(0, kAgentPrefixChars);
    if (scenario.services.orchestrator) {
      for (const OrchestratorAgent& a : scenario.services.orchestrator->agents) {
        if (a.id == id && a.present) lead_present_ = true;
      }
    }
  }
  for (const JobSpec& spec : scenario.jobs) {
    JobWatch w;
    w.id = spec.id;
    w.delivers = spec.kind == JobKind::group || spec.kind == JobKind::publish;
    if (spec.kind == JobKind::group) {
      for (const GroupTask& t : spec.tasks) {
        w.tasks.push_back({t.id, std::string(to_string(t.produces)), t.model_calls});
      }
    }
    std::string expr = spec.schedule;
    bool schedule_known = true;
    if (spec.schedule_env) {
      const auto v = env_lookup(scenario.env, *spec.schedule_env);
      if (v && v->empty()) {
        schedule_known = false;  // no schedule: asserted never to run (check_never_runs)
        w.never_runs = true;
      } else if (v) {
        expr = std::string(*v);
      }
    }
    if (schedule_known) {
      std::string why;
      w.cron = WitnessCron::parse(expr, &why);
      if (!w.cron) unchecked("schedule_kept", spec.id, why);
    }
    bool judged = true;
    std::optional<bool> low;
    if (w.cron) low = w.cron->low_frequency();
    w.policy = read_policy(spec.retry_policy, low, &judged);
    if (!judged) unchecked("retries_bounded", spec.id, w.policy.why_invalid);
    if (!judged) w.policy.why_invalid = "unjudged";
    jobs_.emplace(spec.id, std::move(w));
    for (const ReconcileItem& item : spec.items) stages_[item.issue] = item.stage;
  }
  // Full agent ids are secrets (logs carry the first 8 characters only); an id
  // no longer than that prefix cannot be hidden by the rule, so it is not one.
  auto add_agent = [this](const std::string& id) {
    if (id.size() > kAgentPrefixChars) add_secret(id);
  };
  if (scenario.services.orchestrator) {
    for (const OrchestratorAgent& a : scenario.services.orchestrator->agents) add_agent(a.id);
  }
  for (const auto& [key, value] : scenario.env) {
    if (key.rfind("AGENT_", 0) == 0 && key.size() > 3 && key.substr(key.size() - 3) == "_ID") {
      add_agent(value);
    }
  }
}

void MonitorSet::add_secret(std::string value) {
  if (value.empty()) return;
  if (std::find(secrets_.begin(), secrets_.end(), value) != secrets_.end()) return;
  secrets_.push_back(std::move(value));
}

const WitnessPolicy* MonitorSet::policy_of(const std::string& job) const {
  const auto it = jobs_.find(job);
  return it == jobs_.end() ? nullptr : &it->second.policy;
}

void MonitorSet::add_locked_store(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  lock_dirs_.insert(std::move(dir));
}

void MonitorSet::unchecked(std::string invariant, std::string subject, std::string why) {
  unchecked_.push_back({{"invariant", std::move(invariant)},
                        {"subject", std::move(subject)},
                        {"why", std::move(why)}});
}

MonitorSet::JobWatch* MonitorSet::job_watch(const std::string& id) {
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

MonitorSet::SlotWatch& MonitorSet::slot_watch(const std::string& job, TimeMs slot) {
  auto it = slots_.find({job, slot});
  if (it == slots_.end()) {
    SlotWatch w;
    w.job = job;
    w.slot = slot;
    it = slots_.emplace(std::make_pair(job, slot), std::move(w)).first;
  }
  return it->second;
}

std::optional<Violation> MonitorSet::observe(const TraceEvent& e, std::size_t i) {
  Found out;
  ++events_seen_;
  last_t_ = e.t;
  if (!bounded_fired_ && static_cast<std::int64_t>(events_seen_) > max_events_) {
    bounded_fired_ = true;
    out.push_back(
        {"bounded_run", i, e.t, fmt::format("the run passed its bound of {} events", max_events_)});
  }
  if (pending_finish_) {
    note_pending_finish(e);
    flush_pending_finish(out);
  }
  if (subscribed_types().count(e.type) == 0) {
    // Not read by any monitor: only its text is searched for secrets.
    if (!secrets_.empty()) check_secrets(to_json_line(e), i, e.t, "the trace", out);
    return report(std::move(out));
  }
  for (const auto& [run_event, index] : run_facts_of(e, i)) run_checks(run_event, index, out);
  if (is_boot(e.type)) on_boot_or_crash(e, i, out, true);
  if (is_crash(e.type)) on_boot_or_crash(e, i, out, false);
  if (const std::optional<TraceEvent> notice = notification_of(e)) {
    ++notifications_total_[notice->type];
    if (JobWatch* j = job_watch(notice->job)) ++j->notifications[notice->type];
    if (notice->slot) {
      if (const auto it = slots_.find({notice->job, *notice->slot}); it != slots_.end()) {
        ++it->second.notifications[notice->type];
      }
    }
    run_checks(*notice, i, out);
  }
  run_checks(e, i, out);
  if (!secrets_.empty()) check_secrets(to_json_line(e), i, e.t, "the trace", out);
  return report(std::move(out));
}

// A notification as a fact of the world: the message the core committed to
// send, as the queue's outbox holds it (`outbox_add`: its event, job, slot,
// attempt and failure class), read once per notification (the same message
// to several targets, or added again by a replayed intent, is one). The
// checks then see it under its event's name. The core's log line of the same
// notification is not read.
std::optional<TraceEvent> MonitorSet::notification_of(const TraceEvent& e) {
  if (e.type != "outbox_add") return std::nullopt;
  const std::string event = e.str("event");
  if (!is_notification(event)) return std::nullopt;
  const std::string key = fmt::format("{}|{}|{}|{}|{}", event, e.job, slot_text(e.slot),
                                      e.num("attempt"), e.str("at"));
  if (!notices_seen_.insert(key).second) return std::nullopt;
  TraceEvent n = e;
  n.type = event;
  n.service.clear();
  return n;
}

// Runs as facts of the world: a run is the queue's take of an entry
// (`queue_take`) until the queue finishes it (`queue_done`). The checks see
// it as a `run_started` (at the take's index and time) and a `run_finished`
// when it finished with its intent written (`queue_intent`); the outcome is
// what the run left in the durable state store, as the world read it
// (`durable_job_state`: the job's row mirrors its last run; `ok` is a
// success, anything else a failure of the row's `failure_class`). A retry
// taken and finished without an intent while the store is known corrupt was
// dropped (`retry_dropped`); a run cut by a crash started and never finished.
// A pending retry the queue cancels is superseded (`retry_superseded`). The
// core's run_started / run_finished / retry_dropped / retry_superseded /
// run_stalled lines are not read.
std::vector<std::pair<TraceEvent, std::size_t>> MonitorSet::run_facts_of(const TraceEvent& e,
                                                                        std::size_t i) {
  std::vector<std::pair<TraceEvent, std::size_t>> out;
  const auto make = [&](const OpenRun& r, const char* type, TimeMs t) {
    TraceEvent x;
    x.t = t;
    x.type = type;
    x.job = r.job;
    x.slot = r.slot;
    x.data = {{"kind", r.kind}, {"attempt", r.attempt}};
    return x;
  };
  if (e.type == "durable_job_state") {
    note_durable_state(e);
    for (auto& [id, r] : open_runs_) r.wrote = r.wrote || r.job == e.job;
  } else if (e.type == "queue_take" && e.slot) {
    open_runs_[static_cast<std::uint64_t>(e.num("id"))] =
        OpenRun{e.job, *e.slot, e.str("kind"), e.num("attempt"), i, e.t, false};
  } else if (e.type == "queue_intent") {
    if (auto it = open_runs_.find(static_cast<std::uint64_t>(e.num("id"))); it != open_runs_.end()) {
      it->second.intent = true;
    }
  } else if (e.type == "queue_done") {
    const auto it = open_runs_.find(static_cast<std::uint64_t>(e.num("id")));
    if (it == open_runs_.end()) return out;
    const OpenRun r = it->second;
    open_runs_.erase(it);
    if (r.intent && !r.wrote && corrupt_mode_) {
      // The store refuses writes: the outcome is what the run's finish
      // carries (a failure notice, a retry), judged after it (flush_pending_finish).
      out.emplace_back(make(r, "run_started", r.take_t), r.take_index);
      pending_finish_ = PendingFinish{r, i, e.t, std::nullopt};
    } else if (r.intent) {
      out.emplace_back(make(r, "run_started", r.take_t), r.take_index);
      TraceEvent done = make(r, "run_finished", e.t);
      const json& facts = durable_state_[r.job];
      const json& status = facts.is_object() ? facts.value("retry_status", json()) : json();
      const bool ok = !status.is_string() || status.get<std::string>() == "ok";
      done.data["outcome"] = ok ? "success" : "failure";
      if (!ok) {
        const json cls = facts.value("failure_class", json());
        done.data["failure_class"] = cls.is_string() ? cls.get<std::string>() : "unknown";
      }
      out.emplace_back(std::move(done), i);
    } else if (r.kind == "retry" && corrupt_mode_) {
      out.emplace_back(make(r, "retry_dropped", e.t), i);
    }
  } else if (e.type == "queue_cancel" && e.slot) {
    out.emplace_back(make(OpenRun{e.job, *e.slot, "retry", e.num("attempt")}, "retry_superseded", e.t),
                     i);
  } else if (is_crash(e.type)) {
    for (const auto& [id, r] : open_runs_) out.emplace_back(make(r, "run_started", r.take_t), r.take_index);
    open_runs_.clear();
  }
  return out;
}

// A run finished while the store refused writes: judged at the next event,
// the first of its finish (the queue adds a retry, then the outbox its
// notices): a failure notice for its job or a retry queued makes it a
// failure of the notice's class, otherwise it succeeded.
void MonitorSet::note_pending_finish(const TraceEvent& e) {
  if (!pending_finish_ || e.job != pending_finish_->run.job) return;
  const std::string event = e.type == "outbox_add" ? e.str("event") : std::string();
  const bool failure_notice =
      event == "retry_scheduled" || event == "retry_exhausted" || event == "failed_permanent";
  if (failure_notice && !pending_finish_->failure_class) {
    pending_finish_->failure_class = e.str("failure_class", "unknown");
  } else if (e.type == "queue_add" && e.str("kind") == "retry" && !pending_finish_->failure_class) {
    pending_finish_->failure_class = "unknown";
  }
}

void MonitorSet::flush_pending_finish(Found& out) {
  const PendingFinish p = *pending_finish_;
  pending_finish_.reset();
  TraceEvent done;
  done.t = p.t;
  done.type = "run_finished";
  done.job = p.run.job;
  done.slot = p.run.slot;
  done.data = {{"kind", p.run.kind}, {"attempt", p.run.attempt},
               {"outcome", p.failure_class ? "failure" : "success"}};
  if (p.failure_class) done.data["failure_class"] = *p.failure_class;
  run_checks(done, p.index, out);
}

// The job's durable state as the world last read it; a slot whose durable
// record shows a stall (stalled_count >= 1) may fail permanently on the next
// stall whatever its budget (docs/semantics.md §5).
void MonitorSet::note_durable_state(const TraceEvent& e) {
  durable_state_[e.job] = e.data;
  if (job_watch(e.job) == nullptr) return;
  const json* slots = field(e, "slots");
  if (slots == nullptr || !slots->is_object()) return;
  for (const auto& [key, record] : slots->items()) {
    const auto t = parse_instant(key);
    if (!t.ok() || !record.is_object()) continue;
    const json stalled = record.value("stalled_count", json(0));
    if (stalled.is_number_integer() && stalled.get<std::int64_t>() >= 1) {
      slot_watch(e.job, *t).stalled = true;
    }
  }
}

void MonitorSet::run_checks(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type == "service_call") {
    ++service_calls_[e.service];
    if (JobWatch* j = job_watch(e.job)) ++j->calls;
  }
  check_stage(e, i, out);
  check_retries(e, i, out);
  check_schedule(e, i, out);
  check_delivery(e, i, out);
  check_durable(e, i, out);
  check_tokens(e, i, out);
  check_items(e, i, out);
  check_retry_window(e, i, out);
  check_never_runs(e, i, out);
  check_slot_due_at_firing(e, i, out);
  check_group_verdict(e, i, out);
  track_recovery(e, i);
  track_slots(e, i);
}

// Keeps what one event showed; returns the first in the order of invariant_names().
std::optional<Violation> MonitorSet::report(Found out) {
  if (out.empty()) return std::nullopt;
  // The first in the order of invariant_names(), so the answer does not depend
  // on the order the checks ran in.
  const auto& names = invariant_names();
  std::stable_sort(out.begin(), out.end(), [&](const Violation& a, const Violation& b) {
    return std::find(names.begin(), names.end(), a.invariant) <
           std::find(names.begin(), names.end(), b.invariant);
  });
  for (const Violation& v : out) all_.push_back(v);
  return out.front();
}

std::optional<Violation> MonitorSet::observe_text(std::string_view text, std::size_t index,
                                                  TimeMs t) {
  Found out;
  check_secrets(text, index, t, "a log line or report", out);
  if (out.empty()) return std::nullopt;
  for (const Violation& v : out) all_.push_back(v);
  return out.front();
}

void MonitorSet::on_boot_or_crash(const TraceEvent& e, std::size_t, Found&, bool boot) {
  if (!boot) {
    for (auto& [id, j] : jobs_) {
      j.success_unannounced.reset();
      j.group_run.reset();  // a run cut by the crash is not judged
    }
    lock_holders_.clear();  // a crash releases every lock
  }
  // A send whose ledger record had not been written when the process went
  // down is the at-least-once window: one more delivery of it is allowed.
  for (auto& [key, s] : sends_) {
    if (s.window_open) {
      s.window_open = false;
      ++s.window_cuts;
    }
  }
  // Request ids repeat when a stalled run re-runs after a restart.
  requests_.clear();
  corrupt_mode_ = false;
  if (boot) {
    if (e.type == "process_boot" || !up_) ++boots_;
    up_ = true;
    boot_t_ = e.t;
    if (corrupt_index_) {
      boot_after_corruption_ = true;
      if (!boot_after_corruption_index_) boot_after_corruption_index_ = events_seen_ - 1;
    }
  } else {
    up_ = false;
  }
}

// stage_monotonic, from the world's reading of the durable pipeline file
// (`durable_stage`), never the core's stage_changed: against the monitor's own
// record of the item's stage (initially the scenario's).
void MonitorSet::check_stage(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type != "durable_stage") return;
  const std::string to = e.str("stage");
  const auto it = stages_.find(e.item);
  if (it == stages_.end()) {
    stages_[e.item] = to;
    return;
  }
  const std::string prev = it->second;
  if (terminal_stage(prev) && to != prev) {
    out.push_back({"stage_monotonic", i, e.t,
                   fmt::format("item {} left terminal stage {} for {}", e.item, prev, to)});
  } else if (stage_rank(prev) >= 0 && stage_rank(to) >= 0 && stage_rank(to) < stage_rank(prev)) {
    out.push_back({"stage_monotonic", i, e.t,
                   fmt::format("item {} moved back from {} to {}", e.item, prev, to)});
  }
  stages_[e.item] = to;
}

void MonitorSet::check_retries(const TraceEvent& e, std::size_t i, Found& out) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr || !e.slot) return;
  const bool judged = j->policy.valid || j->policy.why_invalid != "unjudged";
  const WitnessPolicy& p = j->policy;
  if (e.type == "run_started" && e.str("kind") == "retry") {
    SlotWatch& s = slot_watch(e.job, *e.slot);
    const int attempt = static_cast<int>(e.num("attempt"));
    const bool fresh = p.per_slot ? s.retry_attempts.insert(attempt).second
                                  : j->episode_attempts.insert({*e.slot, attempt}).second;
    if (fresh) ++j->retries;
    if (corrupt_mode_) {
      out.push_back({"state_durable", i, e.t,
                     fmt::format("job {} slot {}: a retry ran while the state store is corrupt",
                                 e.job, slot_text(e.slot))});
    }
    if (!judged || !fresh) return;
    const int n = p.per_slot ? static_cast<int>(s.retry_attempts.size())
                             : static_cast<int>(j->episode_attempts.size());
    const auto& cls = p.per_slot ? s.last_failure_class : j->last_failure_class;
    const auto& failed_t = p.per_slot ? s.last_failure_t : j->last_failure_t;
    if (!p.valid) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: retried although its policy is invalid ({})",
                                 e.job, slot_text(e.slot), p.why_invalid)});
    } else if (n > p.retries_max) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: retry {} exceeds the policy's {} ({})", e.job,
                                 slot_text(e.slot), n, p.retries_max,
                                 p.per_slot ? "per_slot" : "per_episode")});
    } else if (cls && !p.retries_class(*cls)) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: retried after a {} failure, a class its policy "
                                 "does not retry",
                                 e.job, slot_text(e.slot), *cls)});
    } else if (failed_t && e.t < *failed_t + p.min_delay_ms(n)) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: retry {} ran {} after the failure, before its "
                                 "backoff of {}",
                                 e.job, slot_text(e.slot), n, format_duration(e.t - *failed_t),
                                 format_duration(p.min_delay_ms(n) + 1))});
    }
    return;
  }
  if (e.type == "retry_scheduled" && judged) {
    const std::string cls = e.str("failure_class");
    if (!p.valid) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: a retry was scheduled although its policy is "
                                 "invalid ({})",
                                 e.job, slot_text(e.slot), p.why_invalid)});
    } else if (!cls.empty() && !p.retries_class(cls)) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: a retry was scheduled for class {}, which its "
                                 "policy does not retry",
                                 e.job, slot_text(e.slot), cls)});
    } else if (e.num("attempt") > p.retries_max) {
      out.push_back({"retries_bounded", i, e.t,
                     fmt::format("job {} slot {}: retry {} scheduled, beyond the policy's {}",
                                 e.job, slot_text(e.slot), e.num("attempt"), p.retries_max)});
    }
  }
}

// schedule_kept, from the queue's own record of each hand-out (`queue_add`,
// kind regular) and the durable state the world read after it
// (`durable_job_state`), never the core's slot_due / slot_misfire lines.
void MonitorSet::check_schedule(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type == "queue_add" && e.str("kind") == "regular" && e.slot) return on_handout(e, i, out);
  if (e.type == "durable_job_state") check_durable_schedule(e, i, out);
}

// A slot handed out: a firing of the effective schedule (check_slot_due_at_firing
// says so when it is not), never older than the last one, none skipped since;
// the firings due since the slot are folded into this late run (marked
// coalesced here, from the monitor's own matcher), and the job's next durable
// write must count them and move next_run_at to the first firing after now.
void MonitorSet::on_handout(const TraceEvent& e, std::size_t i, Found& out) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr) return;
  const TimeMs s = *e.slot;
  if (j->pending_misfire && j->pending_misfire->coalesced > 0 && !corrupt_mode_) {
    out.push_back({"schedule_kept", i, e.t,
                   fmt::format("job {}: {} slots after {} were folded into its late run without a "
                               "misfire record",
                               e.job, j->pending_misfire->coalesced,
                               format_instant(j->pending_misfire->slot))});
  }
  j->pending_misfire.reset();
  if (!j->cron || j->cron->between(s - 1, s, 1).empty()) return;  // skipped loudly / fired already
  const WitnessCron& cron = *j->cron;
  const bool again = slots_.count({e.job, s}) != 0 && j->last_slot && s <= *j->last_slot;
  if (again && !corrupt_mode_ && j->last_handed != s) {
    // The same slot twice in a row is a crash between the queue add and the
    // state write (harmless: the add is idempotent); an older one means a
    // restart moved the schedule back. A corrupt store (fail closed) cannot
    // know its schedule, so there the re-handout is expected.
    out.push_back({"schedule_kept", i, e.t,
                   fmt::format("job {}: slot {} handed out again after {} (the schedule moved "
                               "back)",
                               e.job, format_instant(s),
                               format_instant(j->last_handed.value_or(*j->last_slot)))});
  }
  j->last_handed = s;
  if (!again) check_none_skipped(*j, s, e, i, out);
  const auto due_after = cron.between(s, e.t, 1'000'000);
  if (!again) {
    j->pending_misfire =
        JobWatch::PendingMisfire{s, static_cast<std::int64_t>(due_after.size()), i};
    j->last_slot = due_after.empty() ? s : due_after.back();
    mark_coalesced(e.job, s, due_after, i);
  }
  j->pending_next = JobWatch::PendingNext{s, cron.next_after(std::max(s, e.t), kScheduleHorizonMs)};
}

void MonitorSet::check_none_skipped(JobWatch& j, TimeMs s, const TraceEvent& e, std::size_t i,
                                    Found& out) {
  const TimeMs prev = j.last_slot.value_or(start_ms_ - 1);
  if (s <= prev) {
    out.push_back({"schedule_kept", i, e.t,
                   fmt::format("job {}: slot {} handed out after the later slot {}", e.job,
                               format_instant(s), format_instant(prev))});
    return;
  }
  const auto skipped = j.cron->between(prev, s - 1, 1);
  if (!skipped.empty()) {
    out.push_back({"schedule_kept", i, e.t,
                   fmt::format("job {}: regular slot {} was skipped (never handed out nor "
                               "coalesced; next handed out: {})",
                               e.job, format_instant(skipped.front()), format_instant(s))});
  }
}

// Firings folded into the late run of `carrier` (at most 100, as a misfire
// record lists them); a slot already handed out keeps its own fate.
void MonitorSet::mark_coalesced(const std::string& job, TimeMs carrier,
                                const std::vector<TimeMs>& folded, std::size_t i) {
  constexpr std::size_t kListed = 100;
  for (std::size_t k = 0; k < folded.size() && k < kListed; ++k) {
    if (slots_.count({job, folded[k]}) != 0) continue;
    SlotWatch& w = slot_watch(job, folded[k]);
    w.carried_by = carrier;
    w.state = SlotState::coalesced;
    w.handed_index = i;
  }
}

// The job's durable write after a hand-out: the misfire counted exactly the
// folded firings (`coalesced_slots` grew by that many), and next_run_at is
// the schedule's first firing after the hand-out. Not judged while the store
// is corrupt (it writes nothing).
void MonitorSet::check_durable_schedule(const TraceEvent& e, std::size_t i, Found& out) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr) return;
  const json* count = field(e, "coalesced_slots");
  if (count == nullptr || !count->is_number_integer()) return;  // not a state row
  const std::int64_t coalesced = count->get<std::int64_t>();
  const std::int64_t before = std::exchange(j->durable_coalesced, coalesced);
  if (j->pending_misfire && !corrupt_mode_) {
    const std::int64_t want = j->pending_misfire->coalesced;
    if (coalesced - before != want) {
      out.push_back({"schedule_kept", i, e.t,
                     fmt::format("job {}: the late run of {} records {} coalesced slots, the "
                                 "schedule had {} more due by then",
                                 e.job, format_instant(j->pending_misfire->slot),
                                 coalesced - before, want)});
    }
    j->pending_misfire.reset();
  }
  if (!j->pending_next || corrupt_mode_) return;
  const JobWatch::PendingNext want = *j->pending_next;
  j->pending_next.reset();
  const json* got = field(e, "next_run_at");
  std::optional<TimeMs> got_next;
  if (got != nullptr && got->is_string()) {
    auto t = parse_instant(got->get<std::string>());
    if (t.ok()) got_next = *t;
  }
  if (got_next == want.next) return;
  out.push_back({"schedule_kept", i, e.t,
                 fmt::format("job {}: next_run_at is {} after handing out {}, the schedule's "
                             "next slot is {}",
                             e.job, got_next ? format_instant(*got_next) : "none",
                             format_instant(want.slot),
                             want.next ? format_instant(*want.next) : "none")});
}

void MonitorSet::track_slots(const TraceEvent& e, std::size_t i) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr || !e.slot) return;
  auto set = [&](SlotWatch& w, SlotState state) {
    w.state = state;
    w.state_index = i;
    w.state_t = e.t;
  };
  const std::string& type = e.type;
  if (type == "queue_add" && e.str("kind") == "regular") {
    SlotWatch& w = slot_watch(e.job, *e.slot);
    if (w.state == SlotState::handed && w.state_index == 0) {
      w.handed_index = i;
      set(w, SlotState::handed);
    }
    return;
  }
  if (type == "run_started") {
    SlotWatch& w = slot_watch(e.job, *e.slot);
    ++j->runs;
    if (e.str("kind") == "regular") {
      j->max_delay_ms = std::max<DurationMs>(j->max_delay_ms, e.t - *e.slot);
      // per_episode: a regular run starting supersedes the pending retry of an
      // earlier slot of the episode (the core logs retry_superseded for it).
    }
    w.run_index = i;
    ++w.runs;
    w.attempt_at.push_back(e.t);
    // The start is read when the run ends: a marker written meanwhile stays.
    if (w.state != SlotState::marked_skipped) set(w, SlotState::running);
    return;
  }
  if (type == "run_finished") {
    SlotWatch& w = slot_watch(e.job, *e.slot);
    w.stalled = false;
    const std::string outcome = e.str("outcome");
    if (outcome == "failure") {
      const std::string cls = e.str("failure_class", "unknown");
      w.last_failure_class = cls;
      w.last_failure_t = e.t;
      j->last_failure_class = cls;
      j->last_failure_t = e.t;
      set(w, SlotState::failed);
    } else {
      if (outcome == "success")
        set(w, w.state == SlotState::marked_skipped ? SlotState::skipped : SlotState::delivered);
      else if (outcome == "skipped")
        set(w, SlotState::skipped);
      else
        set(w, w.state == SlotState::marked_skipped ? SlotState::skipped : SlotState::delivered);
      j->episode_attempts.clear();
      j->episode_scheduled = 0;
      j->last_failure_class.reset();
      j->final_status = "ok";
    }
    return;
  }
  if (type == "retry_scheduled") {
    set(slot_watch(e.job, *e.slot), SlotState::retry_pending);
    j->final_status = "retrying";
  } else if (type == "retry_exhausted") {
    set(slot_watch(e.job, *e.slot), SlotState::exhausted);
    j->final_status = "retry_exhausted";
  } else if (type == "failed_permanent") {
    set(slot_watch(e.job, *e.slot), SlotState::failed_permanent);
    j->final_status = "failed";
  } else if (type == "retry_dropped") {
    // A queued retry the scheduler dropped because the store could not be
    // trusted: the slot ends failed, visibly (this event, state_corrupt).
    set(slot_watch(e.job, *e.slot), SlotState::retry_dropped);
    j->final_status = "failed";
  } else if (type == "retry_superseded") {
    SlotWatch& w = slot_watch(e.job, *e.slot);
    if (w.state == SlotState::retry_pending || w.state == SlotState::failed) set(w, SlotState::superseded);
  }
}

void MonitorSet::check_delivery(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type == "message_delivered") {
    const std::string kind = e.str("kind");
    if (kind == "failure_notice") {
      ++failure_notices_;  // may repeat on every retry, by design
      return;
    }
    if (kind != "delivery" || !e.slot) return;
    SendWatch& s = sends_[{e.job, *e.slot, e.str("target")}];
    if (s.delivered >= 1) {
      if (s.window_cuts > 0) {
        --s.window_cuts;
        ++s.duplicates_in_window;
      } else {
        out.push_back({"no_duplicate_delivery", i, e.t,
                       fmt::format("job {} slot {}: delivered to {} again (delivery {}) with no "
                                   "crash between the earlier send and its record",
                                   e.job, slot_text(e.slot), e.str("target"), s.delivered + 1)});
      }
    }
    ++s.delivered;
    s.window_open = true;
    return;
  }
  // nothing_lost, seen as it happens: a group or publish run that reports
  // success although nothing of the slot was ever delivered (and the slot was
  // not marked skipped) has lost the slot behind a success (001's bug).
  if (e.type == "run_finished" && e.str("outcome") == "success" && e.slot) {
    const JobWatch* j = job_watch(e.job);
    const auto slot_it = slots_.find({e.job, *e.slot});
    const bool skipped = slot_it != slots_.end() && slot_it->second.state == SlotState::marked_skipped;
    if (j != nullptr && j->delivers && !skipped) {
      bool delivered = false;
      for (auto it = sends_.lower_bound({e.job, *e.slot, std::string()});
           it != sends_.end() && std::get<0>(it->first) == e.job &&
           std::get<1>(it->first) == *e.slot;
           ++it) {
        if (it->second.delivered > 0) delivered = true;
      }
      if (!delivered) {
        out.push_back({"nothing_lost", i, e.t,
                       fmt::format("job {} slot {}: the run reported success but nothing of the "
                                   "slot was delivered and it was not marked skipped",
                                   e.job, slot_text(e.slot))});
      }
    }
  }
  if (!e.slot || e.job.empty()) return;
  if (e.type == "durable_delivery") return note_ledger(e, i);
  if (e.type == "queue_take") {
    if (JobWatch* j = job_watch(e.job); j != nullptr && j->delivers) {
      slot_watch(e.job, *e.slot).guard_in_run = false;  // a run of the slot begins
    }
  } else if ((e.type == "group_run_failed" ||
              (e.type == "run_finished" && e.str("outcome") == "failure"))) {
    const auto it = slots_.find({e.job, *e.slot});
    if (it != slots_.end() && it->second.guard_in_run) {
      out.push_back({"no_duplicate_delivery", i, e.t,
                     fmt::format("job {} slot {}: the send guard or slot marker was set by a run "
                                 "that failed",
                                 e.job, slot_text(e.slot))});
      it->second.guard_in_run = false;
    }
  }
}

// The delivery ledger as the world read it from the disk (`durable_delivery`):
// a target whose delivery is durably recorded closes its at-least-once window;
// a guard or marker that became durable during a run belongs to that run; a
// marker with the verdict skipped marks the slot skipped.
void MonitorSet::note_ledger(const TraceEvent& e, std::size_t i) {
  if (const json* to = field(e, "delivered_to"); to != nullptr && to->is_array()) {
    for (const json& target : *to) {
      if (target.is_string()) sends_[{e.job, *e.slot, target.get<std::string>()}].window_open = false;
    }
  }
  SlotWatch& w = slot_watch(e.job, *e.slot);
  const json* verdict = field(e, "verdict");
  const bool guard = e.flag("guard") || (verdict != nullptr && verdict->is_string());
  if (guard && !w.guard_durable) w.guard_in_run = true;
  w.guard_durable = guard;
  if (verdict != nullptr && verdict->is_string() && verdict->get<std::string>() == "skipped") {
    w.state = SlotState::marked_skipped;
    w.state_index = i;
    w.state_t = e.t;
  }
}

// state_durable, the lock (docs/semantics.md §5): a store's files change only
// under its lock. From the disk's own records: a directory in which a lock
// file was ever taken is a locked store; any write, append, rename or removal
// there by a process that holds none of its locks fires. A crash releases
// every lock.
void MonitorSet::check_locked_writes(const TraceEvent& e, std::size_t i, Found& out) {
  const auto dir_of = [](const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  };
  if (e.type == "disk_lock") {
    lock_holders_[e.str("path")] = e.num("process");
    lock_dirs_.insert(dir_of(e.str("path")));
    return;
  }
  if (e.type == "disk_unlock") {
    lock_holders_.erase(e.str("path"));
    return;
  }
  if (e.type != "disk_write" && e.type != "disk_append" && e.type != "disk_rename" &&
      e.type != "disk_remove") {
    return;
  }
  const std::string path = e.type == "disk_rename" ? e.str("to") : e.str("path");
  const std::string dir = dir_of(path);
  if (lock_dirs_.count(dir) == 0 || lock_holders_.count(path) != 0) return;  // the lock file itself
  const std::int64_t process = e.num("process");
  for (const auto& [lock, holder] : lock_holders_) {
    if (dir_of(lock) == dir && holder == process) return;
  }
  out.push_back({"state_durable", i, e.t,
                 fmt::format("{} of {} by process {} without the store's lock (held: {})",
                             e.type, path, process,
                             lock_holders_.empty() ? std::string("none") : "by another")});
}

void MonitorSet::check_durable(const TraceEvent& e, std::size_t i, Found& out) {
  check_locked_writes(e, i, out);
  if (note_state_damage(e, i)) return;
  if (check_corrupt_file_kept(e, i, out)) return;
  // Counters survive restarts: the n-th retry of a budget announces attempt n.
  if (e.type == "run_finished" && e.str("outcome") == "failure" && e.slot) {
    if (JobWatch* j = job_watch(e.job)) {
      (void)j;
      fresh_failure_.insert(e.job);
      fresh_slot_failure_.insert({e.job, *e.slot});
    }
    return;
  }
  if (e.type == "retry_scheduled" && e.slot) return check_retry_counter(e, i, out);
  if ((e.type == "retry_exhausted" || e.type == "failed_permanent") && e.slot) {
    check_budget_spent(e, i, out);
  }
}

// Damage the world did to a state file, and what the core said of it.
// True when `e` was one of those events.
bool MonitorSet::note_state_damage(const TraceEvent& e, std::size_t i) {
  if (e.type == "store_corrupt_injected" || e.type == "disk_corrupted") {
    const std::string path = e.str("path", e.str("file"));
    const bool state_file = e.type == "store_corrupt_injected" ||
                            path.find("retry_state.json") != std::string::npos ||
                            path.find("jobs.json") != std::string::npos ||
                            path.find("jobs_state.json") != std::string::npos;
    if (!state_file || path.empty()) return true;
    if (const json* applied = field(e, "applied");
        applied != nullptr && applied->is_boolean() && !applied->get<bool>()) {
      return true;  // the world could not damage the file: nothing to report
    }
    corrupt_paths_.push_back(path);
    if (!corrupt_index_) corrupt_index_ = i;
    corrupt_seen_by_core_ = false;
    boot_after_corruption_ = false;
    boot_after_corruption_index_.reset();
    return true;
  }
  if (e.type == "state_corrupt") {
    corrupt_mode_ = true;
    corrupt_seen_by_core_ = true;
    return true;
  }
  if (e.type == "state_tail_dropped") {
    // The core reported a damaged journal tail it dropped, and kept a copy
    // of the damaged file (kept_as): the damage is visible and its evidence
    // safe, so the store may replace that file from now on.
    corrupt_seen_by_core_ = true;
    if (e.str("kept_as").empty()) return true;
    const std::string file = e.str("file");
    corrupt_paths_.erase(std::remove(corrupt_paths_.begin(), corrupt_paths_.end(), file),
                         corrupt_paths_.end());
    return true;
  }
  return false;
}

// A corrupt state file is kept until an operator repairs it. True when `e`
// was a disk write, rename or removal.
bool MonitorSet::check_corrupt_file_kept(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type == "disk_rename" || e.type == "disk_write" || e.type == "disk_append" ||
      e.type == "disk_remove") {
    const std::string path = e.type == "disk_rename" ? e.str("to") : e.str("path");
    for (const std::string& bad : corrupt_paths_) {
      const bool same =
          path == bad || (path.size() > bad.size() &&
                          path.compare(path.size() - bad.size(), bad.size(), bad) == 0 &&
                          path[path.size() - bad.size() - 1] == '/');
      if (same) {
        out.push_back({"state_durable", i, e.t,
                       fmt::format("the corrupt state file {} was replaced ({}): a corrupt store "
                                   "must be kept until an operator repairs it",
                                   path, e.type)});
      }
    }
    return true;
  }
  return false;
}

// Counters survive restarts: the n-th retry of a budget announces attempt n,
// by the monitor's own count.
void MonitorSet::check_retry_counter(const TraceEvent& e, std::size_t i, Found& out) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr) return;
  if (corrupt_mode_) {
    out.push_back({"state_durable", i, e.t,
                   fmt::format("job {} slot {}: a retry was scheduled while the state store is "
                               "corrupt (its counters cannot be trusted)",
                               e.job, slot_text(e.slot))});
  }
  SlotWatch& s = slot_watch(e.job, *e.slot);
  const bool per_slot = j->policy.per_slot;
  const bool fresh = per_slot ? fresh_slot_failure_.erase({e.job, *e.slot}) != 0
                              : fresh_failure_.erase(e.job) != 0;
  if (!fresh) return;  // a replayed intent announces the same retry again
  int& count = per_slot ? s.scheduled : j->episode_scheduled;
  // The monitor's own count is the truth; the core's announced attempt is
  // only compared with it, never adopted (a counter not reset after a
  // success announces a higher attempt, a reset one a lower).
  const std::int64_t attempt = e.num("attempt");
  if (attempt < count + 1 && j->policy.valid) {
    out.push_back({"state_durable", i, e.t,
                   fmt::format("job {} slot {}: retry counter went back to {} after {} retries "
                               "of the same budget (lost across a restart?)",
                               e.job, slot_text(e.slot), attempt, count)});
  } else if (attempt > count + 1 && j->policy.valid) {
    out.push_back({"state_durable", i, e.t,
                   fmt::format("job {} slot {}: retry {} announced after only {} retries of the "
                               "budget (a counter not reset after a success?)",
                               e.job, slot_text(e.slot), attempt, count)});
  }
  ++count;
}

// retry_exhausted and failed_permanent only once the budget allows them.
void MonitorSet::check_budget_spent(const TraceEvent& e, std::size_t i, Found& out) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr) return;
  fresh_failure_.erase(e.job);
  fresh_slot_failure_.erase({e.job, *e.slot});
  if (!j->policy.valid || corrupt_mode_) return;
  SlotWatch& s = slot_watch(e.job, *e.slot);
  const int spent = j->policy.per_slot ? s.scheduled : j->episode_scheduled;
  const std::string cls = e.str("failure_class");
  if (e.type == "retry_exhausted" && spent < j->policy.retries_max) {
    out.push_back({"nothing_lost", i, e.t,
                   fmt::format("job {} slot {}: declared retry_exhausted after {} of {} retries",
                               e.job, slot_text(e.slot), spent, j->policy.retries_max)});
  } else if (e.type == "failed_permanent" && !s.stalled &&
             j->policy.retries_class(cls) && spent < j->policy.retries_max) {
    out.push_back({"nothing_lost", i, e.t,
                   fmt::format("job {} slot {}: failed permanently on {}, a class its policy "
                               "retries, with {} of {} retries left",
                               e.job, slot_text(e.slot), cls, j->policy.retries_max - spent,
                               j->policy.retries_max)});
  }
}

void MonitorSet::check_tokens(const TraceEvent& e, std::size_t i, Found& out) {
  check_token_reuse(e, i, out);
  const std::string rid = e.str("request_id");
  if (e.service == "brokerage" && !rid.empty()) {
    if (e.type == "service_call" && e.str("operation") != "issue_token") {
      last_sent_at_[rid] = e.t;
    } else if (e.type == "auth_rejected" && !e.str("fingerprint").empty()) {
      const std::string fp = e.str("fingerprint");
      rejected_fingerprint_[rid] = fp;
      const auto seen = unauthorized_seen_at_.find(fp);
      const auto sent = last_sent_at_.find(rid);
      if (seen != unauthorized_seen_at_.end() && sent != last_sent_at_.end() &&
          sent->second > seen->second) {
        out.push_back({"token_reissue_bounded", i, e.t,
                       fmt::format("request {} was sent at {} with token {}, which a 401 had "
                                   "already refused at {}: a rejected token must be dropped and "
                                   "reissued once, not reused",
                                   rid, format_instant(sent->second), fp,
                                   format_instant(seen->second))});
      }
    } else if (e.type == "service_reply" && e.num("status") == 401) {
      const auto fp = rejected_fingerprint_.find(rid);
      if (fp != rejected_fingerprint_.end()) unauthorized_seen_at_.emplace(fp->second, e.t);
    }
  }
  if (e.type == "service_reply" && !rid.empty() && e.str("operation") != "issue_token") {
    RequestWatch& r = requests_[rid];
    const json* status = field(e, "status");
    r.last_status = status != nullptr && status->is_number_integer()
                        ? std::optional<std::int64_t>(status->get<std::int64_t>())
                        : std::optional<std::int64_t>(-1);  // a transport error
    if (r.last_status == 401) ++r.unauthorized;
    return;
  }
  if (e.type != "token_issued" && e.type != "token_issue_failed") return;
  if (e.type == "token_issued") ++token_issues_;
  if (rid.empty()) return;
  RequestWatch& r = requests_[rid];
  const std::string reason = e.str("reason");
  if (r.last_status && *r.last_status != 401 && *r.last_status >= 0 &&
      (*r.last_status == 403 || *r.last_status == 429 || *r.last_status >= 500)) {
    out.push_back({"token_reissue_bounded", i, e.t,
                   fmt::format("request {}: a token was issued ({}) after a {} answer, which "
                               "never causes a reissue",
                               rid, reason, *r.last_status)});
    return;
  }
  if (r.unauthorized > 0 || reason == "after_401") {
    ++r.reissues;
    ++reissues_;
    if (r.unauthorized == 0) {
      out.push_back(
          {"token_reissue_bounded", i, e.t,
           fmt::format("request {}: a reissue after a 401 that the request never got", rid)});
    } else if (r.reissues > 1) {
      out.push_back(
          {"token_reissue_bounded", i, e.t,
           fmt::format("request {}: reissue {} for one request (at most one)", rid, r.reissues)});
    }
  }
}

// item_queries_bounded, config attempts at most hourly (docs/semantics.md §8),
// from the orchestrator's own answers and request times: a reply refusing a
// request about an item (400, 401, 403, 422: deferred 1 h like a config
// error), or a get_issue answer whose status needs a handoff to a later stage
// (own table: in_progress -> BUILDING, in_review -> REVIEWING, above the
// item's durable stage) while the lead agent is missing from the
// orchestrator's list, is a config error; the item's next get_issue less than
// 1 h after it fires (one validation query after an instance change is not an
// attempt).
void MonitorSet::check_config_attempts(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type == "agent_removed" || e.type == "agent_restored") {
    if (!lead_prefix_.empty() && e.str("agent") == lead_prefix_) {
      lead_present_ = e.type == "agent_restored";
    }
    return;
  }
  if (e.type == "instance_changed") {
    for (auto& [id, w] : items_) w.validation_allowed = true;
    return;
  }
  if (e.item.empty() || e.service != "orchestrator") return;
  ItemWatch& w = items_[e.item];
  if (e.type == "service_call" && e.str("operation") == "get_issue") {
    if (w.config_error_at && e.t < *w.config_error_at + kConfigDeferralMs) {
      if (w.validation_allowed) {
        w.validation_allowed = false;
        return;
      }
      out.push_back({"item_queries_bounded", i, e.t,
                     fmt::format("issue {} queried {} after a config error the orchestrator "
                                 "showed at {} (config attempts at most hourly)",
                                 e.item, format_duration(e.t - *w.config_error_at),
                                 format_instant(*w.config_error_at))});
    }
    return;
  }
  if (e.type != "service_reply") return;
  const std::int64_t status = e.num("status");
  if (status == 400 || status == 401 || status == 403 || status == 422) {
    w.config_error_at = e.t;
    return;
  }
  if (e.str("operation") != "get_issue" || status != 200) return;
  const std::string incoming = e.str("body_class");
  const int wanted = incoming == "in_progress" ? 1 : incoming == "in_review" ? 2 : -1;
  const auto st = stages_.find(e.item);
  const int current = st == stages_.end() ? -1 : stage_rank(st->second);
  if (wanted > current && current >= 0 && !lead_present_) w.config_error_at = e.t;
}

void MonitorSet::check_items(const TraceEvent& e, std::size_t i, Found& out) {
  check_config_attempts(e, i, out);
  if (e.item.empty()) return;
  ItemWatch& w = items_[e.item];
  const bool orchestrator = e.service == "orchestrator" || e.service.empty();
  if (e.type == "service_call" && orchestrator) {
    if (e.str("operation") == "get_issue") ++w.queries;
    if (w.not_found_at) {
      out.push_back({"item_queries_bounded", i, e.t,
                     fmt::format("issue {} queried again ({}) after its 404 at {}", e.item,
                                 e.str("operation"), format_instant(*w.not_found_at))});
    }
    return;
  }
  if (e.type == "service_reply" && orchestrator && e.num("status") == 404 && !w.not_found_at) {
    w.not_found_at = e.t;
    return;
  }
  // The latest reconcile error, as the item's durable record holds it.
  if (e.type == "durable_stage") w.reason = e.str("error");
}

// token_reissue_bounded, the reuse rule (docs/semantics.md §7): a cached token
// is reused only until 60 s before its expiry. The brokerage records the token
// every accepted request presented and its expiry (which is the client's known
// expiry at the latest: it counts from the issuance's send), so a request
// presented 60 s or less before that expiry breaks the rule.
void MonitorSet::check_token_reuse(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type != "token_presented") return;
  const auto expires = parse_instant(e.str("expires_at"));
  if (!expires.ok() || e.t < *expires - kTokenReuseMarginMs) return;
  out.push_back({"token_reissue_bounded", i, e.t,
                 fmt::format("request {} ({}) presented token generation {} {} before its expiry "
                             "at {}: a token is reused only until 60 s before it expires",
                             e.str("request_id", "?"), e.str("operation"), e.num("generation"),
                             format_duration(*expires - e.t), format_instant(*expires))});
}

// retries_bounded, the exact window: a retry the queue receives at the
// instant of a fresh failure is due within the policy's window for the n-th
// retry of the budget (n from the monitor's own count): no earlier than the
// jitter's floor, no later than the base delay. Read from the queue's own
// record (`queue_add`, kind retry: `ready_at`), not from the core's notice.
void MonitorSet::check_retry_window(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type != "queue_add" || e.str("kind") != "retry" || !e.flag("added") || !e.slot) return;
  JobWatch* j = job_watch(e.job);
  if (j == nullptr || !j->policy.valid) return;
  SlotWatch& s = slot_watch(e.job, *e.slot);
  const bool per_slot = j->policy.per_slot;
  const bool fresh = per_slot ? fresh_slot_failure_.count({e.job, *e.slot}) != 0
                              : fresh_failure_.count(e.job) != 0;
  const auto& failed_t = per_slot ? s.last_failure_t : j->last_failure_t;
  // A replayed or restored retry (after a boot) keeps its old due time.
  if (!fresh || !failed_t || *failed_t != e.t) return;
  const auto ready = parse_instant(e.str("ready_at"));
  if (!ready.ok()) return;
  const int n = (per_slot ? s.scheduled : j->episode_scheduled) + 1;
  if (n > j->policy.retries_max) {
    out.push_back({"retries_bounded", i, e.t,
                   fmt::format("job {} slot {}: retry {} queued, beyond the policy's {} ({})",
                               e.job, slot_text(e.slot), n, j->policy.retries_max,
                               per_slot ? "per_slot" : "per_episode")});
    return;
  }
  const DurationMs delay = *ready - e.t;
  const DurationMs lo = j->policy.min_delay_ms(n);
  const DurationMs hi = j->policy.max_delay_ms(n);
  if (delay < lo || delay > hi) {
    out.push_back({"retries_bounded", i, e.t,
                   fmt::format("job {} slot {}: retry {} queued {} after the failure, outside its "
                               "policy's window [{}, {}]",
                               e.job, slot_text(e.slot), n, format_duration(delay),
                               format_duration(lo + 1), format_duration(hi - 1))});
  }
}

// nothing_lost, the group verdict (docs/semantics.md §6) from world facts: a
// group run begins when the queue hands its slot out (`queue_take`); each
// task's result is its model-api reply (200 with body class summary/preview:
// a deliverable; 200 skip: a skip; anything else: a failure), or, for a task
// that makes no call, what the scenario scripts. The expected verdict (any
// deliverable: deliver; else any failure: failed; else skipped) is compared
// with what the world then saw for the slot: a skipped run that sent a
// failure notice or a failure notification, or queued a retry, or a failed one that sent a delivery,
// fires. Judged when the next run of the job is taken (a retry is queued, and
// notices sent, after the run returns) or at the end; a run without every
// task's reply is not judged.
void MonitorSet::check_group_verdict(const TraceEvent& e, std::size_t i, Found& out) {
  JobWatch* j = job_watch(e.job);
  if (j == nullptr || j->tasks.empty() || !e.slot) return;
  if (e.type == "queue_take") {
    judge_group_run(e.job, i, e.t, out);
    j->group_run = JobWatch::GroupRun{*e.slot, {}, false, false};
    return;
  }
  if (!j->group_run || j->group_run->slot != *e.slot) return;
  JobWatch::GroupRun& run = *j->group_run;
  if (e.type == "service_reply" && e.service == "model-api") {
    const std::string cls = e.str("body_class");
    const bool ok = e.num("status") == 200 && !cls.empty();
    run.results[e.str("target")] = !ok ? "failed" : (cls == "skip" ? "skip" : "deliverable");
  } else if (e.type == "message_delivered" || e.type == "message_refused") {
    const std::string kind = e.str("kind");
    const std::string event = e.str("event");
    if (kind == "failure_notice" ||
        (kind == "notification" && (event == "retry_scheduled" || event == "retry_exhausted" ||
                                    event == "failed_permanent"))) {
      run.failure_seen = true;
    }
    if (kind == "delivery") run.delivery_seen = true;
  } else if (e.type == "queue_add" && e.str("kind") == "retry") {
    run.failure_seen = true;
  }
}

void MonitorSet::judge_group_run(const std::string& job, std::size_t i, TimeMs t, Found& out) {
  JobWatch* j = job_watch(job);
  if (j == nullptr || !j->group_run) return;
  const JobWatch::GroupRun run = *j->group_run;
  j->group_run.reset();
  bool deliverable = false, failed = false;
  for (const JobWatch::Task& task : j->tasks) {
    std::string result;
    if (task.model_calls == 0) {
      result = task.produces == "skip" ? "skip" : "deliverable";
    } else if (const auto it = run.results.find(task.id); it != run.results.end()) {
      result = it->second;
    } else {
      return;  // not every task answered (a crash, a resumed delivery): not judged
    }
    deliverable = deliverable || result == "deliverable";
    failed = failed || result == "failed";
  }
  if (!deliverable && !failed && run.failure_seen) {
    out.push_back({"nothing_lost", i, t,
                   fmt::format("job {} slot {}: every task skipped (nothing failed, nothing to "
                               "deliver), yet the run was treated as failed (failure notice or "
                               "retry)",
                               job, format_instant(run.slot))});
  } else if (!deliverable && failed && run.delivery_seen) {
    out.push_back({"nothing_lost", i, t,
                   fmt::format("job {} slot {}: no task produced a deliverable and one failed, "
                               "yet a delivery was sent",
                               job, format_instant(run.slot))});
  }
}

// schedule_kept: a job whose environment override is set but empty has no
// schedule at all; any queue entry for it (the queue's own record) fires.
void MonitorSet::check_never_runs(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type != "queue_add" || !e.flag("added")) return;
  const JobWatch* j = job_watch(e.job);
  if (j == nullptr || !j->never_runs) return;
  out.push_back({"schedule_kept", i, e.t,
                 fmt::format("job {}: its schedule override is set but empty, so it must never "
                             "run, yet slot {} was queued",
                             e.job, slot_text(e.slot))});
}

// schedule_kept, from the queue's own record, whatever the core logs about
// the slot: a regular slot is a firing of the effective schedule (the
// monitor's own matcher), queued due at that firing.
void MonitorSet::check_slot_due_at_firing(const TraceEvent& e, std::size_t i, Found& out) {
  if (e.type != "queue_add" || e.str("kind") != "regular" || !e.flag("added") || !e.slot) return;
  const JobWatch* j = job_watch(e.job);
  if (j != nullptr && j->cron && j->cron->between(*e.slot - 1, *e.slot, 1).empty()) {
    out.push_back({"schedule_kept", i, e.t,
                   fmt::format("job {}: slot {} was queued, but the schedule does not fire then",
                               e.job, slot_text(e.slot))});
    return;
  }
  const auto ready = parse_instant(e.str("ready_at"));
  if (!ready.ok() || *ready == *e.slot) return;
  out.push_back({"schedule_kept", i, e.t,
                 fmt::format("job {}: slot {} was queued due at {}, not at its firing", e.job,
                             slot_text(e.slot), format_instant(*ready))});
}

// nothing_lost, the recovery notice (docs/semantics.md §4): after a failure
// notification reached the messenger (delivered or refused), a success owes
// a `recovered` notification. Judged at the end; a crash forgives it (the
// notification may be lost with the process).
void MonitorSet::track_recovery(const TraceEvent& e, std::size_t i) {
  if (!notifications_seen_) return;
  JobWatch* j = job_watch(e.job);
  if (j == nullptr) return;
  if ((e.type == "message_delivered" || e.type == "message_refused") &&
      e.str("kind") == "notification") {
    const std::string event = e.str("event");
    if (event == "retry_scheduled" || event == "retry_exhausted" || event == "failed_permanent") {
      j->showed_failure = true;
    } else if (event == "recovered") {
      j->showed_failure = false;
      j->success_unannounced.reset();
    }
    return;
  }
  if (e.type == "run_finished" && e.str("outcome") == "success" && j->showed_failure &&
      !j->success_unannounced) {
    j->success_unannounced = i;
    j->success_unannounced_t = e.t;
  }
}

void MonitorSet::check_secrets(std::string_view text, std::size_t i, TimeMs t, const char* what,
                               Found& out) {
  for (const std::string& s : secrets_) {
    if (text.find(s) != std::string_view::npos) {
      // Never repeat the secret in the message: name it by its shape.
      out.push_back({"no_secret_leak", i, t,
                     fmt::format("{} carries a secret in full ({} characters starting '{}...')",
                                 what, s.size(), s.substr(0, std::min<std::size_t>(4, s.size())))});
      return;
    }
  }
}

std::vector<Violation> MonitorSet::finish(TimeMs until_ms) {
  if (pending_finish_) {
    Found last;
    flush_pending_finish(last);
    report(std::move(last));
  }
  std::vector<Violation> out;
  const std::size_t end = events_seen_;
  for (auto& [key, j] : jobs_) {
    if (j.pending_misfire && j.pending_misfire->coalesced > 0) {
      out.push_back({"schedule_kept", end, until_ms,
                     fmt::format("job {}: {} slots after {} were folded into its late run without "
                                 "a misfire record",
                                 j.id, j.pending_misfire->coalesced,
                                 format_instant(j.pending_misfire->slot))});
      j.pending_misfire.reset();
    }
    // No regular slot skipped: while the process is up, every slot before the
    // end has been handed out (slots due while it is down come late, after it
    // boots: those are in flight).
    if (j.cron && up_ && boot_t_ && *boot_t_ < until_ms) {
      const TimeMs prev = j.last_slot.value_or(start_ms_ - 1);
      const auto missed = j.cron->between(std::max(prev, *boot_t_), until_ms - 1, 1);
      if (!missed.empty()) {
        out.push_back({"schedule_kept", end, until_ms,
                       fmt::format("job {}: regular slot {} was never handed out", j.id,
                                   format_instant(missed.front()))});
      }
    }
  }
  for (const auto& [key, s] : slots_) {
    if (s.state == SlotState::failed && up_) {
      out.push_back({"nothing_lost", s.state_index, s.state_t,
                     fmt::format("job {} slot {}: the run failed and nothing followed: no retry, "
                                 "no retry_exhausted or failed_permanent notice (swallowed)",
                                 s.job, format_instant(s.slot))});
    }
  }
  for (auto& [key, j] : jobs_) judge_group_run(key, end, until_ms, out);
  for (const auto& [key, j] : jobs_) {
    if (j.success_unannounced && up_) {
      out.push_back({"nothing_lost", *j.success_unannounced, j.success_unannounced_t,
                     fmt::format("job {}: succeeded after a failed episode it had announced, but "
                                 "no `recovered` notification followed",
                                 j.id)});
    }
  }
  if (corrupt_index_ && boot_after_corruption_ && !corrupt_seen_by_core_) {
    out.push_back({"state_durable", end, until_ms,
                   fmt::format("the state store was corrupted ({}) and the process booted after, "
                               "but no state_corrupt was reported",
                               corrupt_paths_.empty() ? "?" : corrupt_paths_.back())});
  }
  for (const Violation& v : out) all_.push_back(v);
  return out;
}

namespace {

// A job's slots by fate (docs/monitors.md "Tallies").
struct SlotCounts {
  std::int64_t delivered = 0, skipped = 0, failed = 0, in_flight = 0, superseded = 0,
               coalesced = 0, exhausted = 0;

  void add(SlotState state) {
    switch (state) {
      case SlotState::delivered: ++delivered; break;
      case SlotState::skipped: ++skipped; break;
      case SlotState::exhausted: ++failed, ++exhausted; break;
      case SlotState::failed_permanent:
      case SlotState::retry_dropped:
      case SlotState::failed: ++failed; break;
      case SlotState::superseded: ++superseded; break;
      case SlotState::coalesced: ++coalesced; break;
      default: ++in_flight; break;
    }
  }
};

// A slot's fate in the words of expect.jobs.<id>.slots (docs/scenario-format.md):
// the same grouping as the slot counts of tallies().
const char* slot_outcome(SlotState state) {
  switch (state) {
    case SlotState::delivered: return "delivered";
    case SlotState::skipped: return "skipped";
    case SlotState::exhausted: return "exhausted";
    case SlotState::failed:
    case SlotState::failed_permanent:
    case SlotState::retry_dropped: return "failed";
    case SlotState::superseded: return "superseded";
    case SlotState::coalesced: return "coalesced";
    default: return "in_flight";
  }
}

}  // namespace

const char* to_string(SlotState state) noexcept {
  switch (state) {
    case SlotState::handed: return "handed";
    case SlotState::running: return "running";
    case SlotState::failed: return "failed";
    case SlotState::retry_pending: return "retry_pending";
    case SlotState::marked_skipped: return "marked_skipped";
    case SlotState::delivered: return "delivered";
    case SlotState::skipped: return "skipped";
    case SlotState::exhausted: return "exhausted";
    case SlotState::failed_permanent: return "failed_permanent";
    case SlotState::retry_dropped: return "retry_dropped";
    case SlotState::superseded: return "superseded";
    case SlotState::coalesced: return "coalesced";
  }
  return "?";
}

std::vector<SlotRecord> MonitorSet::slot_records() const {
  std::vector<SlotRecord> out;
  out.reserve(slots_.size());
  for (const auto& [key, s] : slots_) {
    out.push_back({s.job, s.slot, s.state, s.runs, s.last_failure_class});
  }
  return out;
}

// One entry per slot of `job` the tracker saw, in time order.
json MonitorSet::slot_list(const std::string& job) const {
  json list = json::array();
  // slots_ is keyed by (job, slot): the job's slots are one run of the map.
  for (auto it = slots_.lower_bound({job, std::numeric_limits<TimeMs>::min()});
       it != slots_.end() && it->first.first == job; ++it) {
    const SlotWatch& s = it->second;
    json at = json::array();
    for (const TimeMs t : s.attempt_at) at.push_back(format_instant(t));
    json notes = json::object();
    for (const auto& [ev, n] : s.notifications) notes[ev] = n;
    list.push_back({{"slot", format_instant(s.slot)},
                    {"outcome", slot_outcome(s.state)},
                    {"attempts", s.attempt_at.size()},
                    {"attempt_at", std::move(at)},
                    {"notifications", std::move(notes)}});
  }
  return list;
}

// O(jobs + slots): the slots are keyed by (job, slot), so each job's slots
// are one run of the map, counted in one pass.
json MonitorSet::tallies() const {
  std::map<std::string, SlotCounts> counts;
  for (const auto& [key, s] : slots_) counts[key.first].add(s.state);
  json jobs = json::object();
  for (const auto& [id, j] : jobs_) {
    const SlotCounts c = counts.count(id) != 0 ? counts.at(id) : SlotCounts{};
    const std::int64_t delivered = c.delivered, skipped = c.skipped, failed = c.failed,
                       in_flight = c.in_flight, superseded = c.superseded,
                       coalesced = c.coalesced, exhausted = c.exhausted;
    json notes = json::object();
    for (const auto& [ev, n] : j.notifications) notes[ev] = n;
    jobs[id] = {{"delivered_slots", delivered},
                {"skipped_slots", skipped},
                {"failed_slots", failed},
                {"in_flight_slots", in_flight},
                {"superseded_slots", superseded},
                {"coalesced_slots", coalesced},
                {"exhausted_slots", exhausted},
                {"retries", j.retries},
                {"runs", j.runs},
                {"calls", j.calls},
                {"notifications", notes},
                {"final_status", j.final_status},
                {"max_delay_ms", j.max_delay_ms},
                {"slots", slot_list(id)}};
  }
  json items = json::object();
  for (const auto& [id, w] : items_) {
    json o = {{"queries", w.queries}};
    if (!w.reason.empty()) o["reason"] = w.reason;
    if (const auto st = stages_.find(id); st != stages_.end()) o["stage"] = st->second;
    items[id] = o;
  }
  for (const auto& [id, stage] : stages_) {
    if (!items.contains(id)) items[id] = {{"queries", 0}, {"stage", stage}};
  }
  json services = json::object();
  for (const auto& [name, n] : service_calls_) services[name] = {{"calls", n}};
  if (services.contains("brokerage") || token_issues_ > 0) {
    services["brokerage"]["token_issues"] = token_issues_;
    services["brokerage"]["reissues"] = reissues_;
  }
  std::int64_t dup_window = 0;
  for (const auto& [key, s] : sends_) dup_window += s.duplicates_in_window;
  json notes = json::object();
  for (const auto& [ev, n] : notifications_total_) notes[ev] = n;
  return {{"events", events_seen_},
          {"boots", boots_},
          {"jobs", jobs},
          {"items", items},
          {"services", services},
          {"notifications", notes},
          {"duplicate_deliveries_in_window", dup_window},
          {"failure_notices", failure_notices_},
          {"violations", all_.size()},
          {"unchecked", unchecked_}};
}

std::optional<Violation> compare_traces(const Trace& a, const Trace& b) {
  const auto& ea = a.events();
  const auto& eb = b.events();
  const std::size_t n = std::min(ea.size(), eb.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::string la = to_json_line(ea[i]);
    const std::string lb = to_json_line(eb[i]);
    if (la != lb) {
      return Violation{
          "deterministic", i, ea[i].t,
          fmt::format("the traces differ at line {}:\n  first:  {}\n  second: {}", i + 1, la, lb)};
    }
  }
  if (ea.size() != eb.size()) {
    const bool a_longer = ea.size() > eb.size();
    const TraceEvent& extra = a_longer ? ea[n] : eb[n];
    return Violation{"deterministic", n, extra.t,
                     fmt::format("the {} trace ends after {} lines, the other goes on with: {}",
                                 a_longer ? "second" : "first", n, to_json_line(extra))};
  }
  return std::nullopt;
}

}  // namespace rehearse::sim
