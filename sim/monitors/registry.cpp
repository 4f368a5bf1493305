#include "sim/monitors/registry.hpp"

#include "model/assert.hpp"

#include "sim/monitors/bounded_run.hpp"
#include "sim/monitors/context.hpp"
#include "sim/monitors/deterministic.hpp"
#include "sim/monitors/item_queries_bounded.hpp"
#include "sim/monitors/no_duplicate_delivery.hpp"
#include "sim/monitors/no_secret_leak.hpp"
#include "sim/monitors/nothing_lost.hpp"
#include "sim/monitors/queue_discipline.hpp"
#include "sim/monitors/retries_bounded.hpp"
#include "sim/monitors/schedule_kept.hpp"
#include "sim/monitors/stage_monotonic.hpp"
#include "sim/monitors/state_durable.hpp"
#include "sim/monitors/token_reissue_bounded.hpp"

namespace rehearse::sim {

namespace {

// A registry entry from the monitor class itself: its name, its reads, its constructor.
template <typename M>
MonitorFactory entry() {
  return {M::kName, M::kSummary, M::reads(), [](const Scenario& scenario, MonitorContext& context) {
            return std::unique_ptr<Monitor>(std::make_unique<M>(scenario, context));
          }};
}

}  // namespace

// docs/semantics.md §10's order (queue_discipline, a rule of §6, beside the
// delivery rules), plus bounded_run. A new invariant is one class (its own
// .hpp/.cpp here) and one line below.
const std::vector<MonitorFactory>& monitor_registry() {
  static const std::vector<MonitorFactory> kRegistry{
      entry<StageMonotonic>(), entry<RetriesBounded>(),      entry<ScheduleKept>(),
      entry<NothingLost>(),    entry<NoDuplicateDelivery>(), entry<QueueDiscipline>(),
      entry<StateDurable>(),   entry<TokenReissueBounded>(), entry<ItemQueriesBounded>(),
      entry<NoSecretLeak>(),   entry<Deterministic>(),       entry<BoundedRun>(),
  };
  // One monitor per name of the scenario format's vocabulary, in its order.
  static const bool kMatchesTheFormat = [] {
    REHEARSE_ASSERT_EQ(kRegistry.size(), invariant_names().size());
    for (std::size_t i = 0; i < kRegistry.size(); ++i) {
      REHEARSE_ASSERT_EQ(kRegistry[i].name, invariant_names()[i]);
    }
    return true;
  }();
  (void)kMatchesTheFormat;
  return kRegistry;
}

const std::vector<InvariantSpec>& invariant_specs() {
  static const std::vector<InvariantSpec> kSpecs = [] {
    std::vector<InvariantSpec> specs;
    for (const MonitorFactory& f : monitor_registry()) specs.push_back({f.name, f.reads});
    return specs;
  }();
  return kSpecs;
}

const std::string& invariant_summary(const std::string& name) {
  static const std::string kNone;
  for (const MonitorFactory& f : monitor_registry()) {
    if (f.name != name) continue;
    // Every registered monitor says in a line what it watches.
    REHEARSE_ASSERT(!f.summary.empty());
    return f.summary;
  }
  return kNone;
}

const std::vector<std::string>& shared_reads() {
  static const std::vector<std::string> kReads{
      "process_boot",      "process_crash",     "disk_process_crashed",
      "disk_crash",        "service_call",      "queue_add",
      "durable_delivery",  "outbox_add",        "queue_take",
      "queue_intent",      "queue_done",        "queue_cancel",
      "durable_job_state", "service_reply",     "store_corrupt_injected",
      "disk_corrupted",    "journal_tail_gone", "disk_lock"};
  return kReads;
}

}  // namespace rehearse::sim
