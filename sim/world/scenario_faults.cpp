// The loader's faults: each read from its kind's table entry
// (sim/world/fault_kinds.hpp), key by key.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

std::optional<TimeMs> Loader::read_fault_at(const json& v, const std::string& pointer) {
  auto s = read_string(v, pointer,
                       "an ISO-8601 UTC instant (\"2026-12-04T17:00:00Z\") or an offset from start "
                       "(\"+16h\")");
  if (!s) return std::nullopt;
  TimeMs at = 0;
  if (!s->empty() && s->front() == '+') {
    auto d = parse_duration(std::string_view(*s).substr(1));
    if (!d) {
      value_error(pointer, fmt::format("invalid offset \"{}\": {}", *s, d.error().message));
      return std::nullopt;
    }
    if (!start_ok_) return std::nullopt;  // start's own error is reported
    REHEARSE_ASSERT_GE(*d, 0);  // parse_duration reads digits only: the check below relies on it
    if (*d > kMaxInstantMs - scenario_.start_ms) {
      value_error(pointer, fmt::format("offset \"{}\" is too large", *s));
      return std::nullopt;
    }
    at = scenario_.start_ms + *d;
  } else {
    auto t = parse_instant(*s);
    if (!t) {
      value_error(pointer, t.error().message + " (or an offset from start such as \"+16h\")");
      return std::nullopt;
    }
    at = *t;
  }
  if (!start_ok_ || !until_ok_) return std::nullopt;
  if (at < scenario_.start_ms || at > scenario_.until_ms) {
    value_error(pointer, fmt::format("fault at {} is outside the scenario's time span [{}, {}]",
                                     format_instant(at), format_instant(scenario_.start_ms),
                                     format_instant(scenario_.until_ms)));
    return std::nullopt;
  }
  return at;
}

void Loader::load_faults(const json& v, const std::string& pointer) {
  // The listed faults come first; the fleet's join them after (load_world).
  REHEARSE_ASSERT(scenario_.faults.empty());
  if (!expect_array(v, pointer, "a list of faults", false, kMaxFaults)) return;
  for (std::size_t i = 0; i < v.size(); ++i) load_fault(v[i], child(pointer, i));
}

// A fault: its kind first (it decides the keys), then the instant, then the
// kind's keys in the table's order, each by the reader of its type.
void Loader::load_fault(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "a fault")) return;
  FaultSpec fault;
  fault.pointer = pointer;
  const FaultKindSpec* kind = load_fault_kind(v, pointer);
  const bool when_ok = load_fault_when(v, pointer, fault);
  if (kind == nullptr) return;
  // An entry of the loader's table: its position is the FaultKind.
  REHEARSE_ASSERT(kind >= fault_kinds_.data() && kind < fault_kinds_.data() + fault_kinds_.size());
  fault.kind = static_cast<FaultKind>(kind - fault_kinds_.data());
  FaultReading r{v, pointer, *kind, fault, fmt::format("fault '{}'", kind->name), when_ok};
  if (kind->lasting) read_fault_for(r);
  if (!require_fault_target(r)) return;
  for (const FaultKeySpec& key : kind->keys) read_fault_key(r, key);
  REHEARSE_ASSERT(!r.ok || when_ok);  // a fault is kept only with its instant
  if (r.ok) scenario_.faults.push_back(std::move(fault));
}

// The kind, and every key checked against it: a key of another kind is
// refused with what it belongs to.
const FaultKindSpec* Loader::load_fault_kind(const json& v, const std::string& pointer) {
  const FaultKindSpec* kind = nullptr;
  if (const json* k = require(v, pointer, "kind", "a fault kind")) {
    std::vector<std::string> names;
    for (const FaultKindSpec& spec : fault_kinds_) names.emplace_back(spec.name);
    if (auto i = read_name(*k, child(pointer, "kind"), names, "fault kind")) {
      kind = &fault_kinds_[*i];
    }
  }
  std::vector<std::string> allowed = keys_of("fault");
  std::map<std::string, std::string> elsewhere;
  for (const FaultKindSpec& spec : fault_kinds_) {
    const bool mine = kind == nullptr || kind == &spec;
    for (const std::string& key : fault_key_names(spec)) {
      if (mine) {
        allowed.push_back(key);
      } else if (elsewhere.count(key) == 0) {
        elsewhere[key] =
            key == "for"
                ? fmt::format("does not apply to '{}': it happens at one instant", kind->name)
                : fmt::format("does not apply to a '{}' fault", kind->name);
      }
    }
  }
  for (const auto& key : allowed) elsewhere.erase(key);
  check_keys(v, pointer, allowed, elsewhere);
  return kind;
}

// `at` (inside the span) and `note`; false when `at` is missing or wrong.
bool Loader::load_fault_when(const json& v, const std::string& pointer, FaultSpec& fault) {
  bool ok = true;
  if (const json* a =
          require(v, pointer, "at", "an instant or an offset from start such as \"+16h\"")) {
    if (auto t = read_fault_at(*a, child(pointer, "at"))) {
      fault.at_ms = *t;
    } else {
      ok = false;
    }
  } else {
    ok = false;
  }
  if (const json* n = field(v, "note")) {
    if (auto s = read_string(*n, child(pointer, "note"))) fault.note = *s;
  }
  // An instant read is inside a span that is one (read_fault_at).
  REHEARSE_ASSERT(!ok || (start_ok_ && until_ok_ && fault.at_ms >= scenario_.start_ms &&
                          fault.at_ms <= scenario_.until_ms));
  return ok;
}

// A lasting kind's `for`: positive, and the fault ends by `until`.
void Loader::read_fault_for(FaultReading& r) {
  REHEARSE_ASSERT(r.kind.lasting);  // only a lasting kind takes `for`
  const json* f = field(r.v, "for");
  if (f == nullptr) return;
  const std::string at = child(r.pointer, "for");
  auto d = read_duration(*f, at, 1);
  if (!d) {
    r.ok = false;
    return;
  }
  r.fault.for_ms = *d;
  if (r.ok && until_ok_ && *d > scenario_.until_ms - r.fault.at_ms) {
    value_error(at, fmt::format("the fault would end at {}, after until {} (omit 'for' to "
                                "last until the end)",
                                format_instant(r.fault.at_ms + *d),
                                format_instant(scenario_.until_ms)));
    r.ok = false;
  }
}

// An orchestrator kind needs the orchestrator before any of its keys mean
// anything. (A service kind's service is checked with its `service` key, the
// messenger with `targets`.)
bool Loader::require_fault_target(FaultReading& r) {
  if (r.kind.applies_to != FaultTarget::orchestrator) return true;
  if (require_service(ServiceKind::orchestrator, r.pointer, r.who)) return true;
  r.ok = false;
  return false;
}

void Loader::read_fault_key(FaultReading& r, const FaultKeySpec& key) {
  REHEARSE_ASSERT(!key.name.empty());  // a table entry's key has a name
  const json* value = field(r.v, key.name);
  if (value == nullptr) {
    read_absent_fault_key(r, key);
    return;
  }
  auto got = read_fault_value(r, key, *value, child(r.pointer, key.name));
  if (!got) {
    r.ok = false;
    return;
  }
  if (key.store) {
    key.store(r.fault, *got);
  } else {
    r.fault.params[std::string(key.name)] = got->value;
  }
}

namespace {

// What a missing required fault key's message says is expected.
std::string expected_value(const FaultKeySpec& key) {
  REHEARSE_ASSERT(key.required);  // only a missing required key says what it expects
  if (!key.expected.empty()) return std::string(key.expected);
  switch (key.type) {
    case FaultKeyType::integer: return fmt::format("{} from {} to {}", key.what, key.min, key.max);
    case FaultKeyType::down_time: return kDurationRule;
    case FaultKeyType::step: return "a signed duration such as \"-1h\" or \"+30m\"";
    case FaultKeyType::issue_list: return "a non-empty array of issue ids";
    case FaultKeyType::issue: return "an issue id from /services/orchestrator/issues";
    case FaultKeyType::agent: return "an agent id from /services/orchestrator/agents";
    case FaultKeyType::rate_limited:
      return "a service of your own in /services whose capacity has a \"rate\"";
    default: return fmt::format("{} (one of: {})", key.what, join(key.names));
  }
}

}  // namespace

// A key that is not there: an error when required, else its default.
void Loader::read_absent_fault_key(FaultReading& r, const FaultKeySpec& key) {
  if (key.type == FaultKeyType::targets) {  // every target: the messenger must exist
    if (!require_service(ServiceKind::messenger, r.pointer, r.who)) r.ok = false;
    return;
  }
  if (key.required) {
    r.ok = false;
    if (key.type == FaultKeyType::service) {
      error(r.pointer, fmt::format("missing required key 'service' (one of: {}, or a service of "
                                   "your own declared in /services)",
                                   join(key.names)));
      return;
    }
    require(r.v, r.pointer, key.name, expected_value(key));
    return;
  }
  if (key.default_value.is_null()) return;
  FaultValue value{key.default_value};
  if (key.default_value.is_string()) {
    const auto it =
        std::find(key.names.begin(), key.names.end(), key.default_value.get<std::string>());
    value.index = static_cast<std::size_t>(it - key.names.begin());
    REHEARSE_ASSERT_LT(value.index, key.names.size());  // a table's default is one of its names
  }
  if (key.type == FaultKeyType::service &&
      !require_service(*parse_service_kind(key.names[value.index]), r.pointer, r.who)) {
    r.ok = false;
  }
  if (key.store) key.store(r.fault, value);
}

// An integer key: from `min` to `max` and, when the key lists `names`, one of
// them (an HTTP status a fault may answer with, say).
std::optional<FaultValue> Loader::read_fault_integer(const FaultKeySpec& key, const json& value,
                                                     const std::string& at) {
  REHEARSE_ASSERT(key.type == FaultKeyType::integer);
  REHEARSE_ASSERT_LE(key.min, key.max);  // a table entry's range is never empty
  const auto n = read_int(value, at, key.min, key.max, key.what);
  if (!n) return std::nullopt;
  if (key.names.empty() || std::ranges::count(key.names, std::to_string(*n)) > 0) {
    return FaultValue{*n};
  }
  value_error(at, fmt::format("expected {}: one of {}, got {}", key.what,
                              fmt::join(key.names, ", "), value.dump()));
  return std::nullopt;
}

// One present value, by the reader of its type.
std::optional<FaultValue> Loader::read_fault_value(FaultReading& r, const FaultKeySpec& key,
                                                   const json& value, const std::string& at) {
  switch (key.type) {
    case FaultKeyType::service: return read_fault_service(r, key, value, at);
    case FaultKeyType::down_time: return read_fault_down_for(r, value, at);
    case FaultKeyType::integer: return read_fault_integer(key, value, at);
    case FaultKeyType::worker:  // one of the worker processes /queue/workers starts
      if (auto n =
              read_int(value, at, 1, scenario_.queue.workers, "a worker number (queue.workers)")) {
        return FaultValue{*n};
      }
      return std::nullopt;
    case FaultKeyType::rate:
      if (auto x = read_rate(value, at)) return FaultValue{*x};
      return std::nullopt;
    case FaultKeyType::name:
      if (auto i = read_name(value, at, key.names, key.what)) return FaultValue{key.names[*i], *i};
      return std::nullopt;
    case FaultKeyType::issue:
      return read_fault_reference(value, at, issue_ids_, "issue", "/services/orchestrator/issues");
    case FaultKeyType::agent:
      return read_fault_reference(value, at, agent_ids_, "agent", "/services/orchestrator/agents");
    case FaultKeyType::new_instance: return read_fault_new_instance(value, at);
    case FaultKeyType::job: return read_fault_job(value, at);
    case FaultKeyType::cut: return read_fault_cut(r, value, at);
    case FaultKeyType::flips: return read_fault_flips(r, value, at);
    case FaultKeyType::step: return read_fault_step(value, at);
    case FaultKeyType::rate_limited: return read_fault_rate_limited(value, at);
    case FaultKeyType::issue_list:
    case FaultKeyType::targets: {
      const std::size_t before = errors_.size() + omitted_;
      const std::vector<std::string> names =
          key.type == FaultKeyType::targets ? load_targets(value, at, true)
                                            : read_name_list(value, at, "issue", true, &issue_ids_,
                                                             "/services/orchestrator/issues");
      if (errors_.size() + omitted_ != before) return std::nullopt;
      return FaultValue{names};
    }
  }
  return std::nullopt;
}

// `service`: a built-in the kind allows, or (where allowed) a service of the
// user's own; never the messenger, which has its own kind.
std::optional<FaultValue> Loader::read_fault_service(FaultReading& r, const FaultKeySpec& key,
                                                     const json& value, const std::string& at) {
  REHEARSE_ASSERT(key.type == FaultKeyType::service && !key.names.empty());
  const std::string name = value.is_string() ? value.get<std::string>() : std::string();
  // The run could not apply a service fault to the messenger, so the loader
  // (and so `validate`) refuses it.
  if (key.names.size() > 1 && name == to_string(ServiceKind::messenger)) {
    value_error(at, fmt::format("fault kind '{}' cannot target the messenger (use "
                                "messenger_down for the messenger)",
                                r.kind.name));
    return std::nullopt;
  }
  if (key.user_services && user_services_.count(name) != 0) return FaultValue{name, 0, true};
  // Neither a built-in nor one of the user's: list both kinds of candidate.
  if (key.user_services && value.is_string() && !parse_service_kind(name)) {
    unknown_fault_service(r, key, name, at);
    return std::nullopt;
  }
  auto i = read_name(value, at, key.names, fmt::format("service for '{}'", r.kind.name));
  if (!i) return std::nullopt;
  if (!require_service(*parse_service_kind(key.names[*i]), at, r.who)) return std::nullopt;
  return FaultValue{key.names[*i], *i};
}

// A name that is neither a built-in service nor one of the user's own: the
// error lists both, and the nearest of them.
void Loader::unknown_fault_service(const FaultReading& r, const FaultKeySpec& key,
                                   const std::string& name, const std::string& at) {
  REHEARSE_ASSERT(key.user_services);  // else the built-in names alone are the candidates
  std::vector<std::string> candidates = key.names;
  const std::vector<std::string> own(user_services_.begin(), user_services_.end());
  candidates.insert(candidates.end(), own.begin(), own.end());
  std::string message = fmt::format("unknown service for '{}' \"{}\" (expected a built-in: {}",
                                    r.kind.name, name, join(key.names));
  message += own.empty() ? std::string("; no service of your own is declared in /services)")
                         : fmt::format("; or one of yours in /services: {})", join(own));
  if (const auto near = closest(name, candidates)) {
    message += fmt::format("; did you mean '{}'?", *near);
  }
  reference_error(at, std::move(message));
}

// How long the process stays down: it must come back by `until`.
// A clock step: "-1h" back, "+90s" or "90s" forward; never zero, never more
// than a week (an NTP correction or a resumed virtual machine, not a new era).
std::optional<FaultValue> Loader::read_fault_step(const json& value, const std::string& at) {
  constexpr const char* kStepRule =
      "a signed duration such as \"-1h\" (back) or \"+30m\" (forward), not zero, at most 7d";
  if (!value.is_string()) {
    value_error(at, fmt::format("expected {}", kStepRule));
    return std::nullopt;
  }
  std::string_view text = value.get_ref<const std::string&>();
  const bool back = !text.empty() && text.front() == '-';
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) text.remove_prefix(1);
  auto magnitude = parse_duration(text);
  if (!magnitude.ok() || *magnitude == 0 || *magnitude > 7 * kDayMs) {
    value_error(at, fmt::format("invalid clock step \"{}\": expected {}",
                                value.get_ref<const std::string&>(), kStepRule));
    return std::nullopt;
  }
  return FaultValue{back ? -*magnitude : *magnitude};
}

std::optional<FaultValue> Loader::read_fault_down_for(FaultReading& r, const json& value,
                                                      const std::string& at) {
  // A fault still being read has its instant inside the span (load_fault_when).
  REHEARSE_ASSERT(!r.ok || !until_ok_ || r.fault.at_ms <= scenario_.until_ms);
  auto ms = read_duration(value, at, 0);
  if (!ms) return std::nullopt;
  if (r.ok && until_ok_ && *ms > scenario_.until_ms - r.fault.at_ms) {
    value_error(at, fmt::format("the process would be down until {}, after until {}",
                                format_instant(r.fault.at_ms + *ms),
                                format_instant(scenario_.until_ms)));
    return std::nullopt;
  }
  return FaultValue{*ms};
}

std::optional<FaultValue> Loader::read_fault_reference(const json& value, const std::string& at,
                                                       const std::vector<std::string>& declared,
                                                       std::string_view what,
                                                       std::string_view where) {
  auto s = read_identifier(value, at, fmt::format("{} id", what));
  if (!s || !check_reference(*s, at, declared, what, where)) return std::nullopt;
  return FaultValue{*s};
}

// `job`: a declared job that keeps a durable file of its own (a group or
// publish job's delivery ledger, a reconcile job's pipeline file).
// A service of the user's own that declares a rate limit: the one thing a
// lowered rate can lower.
std::optional<FaultValue> Loader::read_fault_rate_limited(const json& value,
                                                          const std::string& at) {
  auto name = read_identifier(value, at, "service name");
  if (!name) return std::nullopt;
  const auto it = scenario_.services.user.find(*name);
  if (it == scenario_.services.user.end()) {
    reference_error(at, fmt::format("the '{}' service is not declared in /services (a capacity "
                                    "fault lowers the rate limit of a service of your own)",
                                    *name));
    return std::nullopt;
  }
  if (!it->second.capacity || !it->second.capacity->limits_rate()) {
    value_error(at, fmt::format("the '{}' service declares no rate limit to lower (give it "
                                "\"capacity\": {{\"rate\": N, \"per\": DURATION}} in /services)",
                                *name));
    return std::nullopt;
  }
  return FaultValue{*name};
}

std::optional<FaultValue> Loader::read_fault_job(const json& value, const std::string& at) {
  auto s = read_identifier(value, at, "job id");
  if (!s) return std::nullopt;
  std::vector<std::string> with_file;
  const JobSpec* named = nullptr;
  for (const JobSpec& job : scenario_.jobs) {
    if (job_keeps_file(job.kind)) with_file.push_back(job.id);
    if (job.id == *s) named = &job;
  }
  if (named != nullptr && !job_keeps_file(named->kind)) {
    reference_error(at, fmt::format("job '{}' is a {} job, which keeps no file of its own (a "
                                    "group or publish job's delivery ledger, a reconcile job's "
                                    "pipeline file)",
                                    *s, to_string(named->kind)));
    return std::nullopt;
  }
  if (!check_reference(*s, at, with_file, "job with a file", "/jobs")) return std::nullopt;
  // A reference found among the jobs with a file of their own.
  REHEARSE_ASSERT(named != nullptr && job_keeps_file(named->kind));
  return FaultValue{*s};
}

std::optional<FaultValue> Loader::read_fault_new_instance(const json& value,
                                                          const std::string& at) {
  auto s = read_identifier(value, at, "instance id");
  if (!s) return std::nullopt;
  const auto& orchestrator = scenario_.services.orchestrator;
  if (orchestrator && *s == orchestrator->instance) {
    value_error(at, fmt::format("new_instance '{}' is the instance the orchestrator already "
                                "runs (see /services/orchestrator/instance)",
                                *s));
    return std::nullopt;
  }
  return FaultValue{*s};
}

// state_corrupted's exact damage: `cut` belongs to mode truncated only.
std::optional<FaultValue> Loader::read_fault_cut(FaultReading& r, const json& value,
                                                 const std::string& at) {
  if (r.fault.mode != CorruptionMode::truncated) {
    value_error(at, fmt::format("'cut' applies to mode 'truncated' only (the mode is '{}')",
                                to_string(r.fault.mode)));
    return std::nullopt;
  }
  auto n = read_int(value, at, 0, kMaxCount, "a byte count");
  if (!n) return std::nullopt;
  REHEARSE_ASSERT_GE(*n, 0);  // read_int's range, before the unsigned cast
  return FaultValue{static_cast<std::uint64_t>(*n)};
}

// `flips` belongs to mode flip only: unique byte offsets.
std::optional<FaultValue> Loader::read_fault_flips(FaultReading& r, const json& value,
                                                   const std::string& at) {
  if (r.fault.mode != CorruptionMode::flip) {
    value_error(at, fmt::format("'flips' applies to mode 'flip' only (the mode is '{}')",
                                to_string(r.fault.mode)));
    return std::nullopt;
  }
  if (!value.is_array() || value.empty()) {
    error(at, "expected a non-empty array of byte offsets, got " + describe(value));
    return std::nullopt;
  }
  std::vector<std::uint64_t> flips;
  bool good = true;
  for (std::size_t k = 0; k < value.size(); ++k) {
    const std::string here = at + "/" + std::to_string(k);
    auto n = read_int(value[k], here, 0, kMaxCount, "a byte offset");
    if (!n) {
      good = false;
      continue;
    }
    const auto offset = static_cast<std::uint64_t>(*n);
    if (std::find(flips.begin(), flips.end(), offset) != flips.end()) {
      value_error(here, fmt::format("byte offset {} is listed twice", offset));
      good = false;
      continue;
    }
    flips.push_back(offset);
  }
  if (!good) return std::nullopt;
  REHEARSE_ASSERT_EQ(flips.size(), value.size());  // every offset read, none twice
  return FaultValue{flips};
}

}  // namespace rehearse::sim::scenario_detail
