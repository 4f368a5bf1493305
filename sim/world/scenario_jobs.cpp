// The loader's jobs: the table of job kinds, each kind's keys and the keys
// every job shares, and the fleet block that generates jobs.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim::scenario_detail {

void Loader::load_jobs(const json& v, const std::string& pointer) {
  if (!expect_array(v, pointer, "a list of jobs", true, kMaxListedJobs)) return;
  const std::size_t errors_before = errors_.size() + omitted_;
  for (std::size_t i = 0; i < v.size(); ++i) load_job(v[i], child(pointer, i));
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
  (this->*job_kinds()[static_cast<std::size_t>(*kind)].load)(v, pointer, job);
  scenario_.jobs.push_back(std::move(job));
}

// The kind decides which keys are allowed, so it is read first; keys of
// another kind are refused with what they belong to.
std::optional<JobKind> Loader::load_job_kind(const json& v, const std::string& pointer) {
  std::optional<JobKind> kind;
  std::vector<std::string> names;
  for (const ScenarioJobKind& spec : job_kinds()) names.emplace_back(spec.name);
  if (const json* k = require(v, pointer, "kind", "one of: " + join(names))) {
    if (auto i = read_name(*k, child(pointer, "kind"), names, "job kind")) {
      kind = static_cast<JobKind>(*i);
    }
  }
  std::vector<std::string> allowed = keys_of("job");
  std::map<std::string, std::string> elsewhere;
  for (std::size_t k = 0; k < job_kinds().size(); ++k) {
    const auto& specific = job_kinds()[k].keys;
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
}

void Loader::load_job_schedule(const json& v, const std::string& pointer, JobSpec& job) {
  if (const json* s = require(v, pointer, "schedule", "a cron expression")) {
    const std::string at = child(pointer, "schedule");
    if (auto text = read_string(*s, at, "a cron expression")) {
      job.schedule = *text;
      auto parsed = CronSchedule::parse(*text);
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

// The keys every kind shares: policy, side effects, idempotency key, note.
void Loader::load_job_common(const json& v, const std::string& pointer, std::optional<JobKind> kind,
                             JobSpec& job) {
  if (const json* p = field(v, "retry_policy")) job.retry_policy = *p;
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
}

// A publish job's own key: where its posts go. Each run asks the model API
// for the post (model/publish_job.hpp), so the world must have it.
void Loader::load_publish(const json& v, const std::string& pointer, JobSpec& job) {
  require_service(ServiceKind::model_api, pointer, fmt::format("publish job '{}'", job.id));
  if (const json* t = require(v, pointer, "targets", "a non-empty array of messenger targets")) {
    job.targets = load_targets(*t, child(pointer, "targets"), true);
  }
}

// A call job's own key: the calls of one run.
void Loader::load_call_job(const json& v, const std::string& pointer, JobSpec& job) {
  if (const json* c = require(v, pointer, "calls", "a non-empty list of calls")) {
    load_calls(*c, child(pointer, "calls"), job);
  }
}

void Loader::load_fetch(const json& v, const std::string& pointer, JobSpec& job) {
  const std::string who = fmt::format("job '{}'", job.id.empty() ? pointer : job.id);
  if (const json* s = field(v, "service")) {
    const std::string at = child(pointer, "service");
    if (read_name(*s, at, {"brokerage"}, "fetch service")) {
      require_service(ServiceKind::brokerage, at, who);
    }
  } else {
    require_service(ServiceKind::brokerage, pointer, who);
  }
  if (const json* r = field(v, "requests")) {
    if (auto n = read_int(*r, child(pointer, "requests"), 1, 1000)) {
      job.requests = static_cast<int>(*n);
    }
  }
  if (const json* p = field(v, "parallel")) {
    if (auto b = read_bool(*p, child(pointer, "parallel"))) job.parallel = *b;
  }
}

void Loader::load_group(const json& v, const std::string& pointer, JobSpec& job) {
  bool calls_model = false;
  if (const json* list = require(v, pointer, "tasks", "a non-empty array of tasks")) {
    const std::string at = child(pointer, "tasks");
    if (expect_array(*list, at, "a list of tasks", true, 100)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string tp = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, tp, "a task")) continue;
        check_keys(entry, tp, keys_of("task"));
        GroupTask task;
        bool ok = true;
        if (const json* id = require(entry, tp, "id", "the task id")) {
          auto s = read_identifier(*id, child(tp, "id"), "task id");
          const bool duplicate = s && std::any_of(job.tasks.begin(), job.tasks.end(),
                                                  [&](const GroupTask& t) { return t.id == *s; });
          if (duplicate) value_error(child(tp, "id"), fmt::format("duplicate task id '{}'", *s));
          if (s && !duplicate) {
            task.id = *s;
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (const json* p = require(entry, tp, "produces", "one of: summary, preview, skip")) {
          if (auto i = read_name(*p, child(tp, "produces"), to_vector(kTaskOutputNames),
                                 "task output")) {
            task.produces = static_cast<TaskOutput>(*i);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        // A task that skips usually decides so without asking the model.
        task.model_calls = task.produces == TaskOutput::skip ? 0 : 1;
        if (const json* c = field(entry, "model_calls")) {
          if (auto k = read_int(*c, child(tp, "model_calls"), 0, 100)) {
            task.model_calls = static_cast<int>(*k);
          }
        }
        if (task.model_calls > 0) calls_model = true;
        if (ok) job.tasks.push_back(task);
      }
    }
  }
  if (calls_model) {
    require_service(ServiceKind::model_api, child(pointer, "tasks"),
                    fmt::format("group job '{}'", job.id));
  }
  if (const json* t = require(v, pointer, "targets", "a non-empty array of messenger targets")) {
    job.targets = load_targets(*t, child(pointer, "targets"), true);
  }
}

void Loader::load_reconcile(const json& v, const std::string& pointer, JobSpec& job) {
  const bool has_orchestrator = require_service(ServiceKind::orchestrator, pointer,
                                                fmt::format("reconcile job '{}'", job.id));
  if (const json* list = require(v, pointer, "items", "a non-empty array of items")) {
    const std::string at = child(pointer, "items");
    if (expect_array(*list, at, "a list of items", true)) {
      for (std::size_t n = 0; n < list->size(); ++n) {
        const std::string ip = child(at, n);
        const json& entry = (*list)[n];
        if (!expect_object(entry, ip, "an item")) continue;
        check_keys(entry, ip, keys_of("item"));
        ReconcileItem item;
        bool ok = true;
        if (const json* s = field(entry, "stage")) {
          if (auto k = read_name(*s, child(ip, "stage"), stage_names(), "stage")) {
            item.stage = stage_names()[*k];
          }
        }
        if (const json* l = field(entry, "lost")) {
          if (auto b = read_bool(*l, child(ip, "lost"))) item.lost = *b;
        }
        if (const json* is = require(entry, ip, "issue", "the external issue id")) {
          const std::string isp = child(ip, "issue");
          auto s = read_identifier(*is, isp, "issue id");
          if (s && std::any_of(job.items.begin(), job.items.end(),
                               [&](const ReconcileItem& i) { return i.issue == *s; })) {
            value_error(isp, fmt::format("duplicate item '{}' in this job", *s));
            s.reset();
          }
          if (s && has_orchestrator) {
            const bool known =
                std::find(issue_ids_.begin(), issue_ids_.end(), *s) != issue_ids_.end();
            if (item.lost && known) {
              value_error(isp, fmt::format("item '{}' is declared lost, but the orchestrator "
                                           "has an issue '{}' at start; remove one of the two",
                                           *s, *s));
              s.reset();
            } else if (!item.lost && !known) {
              std::string message = fmt::format(
                  "unknown issue '{}' (not in /services/orchestrator/issues; an issue already "
                  "gone at start needs \"lost\": true)",
                  *s);
              if (const auto near = closest(*s, issue_ids_)) {
                message += fmt::format("; did you mean '{}'?", *near);
              }
              reference_error(isp, std::move(message));
              s.reset();
            }
          }
          if (s) {
            item.issue = *s;
            item_issues_.push_back(*s);
          } else {
            ok = false;
          }
        } else {
          ok = false;
        }
        if (ok) job.items.push_back(item);
      }
    }
  }
  if (const json* b = field(v, "batch_size")) {
    if (auto n = read_int(*b, child(pointer, "batch_size"), 1, 10'000)) {
      job.batch_size = static_cast<int>(*n);
    }
  }
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
}

// The table of job kinds (the loader's keys and readers follow from it).
const std::vector<ScenarioJobKind>& Loader::job_kinds() {
  static const std::vector<ScenarioJobKind> kKinds = [] {
    std::vector<ScenarioJobKind> kinds{
        {JobKind::group,
         "group",
         {"tasks", "targets"},
         SideEffectKind::draft,
         true,
         &Loader::load_group},
        {JobKind::fetch,
         "fetch",
         {"service", "requests", "parallel"},
         SideEffectKind::none,
         false,
         &Loader::load_fetch},
        {JobKind::reconcile,
         "reconcile",
         {"items", "batch_size"},
         SideEffectKind::none,
         true,
         &Loader::load_reconcile},
        {JobKind::publish,
         "publish",
         {"targets"},
         SideEffectKind::publish,
         true,
         &Loader::load_publish},
        {JobKind::call, "call", {"calls"}, SideEffectKind::none, false, &Loader::load_call_job},
    };
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      REHEARSE_ASSERT(static_cast<std::size_t>(kinds[i].kind) == i);  // in JobKind order
    }
    return kinds;
  }();
  return kKinds;
}

// Every job kind's own keys, from the table: "job_<kind>" -> its keys.
void add_job_kind_keys(std::map<std::string, std::vector<std::string>>& keys) {
  for (const ScenarioJobKind& kind : Loader::job_kinds()) {
    keys[std::string("job_") + kind.name] = kind.keys;
  }
}

}  // namespace rehearse::sim::scenario_detail

namespace rehearse::sim {

using scenario_detail::Loader;

const std::vector<JobKind>& all_job_kinds() {
  static const std::vector<JobKind> kAll = [] {
    std::vector<JobKind> out;
    for (const scenario_detail::ScenarioJobKind& kind : Loader::job_kinds())
      out.push_back(kind.kind);
    return out;
  }();
  return kAll;
}

const char* to_string(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < Loader::job_kinds().size() ? Loader::job_kinds()[i].name : "unknown";
}

bool job_keeps_file(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < Loader::job_kinds().size() && Loader::job_kinds()[i].keeps_file;
}

// What a re-run does outside when a job declares nothing (the table's
// side_effects; the most cautious answer for a kind it does not know).
SideEffectKind default_side_effects(JobKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < Loader::job_kinds().size() ? Loader::job_kinds()[i].side_effects
                                        : SideEffectKind::publish;
}

}  // namespace rehearse::sim
