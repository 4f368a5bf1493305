// Part of state_durable (docs/scheduler.md, "Fail-closed modes": records the
// delivery ledger proves lost): a journal cut at a record boundary leaves a
// valid, shorter journal no reader of the file can tell from a whole one, but
// the delivery ledger records a slot only after the state write of its
// hand-out, so a ledger that holds a slot past the state's last slot proves
// the loss. The world computes that with its own readers of both files when it
// cuts (`store_corrupt_injected`'s `ledger_ahead`: job, ledger_slot,
// state_last_slot); a process that boots while the state directory is still as
// the cut left it (no write, append, rename or removal there since) must report
// the damage (the queue's outbox `state_corrupt`) before it goes down or the
// run ends, whatever it writes meanwhile. A job whose own ledger the world damaged since is not
// counted (its reader cannot prove anything).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "model/time.hpp"
#include "sim/monitors/monitor.hpp"

namespace rehearse::sim {

class LedgerLossWatch {
 public:
  explicit LedgerLossWatch(const char* invariant) : invariant_(invariant) {}

  // `came_up` / `went_down`: the event boots / takes down the acting worker.
  void observe(const TraceEvent& e, bool came_up, bool went_down);
  Violations finish(std::size_t events_seen, TimeMs until_ms) const;

 private:
  struct Proof {
    std::string job;
    std::string ledger_slot;
    std::string state_last_slot;  // "none" when the state does not know the job
  };
  void on_cut(const TraceEvent& e);

  const char* invariant_;
  std::string dir_;             // the state directory the cut journal is in
  std::vector<Proof> proofs_;   // what the ledger proves lost, while the directory is untouched
  std::optional<TimeMs> owed_;  // a boot since which the report is owed
};

}  // namespace rehearse::sim
