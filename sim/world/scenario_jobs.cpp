// The loader's jobs: the table of job kinds, each kind's keys and the keys
// every job shares, and the fleet block that generates jobs.
#include "sim/world/scenario_loader.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "model/policy_forms.hpp"
#include "model/policy_text.hpp"

namespace rehearse::sim::scenario_detail {

void Loader::load_jobs(const json& v, const std::string& pointer) {
  // The listed jobs come first (the fleet's are read after them).
  REHEARSE_ASSERT(scenario_.jobs.empty());
  if (!expect_array(v, pointer, "a list of jobs", true, kMaxListedJobs)) return;
  const std::size_t errors_before = errors_.size() + omitted_;
  for (std::size_t i = 0; i < v.size(); ++i) load_job(v[i], child(pointer, i));
  REHEARSE_ASSERT_LE(scenario_.jobs.size(), v.size());  // at most one job per entry
  jobs_ok_ = errors_.size() + omitted_ == errors_before;
}

void Loader::load_job(const json& v, const std::string& pointer) {
  if (!expect_object(v, pointer, "a job")) return;
  JobSpec job;
  job.pointer = pointer;
  const std::optional<JobKind> kind = load_job_kind(v, pointer);
  load_job_id(v, pointer, job);
  load_job_schedule(v, pointer, job);
  load_job_common(v, pointer, kind, job);
  if (!kind) return;
  job.kind = *kind;
  LoaderJobKeys keys(*this, v, job);
  job_kind_def(*kind).read(keys, job);
  scenario_.jobs.push_back(std::move(job));
}

// The kind decides which keys are allowed, so it is read first; keys of
// another kind are refused with what they belong to.
std::optional<JobKind> Loader::load_job_kind(const json& v, const std::string& pointer) {
  std::optional<JobKind> kind;
  const std::vector<JobKindDef>& kinds = job_kind_table();
  std::vector<std::string> names;
  for (const JobKindDef& spec : kinds) names.push_back(spec.name);
  if (const json* k = require(v, pointer, "kind", "one of: " + join(names))) {
    if (auto i = read_name(*k, child(pointer, "kind"), names, "job kind")) {
      REHEARSE_ASSERT_LT(*i, kinds.size());  // the names are the table's, in its order
      kind = static_cast<JobKind>(*i);
    }
  }
  std::vector<std::string> allowed = keys_of("job");
  std::map<std::string, std::string> elsewhere;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    const auto& specific = kinds[k].keys;
    const bool mine = !kind || static_cast<std::size_t>(*kind) == k;
    for (const auto& key : specific) {
      if (mine) {
        allowed.push_back(key);
      } else if (elsewhere.count(key) == 0) {
        elsewhere[key] = fmt::format("does not apply to a '{}' job", to_string(*kind));
      }
    }
  }
  for (const auto& key : allowed) elsewhere.erase(key);
  check_keys(v, pointer, allowed, elsewhere);
  return kind;
}

void Loader::load_job_id(const json& v, const std::string& pointer, JobSpec& job) {
  if (const json* id = require(v, pointer, "id", "the job id")) {
    if (auto s = read_identifier(*id, child(pointer, "id"), "job id")) {
      if (!job_id_set_.insert(*s).second) {
        value_error(child(pointer, "id"), fmt::format("duplicate job id '{}'", *s));
      } else {
        job.id = *s;
        job_ids_.push_back(*s);
      }
    }
  }
  // job_id_set_ indexes job_ids_: the same ids, each once.
  REHEARSE_ASSERT_EQ(job_ids_.size(), job_id_set_.size());
}

void Loader::load_job_zone(const json& v, const std::string& pointer, JobSpec& job) {
  const json* z = field(v, "tz");
  if (z == nullptr) return;
  const std::string at = child(pointer, "tz");
  if (auto name = read_string(*z, at, "an IANA time zone name such as \"Europe/Berlin\"")) {
    if (auto zone = TimeZone::locate(*name)) {
      job.tz = *name;
    } else {
      value_error(at, zone.error().message);
    }
  }
}

void Loader::load_job_schedule(const json& v, const std::string& pointer, JobSpec& job) {
  load_job_zone(v, pointer, job);
  if (const json* s = require(v, pointer, "schedule", "a cron expression")) {
    const std::string at = child(pointer, "schedule");
    if (auto text = read_string(*s, at, "a cron expression")) {
      job.schedule = *text;
      auto parsed = CronSchedule::parse(*text, job.tz);
      if (!parsed) {
        add(parsed.error().code, at,
            fmt::format("invalid cron \"{}\": {}", *text, parsed.error().message));
      } else {
        // Whether it can fire at all (`0 0 30 2 *` cannot): searching from the
        // epoch keeps this independent of a possibly invalid start.
        auto first = parsed->next_after(start_ok_ ? scenario_.start_ms : 0);
        if (!first && first.error().code == ErrorCode::never_fires) {
          add(ErrorCode::never_fires, at, fmt::format("invalid cron \"{}\": never fires", *text));
        }
      }
    }
  }
  if (const json* e = field(v, "schedule_env")) {
    const std::string at = child(pointer, "schedule_env");
    if (auto name = read_string(*e, at, "an environment variable name")) {
      if (is_env_name(*name)) {
        job.schedule_env = *name;
      } else {
        value_error(at, fmt::format("invalid environment variable name \"{}\" (letters, digits "
                                    "and _, not starting with a digit)",
                                    *name));
      }
    }
  }
}

// {"k8s": "@job.yaml"} or {"celery": "@app.task(...)"}: a system's settings
// as its users keep them, in a file beside the scenario or inline, read into
// the system's keys (model/policy_text.hpp). Anything else is kept as written.
json Loader::native_policy(const json& policy, const std::string& pointer) {
  if (!policy.is_object()) return policy;
  json texts = policy;
  std::map<std::string, std::string> files;  // system -> the file its text came from
  for (auto& [system, value] : texts.items()) {
    if (!value.is_string() || find_policy_system(system) == nullptr) continue;
    const auto reference = policy_file_reference(value.get<std::string>());
    if (!reference) continue;
    const std::string file = (std::filesystem::path(path_).parent_path() / *reference).string();
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      reference_error(child(pointer, system),
                      fmt::format("cannot read the {} policy file {}", system, file));
      return policy;
    }
    value = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    files[system] = file;
  }
  auto read = read_policy_texts(texts);
  if (!read.ok()) {
    // where: the text's pointer, then its line:column.
    const std::string& w = read.error().where;
    const std::size_t space = w.find(' ');
    const std::string inner = w.substr(0, space);
    const std::string system = inner.substr(1, inner.find('/', 1) - 1);
    const std::string text_at =
        space == std::string::npos ? "" : fmt::format(" (at {} of ", w.substr(space + 1));
    const auto file = files.find(system);
    const std::string origin = file == files.end() ? "the text)" : file->second + ")";
    value_error(pointer + inner, read.error().message + (text_at.empty() ? "" : text_at + origin));
    return policy;
  }
  return *read;
}

// The keys every kind shares: policy, side effects, idempotency key, note.
void Loader::load_job_common(const json& v, const std::string& pointer, std::optional<JobKind> kind,
                             JobSpec& job) {
  if (const json* p = field(v, "retry_policy")) {
    job.retry_policy = native_policy(*p, child(pointer, "retry_policy"));
    job.policy_from_text = *job.retry_policy != *p;
  }
  if (kind) job.side_effects = default_side_effects(*kind);
  if (const json* s = field(v, "side_effects")) {
    const std::vector<std::string> names{"none", "draft", "publish"};
    if (auto i = read_name(*s, child(pointer, "side_effects"), names, "side effect")) {
      job.side_effects = *parse_side_effect_kind(names[*i]);
    }
  }
  if (const json* k = field(v, "idempotency_key")) {
    const std::string at = child(pointer, "idempotency_key");
    if (auto s = read_string(*k, at, "a non-empty string")) {
      if (s->empty()) {
        value_error(at, "expected a non-empty string, got an empty one");
      } else {
        job.idempotency_key = *s;
      }
    }
  }
  if (const json* n = field(v, "note")) {
    if (auto s = read_string(*n, child(pointer, "note"))) job.note = *s;
  }
  REHEARSE_ASSERT(!job.idempotency_key || !job.idempotency_key->empty());
}

// The `fleet` block (sim/world/fleet.hpp): read and checked there, generated from
// the scenario's seed; the jobs, services and faults join the listed ones.
void Loader::load_fleet(const json& v, const std::string& pointer) {
  const FleetContext context{scenario_.start_ms,
                             declared_services_.count(ServiceKind::model_api) != 0, target_names_,
                             user_services_};
  FleetParse parsed = parse_fleet(v, pointer, context);
  for (Error& e : parsed.errors) add(e.code, e.where, std::move(e.message));
  jobs_ok_ = jobs_ok_ && parsed.spec && start_ok_;
  if (!jobs_ok_) return;
  if (scenario_.jobs.size() + static_cast<std::size_t>(parsed.spec->jobs) > kMaxJobs) {
    value_error(child(pointer, "jobs"),
                fmt::format("too many jobs: {} listed + {} in the fleet (at most {} in all)",
                            scenario_.jobs.size(), parsed.spec->jobs, kMaxJobs));
    jobs_ok_ = false;
    return;
  }
  FleetExpansion fleet = expand_fleet(*parsed.spec, scenario_.seed, scenario_.start_ms, pointer);
  for (JobSpec& job : fleet.jobs) {
    if (!job_id_set_.insert(job.id).second) {
      value_error(child(pointer, "id_prefix"),
                  fmt::format("the fleet's job id '{}' is also a listed job's id", job.id));
      jobs_ok_ = false;
      return;
    }
    job_ids_.push_back(job.id);
    scenario_.jobs.push_back(std::move(job));
  }
  for (auto& [name, service] : fleet.services) {
    user_services_.insert(name);
    scenario_.services.user[name] = service;
  }
  fleet_faults_ = std::move(fleet.faults);  // after the listed faults
  REHEARSE_ASSERT_LE(scenario_.jobs.size(), kMaxJobs);
  REHEARSE_ASSERT_EQ(job_ids_.size(), job_id_set_.size());
}

// Every job kind's own keys, from the table: "job_<kind>" -> its keys.
void add_job_kind_keys(std::map<std::string, std::vector<std::string>>& keys) {
  for (const JobKindDef& kind : job_kind_table()) {
    // Kind names are unique, and no other level is named job_<kind>.
    REHEARSE_ASSERT(keys.count("job_" + kind.name) == 0);
    keys["job_" + kind.name] = kind.keys;
  }
}

// ------------------------------------------------- a job kind's key reader

LoaderJobKeys& LoaderJobKeys::of(JobKeyReader& keys) {
  auto* loader_keys = dynamic_cast<LoaderJobKeys*>(&keys);
  REHEARSE_ASSERT(loader_keys != nullptr);  // built-in readers run inside the loader only
  return *loader_keys;
}

const json* LoaderJobKeys::present(std::string_view key, bool required, std::string_view expected) {
  REHEARSE_ASSERT(!key.empty());  // a kind's key names
  if (required) return loader_.require(value_, job_.pointer, key, expected);
  return Loader::field(value_, key);
}

std::optional<std::int64_t> LoaderJobKeys::read_int(std::string_view key, std::int64_t min,
                                                    std::int64_t max, bool required) {
  REHEARSE_ASSERT_LE(min, max);  // a kind's range is never empty
  const json* v = present(key, required, fmt::format("an integer from {} to {}", min, max));
  if (v == nullptr) return std::nullopt;
  return loader_.read_int(*v, child(job_.pointer, key), min, max);
}

std::optional<bool> LoaderJobKeys::read_bool(std::string_view key, bool required) {
  const json* v = present(key, required, "true or false");
  if (v == nullptr) return std::nullopt;
  return loader_.read_bool(*v, child(job_.pointer, key));
}

std::optional<std::string> LoaderJobKeys::read_string(std::string_view key, bool required) {
  const json* v = present(key, required, "a string");
  if (v == nullptr) return std::nullopt;
  return loader_.read_string(*v, child(job_.pointer, key));
}

std::optional<std::string> LoaderJobKeys::read_service(std::string_view key, bool required) {
  const json* v = present(key, required, "a service declared in /services");
  if (v == nullptr) return std::nullopt;
  const std::string at = child(job_.pointer, key);
  auto name = loader_.read_identifier(*v, at, "service name");
  if (!name) return std::nullopt;
  const std::optional<ServiceKind> builtin = parse_service_kind(*name);
  const bool declared = builtin ? loader_.declared_services_.count(*builtin) != 0
                                : loader_.user_services_.count(*name) != 0;
  if (!declared) {
    loader_.reference_error(at, fmt::format("job '{}' uses the '{}' service, which is not "
                                            "declared in /services",
                                            job_.id, *name));
    return std::nullopt;
  }
  return name;
}

std::optional<std::vector<std::string>> LoaderJobKeys::read_targets(std::string_view key,
                                                                    bool required) {
  const json* v = present(key, required, "a non-empty array of messenger targets");
  if (v == nullptr) return std::nullopt;
  const std::size_t errors_before = loader_.errors_.size() + loader_.omitted_;
  std::vector<std::string> targets = loader_.load_targets(*v, child(job_.pointer, key), true);
  if (loader_.errors_.size() + loader_.omitted_ != errors_before) return std::nullopt;
  REHEARSE_ASSERT(!targets.empty());  // read as a non-empty list, or an error was reported
  return targets;
}

void LoaderJobKeys::error(std::string_view key, std::string message) {
  REHEARSE_ASSERT(!key.empty() && !message.empty());  // a kind's key, and what is wrong with it
  loader_.value_error(child(job_.pointer, key), std::move(message));
}

}  // namespace rehearse::sim::scenario_detail
