// The scenario format's names: the enums' to_string and parse functions and
// the table of known keys per level.
#include "sim/world/scenario_loader.hpp"

namespace rehearse::sim {

using scenario_detail::kTaskOutputNames;

// ------------------------------------------------------------- vocabulary

namespace {

constexpr std::array<const char*, 4> kServiceNames{"model-api", "orchestrator", "brokerage",
                                                   "messenger"};
constexpr std::array<const char*, 3> kStateFileNames{"retry_state.json", "jobs.json",
                                                     "jobs_state.json"};
constexpr std::array<const char*, 5> kCorruptionModeNames{"garbage", "empty", "truncated", "schema",
                                                          "flip"};
constexpr std::array<const char*, 4> kFlagKindNames{"policy_error", "side_effects",
                                                    "schedule_config", "schedule_idle"};

template <std::size_t N>
std::optional<std::size_t> index_of(const std::array<const char*, N>& names,
                                    std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (name == names[i]) return i;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(ServiceKind kind) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(kind), kServiceNames.size());
  return kServiceNames[static_cast<std::size_t>(kind)];
}
std::optional<ServiceKind> parse_service_kind(std::string_view name) noexcept {
  const auto i = index_of(kServiceNames, name);
  if (!i) return std::nullopt;
  return static_cast<ServiceKind>(*i);
}
const char* to_string(TaskOutput output) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(output), kTaskOutputNames.size());
  return kTaskOutputNames[static_cast<std::size_t>(output)];
}
const char* to_string(FaultKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  // Names in the table are literals, so data() is a C string.
  return i < fault_kinds().size() ? fault_kinds()[i].name.data() : "unknown";
}
std::optional<FaultKind> parse_fault_kind(std::string_view name) noexcept {
  const FaultKindSpec* spec = find_fault_kind(name);
  if (spec == nullptr) return std::nullopt;
  // An entry of the table itself: its position is the FaultKind.
  REHEARSE_ASSERT(spec >= fault_kinds().data() &&
                  spec < fault_kinds().data() + fault_kinds().size());
  return static_cast<FaultKind>(spec - fault_kinds().data());
}
const char* to_string(StateFile file) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(file), kStateFileNames.size());
  return kStateFileNames[static_cast<std::size_t>(file)];
}
const char* to_string(CorruptionMode mode) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(mode), kCorruptionModeNames.size());
  return kCorruptionModeNames[static_cast<std::size_t>(mode)];
}
const char* to_string(FlagKind kind) noexcept {
  REHEARSE_ASSERT_LT(static_cast<std::size_t>(kind), kFlagKindNames.size());
  return kFlagKindNames[static_cast<std::size_t>(kind)];
}

bool fault_has_duration(FaultKind kind) noexcept {
  const auto i = static_cast<std::size_t>(kind);
  return i < fault_kinds().size() && fault_kinds()[i].lasting;
}

bool ServiceDecls::has(ServiceKind kind) const noexcept {
  switch (kind) {
    case ServiceKind::model_api: return model_api.has_value();
    case ServiceKind::orchestrator: return orchestrator.has_value();
    case ServiceKind::brokerage: return brokerage.has_value();
    case ServiceKind::messenger: return messenger.has_value();
  }
  return false;
}

const JobSpec* Scenario::find_job(std::string_view id) const noexcept {
  for (const auto& job : jobs) {
    if (job.id == id) return &job;
  }
  return nullptr;
}

const std::vector<std::string>& issue_status_names() {
  // The orchestrator's external statuses. Only in_progress, in_review and done
  // move an internal stage (docs/semantics.md §8); the others exist so a
  // scenario can send "unknown to the mapping" statuses without typos passing.
  static const std::vector<std::string> kNames{"backlog", "todo", "in_progress", "in_review",
                                               "blocked", "done", "cancelled"};
  return kNames;
}

const std::vector<std::string>& invariant_names() {
  // The format's vocabulary for expect.violations, in docs/semantics.md
  // §10's order plus bounded_run. The monitors' registry (a layer above)
  // holds one monitor per name in this order; it asserts so when it is
  // built, and test_monitor_registry checks it.
  static const std::vector<std::string> kNames{
      "stage_monotonic",       "retries_bounded",  "schedule_kept", "nothing_lost",
      "no_duplicate_delivery", "queue_discipline", "state_durable", "token_reissue_bounded",
      "item_queries_bounded",  "no_secret_leak",   "deterministic", "bounded_run"};
  return kNames;
}

const std::vector<std::string>& stage_names() {
  static const std::vector<std::string> kNames{"DESIGNING", "BUILDING", "REVIEWING", "DONE",
                                               "DESIGN_FAILED"};
  return kNames;
}

const std::vector<std::string>& notification_event_names() {
  // The core's NotificationEvent names (model/notification.hpp); the tests
  // check that each parses there, so the two lists cannot drift apart.
  static const std::vector<std::string> kNames{"retry_scheduled",  "retry_exhausted",
                                               "failed_permanent", "recovered",
                                               "policy_invalid",   "state_corrupt"};
  return kNames;
}

namespace {

using scenario_detail::add_job_kind_keys;

// Every fault kind's keys, from the table: "fault_<kind>" -> its keys.
void add_fault_kind_keys(std::map<std::string, std::vector<std::string>>& keys) {
  for (const FaultKindSpec& kind : fault_kinds()) {
    const bool fresh =
        keys.emplace("fault_" + std::string(kind.name), fault_key_names(kind)).second;
    REHEARSE_ASSERT(fresh);  // kind names are unique, and no other level is named fault_*
  }
}

}  // namespace

const std::vector<std::string>& slot_outcome_names() {
  // In SlotOutcome's order (the loader maps an index to the enum).
  static const std::vector<std::string> kNames{"delivered", "skipped",    "failed",   "exhausted",
                                               "in_flight", "superseded", "coalesced"};
  // One name per SlotOutcome, the last enumerator last.
  REHEARSE_ASSERT_EQ(kNames.size(), static_cast<std::size_t>(SlotOutcome::coalesced) + 1);
  return kNames;
}

const char* to_string(SlotOutcome outcome) noexcept {
  const auto i = static_cast<std::size_t>(outcome);
  return i < slot_outcome_names().size() ? slot_outcome_names()[i].c_str() : "?";
}

std::optional<SlotOutcome> parse_slot_outcome(std::string_view name) noexcept {
  const auto& names = slot_outcome_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<SlotOutcome>(i);
  }
  return std::nullopt;
}

const std::vector<std::string>& queue_store_names() {
  static const std::vector<std::string> kNames{"memory", "disk"};
  REHEARSE_ASSERT_EQ(kNames.size(), static_cast<std::size_t>(QueueStore::disk) + 1);
  return kNames;
}

const char* to_string(QueueStore store) noexcept {
  const auto i = static_cast<std::size_t>(store);
  return i < queue_store_names().size() ? queue_store_names()[i].c_str() : "?";
}

const std::map<std::string, std::vector<std::string>>& scenario_known_keys() {
  static const std::map<std::string, std::vector<std::string>> kKeys = [] {
    std::map<std::string, std::vector<std::string>> keys{
        {"scenario",
         {"format", "scenario", "description", "notes", "start", "until", "seed", "env", "queue",
          "services", "jobs", "fleet", "faults", "expect"}},
        {"queue", {"store", "concurrency", "workers", "standby_poll", "max_events"}},
        {"services", {"model-api", "orchestrator", "brokerage", "messenger"}},
        {"model_api", {"latency", "timeout"}},
        {"orchestrator", {"instance", "issues", "agents", "latency", "timeout"}},
        {"issue", {"id", "status"}},
        {"agent", {"id", "role", "present"}},
        {"brokerage", {"token_lifetime", "issue_latency", "latency", "timeout"}},
        {"messenger", {"targets", "latency", "timeout"}},
        {"user_service", {"latency", "timeout", "capacity"}},
        {"capacity",
         {"rate", "per", "burst", "concurrency", "status", "retry_after", "refusals_count"}},
        {"job",
         {"id", "kind", "schedule", "schedule_env", "tz", "retry_policy", "side_effects",
          "idempotency_key", "note"}},
        {"task", {"id", "produces", "model_calls"}},
        {"item", {"issue", "stage", "lost"}},
        {"call", {"service", "method", "path"}},
        {"fault", {"at", "kind", "note"}},
        {"expect", {"jobs", "items", "services", "notifications", "violations", "damaged_files"}},
        {"job_expectation",
         {"delivered_slots", "skipped_slots", "failed_slots", "in_flight_slots", "final_status",
          "retries", "runs", "calls", "notifications", "max_delay", "state", "policy", "slots",
          "messages", "lateness"}},
        {"state_expectation",
         {"retry_status", "next_action", "next_run_at", "next_retry_at", "retry_count",
          "failure_class"}},
        {"policy_expectation",
         {"max_retries", "backoff", "delay", "budget", "factor", "cap", "jitter", "deadline",
          "retriers"}},
        {"slot_expectation",
         {"slot", "outcome", "attempts", "attempt_at", "tolerance", "notifications"}},
        {"message_expectation", {"delivery", "failure_notice", "notification", "refused"}},
        {"lateness_expectation", {"at_least", "at_most"}},
        {"item_expectation", {"stage", "reason_contains", "queries", "not_found"}},
        {"expect_services", {"model-api", "orchestrator", "brokerage", "messenger"}},
        {"service_expectation", {"calls"}},
        {"user_service_expectation", {"calls", "metastable", "drained_within"}},
        {"brokerage_expectation", {"calls", "token_issues"}},
    };
    add_job_kind_keys(keys);
    add_fault_kind_keys(keys);
    return keys;
  }();
  return kKeys;
}

}  // namespace rehearse::sim
