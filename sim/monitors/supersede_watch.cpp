#include "sim/monitors/supersede_watch.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"

namespace rehearse::sim {

SupersedeWatch::SupersedeWatch(const char* invariant, const JobTable& jobs,
                               const ProcessTracker& process)
    : invariant_(invariant), jobs_(jobs), process_(process) {}

bool SupersedeWatch::per_episode(const std::string& job) const {
  const MonitoredJob* j = jobs_.find(job);
  return j != nullptr && j->policy.valid && !j->policy.per_slot;
}

void SupersedeWatch::observe(const TraceEvent& e, std::size_t i, Violations& out) {
  if (is_crash_event(e.type)) {
    superseded_.clear();
    return;
  }
  if (!e.slot) return;
  const std::int64_t id = e.num("id", -1);
  if (e.type == "queue_add" && e.flag("added")) {
    if (e.str("kind") == "retry") pending_[id] = PendingRetry{e.job, *e.slot};
    if (e.str("kind") == "regular") on_hand_out(e);
  } else if (e.type == "queue_cancel") {
    pending_.erase(id);
    superseded_.erase(id);
  } else if (e.type == "queue_take") {
    on_take(e, i, out);
    pending_.erase(id);
    superseded_.erase(id);
  }
  // Only pending retries are superseded; both forget an entry together.
  REHEARSE_ASSERT_LE(superseded_.size(), pending_.size());
}

// A later slot came due: every retry of the job still pending is the old
// episode's, and the new slot supersedes it.
void SupersedeWatch::on_hand_out(const TraceEvent& e) {
  // observe() hands over a regular slot's queue_add.
  REHEARSE_ASSERT(e.slot.has_value());
  if (!per_episode(e.job)) return;
  for (const auto& [id, retry] : pending_) {
    if (retry.job == e.job && retry.slot < *e.slot) superseded_.insert(id);
  }
  // Only pending retries are superseded; both forget an entry together.
  REHEARSE_ASSERT_LE(superseded_.size(), pending_.size());
}

void SupersedeWatch::on_take(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "queue_take");
  REHEARSE_ASSERT(e.slot.has_value());
  if (e.str("kind") == "regular") {
    // The latest regular run, not the latest slot: after a boot that lost the
    // store's history an older slot may be handed out again (schedule_kept
    // judges that), and its retries are the episode's from then on.
    regular_started_[e.job] = *e.slot;
    return;
  }
  if (e.str("kind") != "retry" || !per_episode(e.job)) return;
  if (process_.store_refused() || process_.boot_blind()) return;  // state_durable's
  const auto latest = regular_started_.find(e.job);
  if (latest != regular_started_.end() && latest->second > *e.slot) {
    out.push_back({invariant_, i, e.t,
                   fmt::format("job {}: a retry of slot {} started after the regular run of the "
                               "later slot {}, which supersedes it under a per_episode budget",
                               e.job, format_instant(*e.slot), format_instant(latest->second))});
  } else if (superseded_.count(e.num("id", -1)) != 0) {
    out.push_back({invariant_, i, e.t,
                   fmt::format("job {}: the retry of slot {} was pending when a later slot came "
                               "due, which supersedes it under a per_episode budget, and it "
                               "was taken all the same",
                               e.job, format_instant(*e.slot))});
  }
}

}  // namespace rehearse::sim
