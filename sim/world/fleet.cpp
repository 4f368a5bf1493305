// The `fleet` block: strict reading (FleetParser) and deterministic
// generation (expand_fleet). sim/world/fleet.hpp states the rules.
#include "sim/world/fleet.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "sim/kernel/rng.hpp"

namespace rehearse::sim {

using nlohmann::json;

const std::map<std::string, std::vector<std::string>>& fleet_known_keys() {
  static const std::map<std::string, std::vector<std::string>> kKeys{
      {"fleet", {"jobs", "id_prefix", "kinds", "schedules", "policies", "failure_rates"}},
      {"fleet_kind", {"weight", "kind", "calls", "model_calls", "targets", "service"}},
      {"fleet_schedule", {"weight", "cron"}},
      {"fleet_policy", {"weight", "retry_policy"}},
      {"fleet_failure", {"weight", "rate", "status"}},
  };
  return kKeys;
}

std::string fleet_service_name(const std::string& id_prefix, std::size_t index) {
  REHEARSE_ASSERT(!id_prefix.empty());  // "fleet" or a prefix the parser accepted
  return fmt::format("{}-fail-{}", id_prefix, index);
}

std::vector<std::int64_t> apportion(std::int64_t n, const std::vector<std::int64_t>& weights) {
  std::int64_t total = 0;
  for (const std::int64_t w : weights) total += w;
  REHEARSE_ASSERT(total > 0 && n >= 0);
  std::vector<std::int64_t> counts(weights.size());
  std::vector<std::int64_t> remainders(weights.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    // n <= 1e6 and w <= 1e9 * 1e3 buckets: the product fits in 64 bits.
    const std::int64_t product = n * weights[i];
    counts[i] = product / total;
    remainders[i] = product % total;
    given += counts[i];
  }
  std::vector<std::size_t> order(weights.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainders[a] > remainders[b]; });
  // Each bucket's remainder is below one job: at most one more job per bucket.
  for (std::size_t k = 0; given < n; ++k, ++given) {
    REHEARSE_ASSERT_LT(k, order.size());
    ++counts[order[k]];
  }
  REHEARSE_ASSERT_EQ(given, n);  // every job goes to exactly one bucket
  return counts;
}

namespace {

constexpr const char* kKindNames = "call, group";

bool is_prefix(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '_' || c == '-'; });
}

std::string describe(const json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  std::string s = v.dump();
  if (s.size() > 42) s = s.substr(0, 40) + "...";
  REHEARSE_ASSERT_LE(s.size(), 43u);  // messages quote a value briefly
  return s;
}

// Reads the block, collecting every error with its pointer.
class FleetParser {
 public:
  explicit FleetParser(const FleetContext& context) : context_(context) {}

  FleetParse parse(const json& block, const std::string& pointer) && {
    read_block(block, pointer);
    FleetParse out;
    out.errors = std::move(errors_);
    if (out.errors.empty()) out.spec = std::move(spec_);
    // A block read without error has every dimension (absent ones get their
    // default bucket) and at least one job.
    REHEARSE_ASSERT(!out.spec || (out.spec->jobs >= 1 && !out.spec->kinds.empty() &&
                                  !out.spec->schedules.empty() && !out.spec->policies.empty() &&
                                  !out.spec->failure_rates.empty()));
    return out;
  }

 private:
  void error(ErrorCode code, const std::string& pointer, std::string message) {
    REHEARSE_ASSERT(!message.empty());
    errors_.push_back(make_error(code, std::move(message), pointer));
  }

  void check_keys(const json& obj, const std::string& pointer, const std::string& level) {
    REHEARSE_ASSERT(obj.is_object());  // callers check the value is an object first
    const auto& allowed = fleet_known_keys().at(level);
    for (const auto& [key, value] : obj.items()) {
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string expected;
      for (const auto& k : allowed) expected += (expected.empty() ? "'" : ", '") + k + "'";
      error(ErrorCode::schema_error, pointer + "/" + key,
            fmt::format("unknown key '{}' (expected one of: {})", key, expected));
    }
  }

  std::optional<std::int64_t> read_int(const json& obj, const std::string& pointer,
                                       const std::string& key, std::int64_t min, std::int64_t max,
                                       std::optional<std::int64_t> fallback) {
    REHEARSE_ASSERT_LE(min, max);
    // A default is a value the key could have been given.
    REHEARSE_ASSERT(!fallback || (*fallback >= min && *fallback <= max));
    const auto it = obj.find(key);
    const std::string at = pointer + "/" + key;
    if (it == obj.end()) {
      if (!fallback) {
        error(ErrorCode::schema_error, pointer,
              fmt::format("missing required key '{}' (an integer from {} to {})", key, min, max));
      }
      return fallback;
    }
    const bool integer = it->is_number_integer() || it->is_number_unsigned();
    if (!integer ||
        (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(max)) ||
        it->get<std::int64_t>() < min || it->get<std::int64_t>() > max) {
      error(integer ? ErrorCode::invalid_argument : ErrorCode::schema_error, at,
            fmt::format("expected an integer from {} to {}, got {}", min, max, describe(*it)));
      return std::nullopt;
    }
    return it->get<std::int64_t>();
  }

  // A non-empty list of objects of `level`, each read by `read_one`.
  template <typename T, typename ReadOne>
  void read_buckets(const json& block, const std::string& pointer, const std::string& key,
                    const std::string& level, std::vector<FleetBucket<T>>& out, ReadOne read_one) {
    REHEARSE_ASSERT(out.empty());  // each list of the block is read once
    const auto it = block.find(key);
    const std::string at = pointer + "/" + key;
    if (it == block.end()) return;
    if (!it->is_array() || it->empty() || it->size() > kMaxFleetBuckets) {
      error(ErrorCode::schema_error, at,
            fmt::format("expected a list of 1 to {} weighted entries, got {}", kMaxFleetBuckets,
                        it->is_array() ? fmt::format("{} entries", it->size()) : describe(*it)));
      return;
    }
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& entry = (*it)[i];
      const std::string ep = at + "/" + std::to_string(i);
      if (!entry.is_object()) {
        error(ErrorCode::schema_error, ep,
              fmt::format("expected an object, got {}", describe(entry)));
        continue;
      }
      check_keys(entry, ep, level);
      const auto weight = read_int(entry, ep, "weight", 1, kMaxFleetWeight, 1);
      std::optional<T> value = read_one(entry, ep);
      if (weight && value) out.push_back({*weight, std::move(*value)});
    }
  }

  void read_block(const json& block, const std::string& pointer);
  std::optional<FleetKind> read_kind(const json& entry, const std::string& pointer);
  std::optional<FleetKind> read_kind_service(const json& entry, const std::string& pointer,
                                             FleetKind kind);
  std::optional<std::vector<std::string>> read_targets(const json& entry,
                                                       const std::string& pointer);
  std::optional<std::string> read_schedule(const json& entry, const std::string& pointer);
  std::optional<FleetFailure> read_failure(const json& entry, const std::string& pointer);
  void check_service_names(const std::string& pointer);

  const FleetContext& context_;
  FleetSpec spec_;
  std::vector<Error> errors_;
};

void FleetParser::read_block(const json& block, const std::string& pointer) {
  // A parser reads one block (parse() consumes it).
  REHEARSE_ASSERT(errors_.empty() && spec_.kinds.empty() && spec_.schedules.empty());
  if (!block.is_object()) {
    error(ErrorCode::schema_error, pointer,
          fmt::format("expected a fleet (an object), got {}", describe(block)));
    return;
  }
  check_keys(block, pointer, "fleet");
  if (auto n = read_int(block, pointer, "jobs", 1, kMaxFleetJobs, std::nullopt)) spec_.jobs = *n;
  if (const auto it = block.find("id_prefix"); it != block.end()) {
    if (it->is_string() && is_prefix(it->get<std::string>())) {
      spec_.id_prefix = it->get<std::string>();
    } else {
      error(ErrorCode::invalid_argument, pointer + "/id_prefix",
            fmt::format("expected 1-64 letters, digits, _ and -, starting with a letter or digit, "
                        "got {}",
                        describe(*it)));
    }
  }
  for (const char* key : {"kinds", "schedules"}) {
    if (!block.contains(key)) {
      error(ErrorCode::schema_error, pointer,
            fmt::format("missing required key '{}' (a list of weighted entries)", key));
    }
  }
  read_buckets(block, pointer, "kinds", "fleet_kind", spec_.kinds,
               [this](const json& e, const std::string& p) { return read_kind(e, p); });
  read_buckets(block, pointer, "schedules", "fleet_schedule", spec_.schedules,
               [this](const json& e, const std::string& p) { return read_schedule(e, p); });
  read_buckets(block, pointer, "policies", "fleet_policy", spec_.policies,
               [](const json& e, const std::string&) {
                 const auto it = e.find("retry_policy");
                 return std::optional<std::optional<json>>(
                     it == e.end() ? std::optional<json>() : std::optional<json>(*it));
               });
  read_buckets(block, pointer, "failure_rates", "fleet_failure", spec_.failure_rates,
               [this](const json& e, const std::string& p) { return read_failure(e, p); });
  if (!block.contains("policies")) spec_.policies.push_back({1, std::nullopt});
  if (!block.contains("failure_rates")) spec_.failure_rates.push_back({1, FleetFailure{}});
  check_service_names(pointer);
}

std::optional<FleetKind> FleetParser::read_kind(const json& entry, const std::string& pointer) {
  FleetKind kind;
  const auto it = entry.find("kind");
  if (it == entry.end() || !it->is_string() || (*it != "call" && *it != "group")) {
    error(it == entry.end() ? ErrorCode::schema_error : ErrorCode::invalid_argument,
          it == entry.end() ? pointer : pointer + "/kind",
          it == entry.end() ? fmt::format("missing required key 'kind' (one of: {})", kKindNames)
                            : fmt::format("unknown fleet job kind {} (expected one of: {})",
                                          describe(*it), kKindNames));
    return std::nullopt;
  }
  kind.kind = *it == "call" ? JobKind::call : JobKind::group;
  const bool group = kind.kind == JobKind::group;
  for (const char* key : {"calls", "model_calls", "targets", "service"}) {
    const std::string_view k(key);
    const bool mine = group ? k == "model_calls" || k == "targets" : k == "calls" || k == "service";
    if (!mine && entry.contains(key)) {
      error(ErrorCode::schema_error, pointer + "/" + key,
            fmt::format("key '{}' does not apply to a '{}' fleet kind", key, *it));
    }
  }
  const auto calls = read_int(entry, pointer, group ? "model_calls" : "calls", group ? 0 : 1,
                              kMaxFleetCallsPerRun, 1);
  if (!calls) return std::nullopt;
  (group ? kind.model_calls : kind.calls) = static_cast<int>(*calls);
  REHEARSE_ASSERT(group ? kind.model_calls >= 0 : kind.calls >= 1);  // read_int's ranges
  if (!group) return read_kind_service(entry, pointer, std::move(kind));
  if (kind.model_calls > 0 && !context_.has_model_api) {
    error(ErrorCode::not_found, pointer,
          "a 'group' fleet kind calls model-api, but no 'model-api' service is declared in "
          "/services");
    return std::nullopt;
  }
  auto targets = read_targets(entry, pointer);
  if (!targets) return std::nullopt;
  kind.targets = std::move(*targets);
  REHEARSE_ASSERT(!kind.targets.empty());  // read_targets refuses an empty list
  return kind;
}

// A call kind's `service`: one of the user's own services declared in /services.
std::optional<FleetKind> FleetParser::read_kind_service(const json& entry,
                                                        const std::string& pointer,
                                                        FleetKind kind) {
  const auto it = entry.find("service");
  if (it == entry.end()) return kind;
  if (!it->is_string() || context_.user_services.count(it->get<std::string>()) == 0) {
    error(ErrorCode::not_found, pointer + "/service",
          fmt::format("expected a service of your own declared in /services, got {}",
                      describe(*it)));
    return std::nullopt;
  }
  kind.service = it->get<std::string>();
  return kind;
}

std::optional<std::vector<std::string>> FleetParser::read_targets(const json& entry,
                                                                  const std::string& pointer) {
  const auto it = entry.find("targets");
  const std::string at = pointer + "/targets";
  if (it == entry.end() || !it->is_array() || it->empty()) {
    error(ErrorCode::schema_error, it == entry.end() ? pointer : at,
          "expected 'targets': a non-empty array of messenger targets");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const bool known = t.is_string() && std::find(context_.targets.begin(), context_.targets.end(),
                                                  t.get<std::string>()) != context_.targets.end();
    if (!known) {
      error(ErrorCode::not_found, at + "/" + std::to_string(i),
            fmt::format("unknown target {} (not declared in /services/messenger/targets)",
                        describe(t)));
      return std::nullopt;
    }
    out.push_back(t.get<std::string>());
  }
  REHEARSE_ASSERT_EQ(out.size(), it->size());  // a group kind's targets: non-empty, all known
  return out;
}

std::optional<std::string> FleetParser::read_schedule(const json& entry,
                                                      const std::string& pointer) {
  const auto it = entry.find("cron");
  const std::string at = pointer + "/cron";
  if (it == entry.end() || !it->is_string()) {
    error(ErrorCode::schema_error, it == entry.end() ? pointer : at,
          "expected 'cron': a cron expression (a string)");
    return std::nullopt;
  }
  const std::string text = it->get<std::string>();
  auto parsed = CronSchedule::parse(text);
  if (!parsed) {
    error(parsed.error().code, at,
          fmt::format("invalid cron \"{}\": {}", text, parsed.error().message));
    return std::nullopt;
  }
  auto first = parsed->next_after(context_.start_ms);
  if (!first && first.error().code == ErrorCode::never_fires) {
    error(ErrorCode::never_fires, at, fmt::format("invalid cron \"{}\": never fires", text));
    return std::nullopt;
  }
  REHEARSE_ASSERT(!text.empty());  // an empty expression does not parse
  return text;
}

std::optional<FleetFailure> FleetParser::read_failure(const json& entry,
                                                      const std::string& pointer) {
  FleetFailure failure;
  const auto it = entry.find("rate");
  if (it == entry.end() || !it->is_number() || it->get<double>() < 0.0 || it->get<double>() > 1.0) {
    error(it == entry.end() ? ErrorCode::schema_error : ErrorCode::invalid_argument,
          it == entry.end() ? pointer : pointer + "/rate",
          it == entry.end() ? std::string("missing required key 'rate' (a number from 0 to 1)")
                            : fmt::format("expected a rate from 0 to 1, got {}", describe(*it)));
    return std::nullopt;
  }
  failure.rate = it->get<double>();
  const auto status = read_int(entry, pointer, "status", 400, 599, kDefaultFleetFailureStatus);
  if (!status) return std::nullopt;
  failure.status = static_cast<int>(*status);
  REHEARSE_ASSERT(failure.status >= 400 && failure.status <= 599);
  return failure;
}

// The generated services must not take a name the scenario already uses.
void FleetParser::check_service_names(const std::string& pointer) {
  // read_block adds the default bucket when the list is absent; an empty one is an error.
  REHEARSE_ASSERT(!spec_.failure_rates.empty() || !errors_.empty());
  for (std::size_t i = 0; i < spec_.failure_rates.size(); ++i) {
    const std::string name = fleet_service_name(spec_.id_prefix, i);
    if (context_.user_services.count(name) != 0) {
      error(ErrorCode::invalid_argument, pointer + "/failure_rates/" + std::to_string(i),
            fmt::format("the fleet's service '{}' is already declared in /services; choose "
                        "another /fleet/id_prefix",
                        name));
    }
  }
}

// Bucket index per job: the exact apportionment, shuffled (Fisher-Yates) with
// the stream "fleet/<dimension>".
template <typename T>
std::vector<std::uint32_t> assign(const std::vector<FleetBucket<T>>& buckets, std::int64_t n,
                                  const Rng& root, const char* dimension) {
  std::vector<std::int64_t> weights;
  weights.reserve(buckets.size());
  for (const auto& b : buckets) weights.push_back(b.weight);
  const std::vector<std::int64_t> counts = apportion(n, weights);
  REHEARSE_ASSERT_EQ(counts.size(), buckets.size());
  std::vector<std::uint32_t> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < counts.size(); ++i) {
    out.insert(out.end(), static_cast<std::size_t>(counts[i]), static_cast<std::uint32_t>(i));
  }
  Rng rng = root.derive(std::string("fleet/") + dimension);
  for (std::size_t i = out.size(); i > 1; --i) {
    std::swap(out[i - 1], out[rng.next_below(i)]);
  }
  REHEARSE_ASSERT_EQ(out.size(), n);  // one bucket per job
  return out;
}

JobSpec make_job(const FleetSpec& spec, std::size_t index, int width, const FleetKind& kind,
                 const std::string& service) {
  REHEARSE_ASSERT_GE(width, 1);
  // The parser's ranges: a call kind calls at least once, a group kind names targets.
  REHEARSE_ASSERT(kind.kind == JobKind::call ? kind.calls >= 1 : !kind.targets.empty());
  JobSpec job;
  job.id = fmt::format("{}-{:0{}}", spec.id_prefix, index, width);
  job.kind = kind.kind;
  job.side_effects = default_side_effects(kind.kind);
  if (kind.kind == JobKind::call) {
    job.calls.assign(static_cast<std::size_t>(kind.calls), JobSpec::Call{service, "GET", "/fleet"});
  } else {
    job.tasks.push_back(GroupTask{"work", TaskOutput::summary, kind.model_calls});
    job.targets = kind.targets;
  }
  return job;
}

}  // namespace

FleetParse parse_fleet(const json& block, const std::string& pointer, const FleetContext& context) {
  return FleetParser(context).parse(block, pointer);
}

FleetExpansion expand_fleet(const FleetSpec& spec, std::uint64_t seed, TimeMs start_ms,
                            const std::string& pointer) {
  const Rng root(seed);
  const auto kinds = assign(spec.kinds, spec.jobs, root, "kind");
  const auto schedules = assign(spec.schedules, spec.jobs, root, "schedule");
  const auto policies = assign(spec.policies, spec.jobs, root, "policy");
  const auto failures = assign(spec.failure_rates, spec.jobs, root, "failure");
  const int width =
      static_cast<int>(std::to_string(std::max<std::int64_t>(spec.jobs - 1, 0)).size());
  FleetExpansion out;
  out.jobs.reserve(static_cast<std::size_t>(spec.jobs));
  std::vector<bool> service_used(spec.failure_rates.size(), false);
  for (std::size_t i = 0; i < static_cast<std::size_t>(spec.jobs); ++i) {
    const FleetKind& kind = spec.kinds[kinds[i]].value;
    const bool own = kind.kind == JobKind::call && kind.service.empty();
    if (own) service_used[failures[i]] = true;
    JobSpec job = make_job(spec, i, width, kind,
                           own ? fleet_service_name(spec.id_prefix, failures[i]) : kind.service);
    job.schedule = spec.schedules[schedules[i]].value;
    job.retry_policy = spec.policies[policies[i]].value;
    job.pointer = pointer;
    job.from_fleet = true;
    out.jobs.push_back(std::move(job));
  }
  REHEARSE_ASSERT_EQ(out.jobs.size(), static_cast<std::size_t>(spec.jobs));
  for (std::size_t b = 0; b < spec.failure_rates.size(); ++b) {
    if (!service_used[b]) continue;
    const std::string name = fleet_service_name(spec.id_prefix, b);
    out.services[name] = UserService{};
    const FleetFailure& failure = spec.failure_rates[b].value;
    if (failure.rate <= 0.0) continue;
    FaultSpec fault;
    fault.kind = FaultKind::http_errors;
    fault.at_ms = start_ms;
    fault.user_service = name;
    fault.http_status = failure.status;
    fault.rate = failure.rate;
    fault.note = "fleet failure rate";
    fault.pointer = pointer + "/failure_rates/" + std::to_string(b);
    out.faults.push_back(std::move(fault));
  }
  // A fault only for a service some job calls, and at most one per service.
  REHEARSE_ASSERT_LE(out.faults.size(), out.services.size());
  return out;
}

}  // namespace rehearse::sim
