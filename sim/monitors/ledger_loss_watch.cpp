#include "sim/monitors/ledger_loss_watch.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/event_text.hpp"

namespace rehearse::sim {

namespace {

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// A change of the retry state's own files (its journal, its snapshot); the
// worker lock beside them is no change of the state.
bool changes_the_state(const TraceEvent& e, const std::string& dir) {
  // Asked only while a cut's directory is watched.
  REHEARSE_ASSERT(!dir.empty());
  const std::string& type = e.type;
  if (type != "disk_write" && type != "disk_append" && type != "disk_rename" &&
      type != "disk_remove") {
    return false;
  }
  const std::string path = e.str(type == "disk_rename" ? "to" : "path");
  return directory_of(path) == dir && path.substr(dir.size() + 1).starts_with("retry_state");
}

}  // namespace

void LedgerLossWatch::observe(const TraceEvent& e, bool came_up, bool went_down) {
  if (went_down) owed_.reset();  // the next boot owes it, if the proof still stands
  if (came_up && !proofs_.empty()) owed_ = e.t;
  if (e.type == "store_corrupt_injected") {
    on_cut(e);
  } else if (e.type == "outbox_add" && e.str("event") == "state_corrupt") {
    owed_.reset();
  } else if (e.type == "job_file_damaged") {
    std::erase_if(proofs_, [&](const Proof& p) { return p.job == e.job; });
  } else if (!dir_.empty() && !owed_ && changes_the_state(e, dir_)) {
    // The store that ran across the cut wrote again: what its journal holds
    // now is not the cut's. (A process booted on the cut owes its report
    // whatever it writes: a store in corrupt mode writes nothing.)
    proofs_.clear();
    dir_.clear();
  }
  if (proofs_.empty()) owed_.reset();
}

void LedgerLossWatch::on_cut(const TraceEvent& e) {
  if (!e.flag("records_whole")) return;
  const auto* ahead = field(e, "ledger_ahead");
  if (ahead == nullptr || !ahead->is_array() || ahead->empty()) return;
  dir_ = directory_of(e.str("path"));
  proofs_.clear();
  for (const nlohmann::json& a : *ahead) {
    const nlohmann::json& last = a.value("state_last_slot", nlohmann::json());
    proofs_.push_back({a.value("job", std::string()), a.value("ledger_slot", std::string()),
                       last.is_string() ? last.get<std::string>() : std::string("none")});
  }
  // One proof per job the ledger is ahead for, the earlier cut's forgotten.
  REHEARSE_ASSERT_EQ(proofs_.size(), ahead->size());
}

Violations LedgerLossWatch::finish(std::size_t events_seen, TimeMs until_ms) const {
  // observe() drops a report owed once no proof stands.
  REHEARSE_ASSERT(!owed_ || !proofs_.empty());
  if (!owed_ || proofs_.empty()) return {};

  const Proof& p = proofs_.front();
  return {{invariant_, events_seen, until_ms,
           fmt::format("the process booted at {} on a retry state that lost acknowledged records "
                       "(the delivery ledger has slot {} of job {}, the state's last slot is {}) "
                       "and never reported state_corrupt",
                       format_instant(*owed_), p.ledger_slot, p.job, p.state_last_slot)}};
}

}  // namespace rehearse::sim
