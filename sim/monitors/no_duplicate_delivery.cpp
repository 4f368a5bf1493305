#include "sim/monitors/no_duplicate_delivery.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

NoDuplicateDelivery::NoDuplicateDelivery(const Scenario&, MonitorContext& context)
    : context_(context) {}

Violations NoDuplicateDelivery::observe(const TraceEvent& e, std::size_t i) {
  Violations out;
  if (context_.process.came_up_at(i) || context_.process.went_down_at(i)) {
    // A send whose ledger record had not been written when the process went
    // down is the at-least-once window: one more delivery of it is allowed.
    for (auto& [key, s] : sends_) {
      if (s.window_open) {
        // A window opens only at a delivery (on_delivered).
        REHEARSE_ASSERT_GE(s.delivered, 1);
        s.window_open = false;
        ++s.window_cuts;
      }
    }
    return out;
  }
  if (e.type == "message_delivered") {
    on_delivered(e, i, out);
    return out;
  }
  if (!e.slot || e.job.empty()) return out;
  if (e.type == "service_call") {
    check_not_reentered(e, i, out);
  } else if (e.type == "durable_delivery") {
    note_ledger(e);
  } else if (e.type == "queue_take") {
    const MonitoredJob* job = context_.jobs.find(e.job);
    if (job != nullptr && job->delivers) guards_[{e.job, *e.slot}].in_run = false;
  } else if (e.type == "run_finished" && e.str("outcome") == "failure") {
    const auto it = guards_.find({e.job, *e.slot});
    if (it != guards_.end() && it->second.in_run) {
      out.push_back({kName, i, e.t,
                     fmt::format("job {} slot {}: the send guard or slot marker was set by a run "
                                 "that failed",
                                 e.job, slot_text(e.slot))});
      it->second.in_run = false;
    }
  }
  return out;
}

void NoDuplicateDelivery::on_delivered(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT_EQ(e.type, "message_delivered");
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
      out.push_back({kName, i, e.t,
                     fmt::format("job {} slot {}: delivered to {} again (delivery {}) with no "
                                 "crash between the earlier send and its record",
                                 e.job, slot_text(e.slot), e.str("target"), s.delivered + 1)});
    }
  }
  ++s.delivered;
  s.window_open = true;
  // Each allowed duplicate used up one crash inside a window, and was a
  // delivery after the first.
  REHEARSE_ASSERT_GE(s.window_cuts, 0);
  REHEARSE_ASSERT_LT(s.duplicates_in_window, s.delivered);
}

// The delivery ledger as the world read it from the disk (`durable_delivery`):
// a target whose delivery is durably recorded closes its at-least-once window;
// a guard or marker that became durable during a run belongs to that run.
void NoDuplicateDelivery::note_ledger(const TraceEvent& e) {
  // observe() reads only a ledger record that names a job's slot.
  REHEARSE_ASSERT_EQ(e.type, "durable_delivery");
  REHEARSE_ASSERT(e.slot.has_value() && !e.job.empty());
  if (const auto* to = field(e, "delivered_to"); to != nullptr && to->is_array()) {
    for (const auto& target : *to) {
      if (target.is_string())
        sends_[{e.job, *e.slot, target.get<std::string>()}].window_open = false;
    }
  }
  GuardWatch& w = guards_[{e.job, *e.slot}];
  const auto* verdict = field(e, "verdict");
  w.marked = verdict != nullptr && verdict->is_string();
  w.outbox = e.flag("outbox");
  const bool guard = e.flag("guard") || w.marked;
  if (guard && !w.durable) w.in_run = true;
  w.durable = guard;
}

// A run of a slot the ledger marks complete exits quietly, and one whose
// decided delivery the ledger holds resends it (docs/group-jobs.md): neither
// asks the model API for the slot again.
void NoDuplicateDelivery::check_not_reentered(const TraceEvent& e, std::size_t i,
                                              Violations& out) const {
  // observe() hands over a service call about a job's slot.
  REHEARSE_ASSERT_EQ(e.type, "service_call");
  REHEARSE_ASSERT(e.slot.has_value());
  if (e.service != "model-api") return;

  const auto it = guards_.find({e.job, *e.slot});
  if (it == guards_.end() || (!it->second.marked && !it->second.outbox)) return;
  out.push_back({kName, i, e.t,
                 fmt::format("job {} slot {}: the model API was asked again for a slot whose "
                             "ledger {}",
                             e.job, slot_text(e.slot),
                             it->second.marked ? "marks it complete (a completed slot is never "
                                                 "re-entered)"
                                               : "holds its decided delivery (a retry resends "
                                                 "the stored outbox)")});
}

void NoDuplicateDelivery::tally(nlohmann::json& tallies) const {
  std::int64_t dup_window = 0;
  for (const auto& [key, s] : sends_) {
    REHEARSE_ASSERT_GE(s.duplicates_in_window, 0);
    REHEARSE_ASSERT_LE(s.duplicates_in_window, s.delivered);
    dup_window += s.duplicates_in_window;
  }
  REHEARSE_ASSERT_GE(failure_notices_, 0);
  tallies["duplicate_deliveries_in_window"] = dup_window;
  tallies["failure_notices"] = failure_notices_;
}

}  // namespace rehearse::sim
