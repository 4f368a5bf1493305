#include "sim/monitors/job_file_watch.hpp"

#include <fmt/format.h>

#include "model/assert.hpp"
#include "sim/monitors/process_tracker.hpp"

namespace rehearse::sim {

namespace {

// `path` names `damaged` (the same path, or `damaged` relative to it: the
// disk records absolute paths, a job's store directory may be relative).
bool names_file(const std::string& path, const std::string& damaged) {
  if (path == damaged) return true;
  std::string tail = damaged;
  while (tail.rfind("./", 0) == 0) tail.erase(0, 2);
  return path.size() > tail.size() &&
         path.compare(path.size() - tail.size(), tail.size(), tail) == 0 &&
         path[path.size() - tail.size() - 1] == '/';
}

bool changes_disk(const std::string& type) {
  return type == "disk_write" || type == "disk_append" || type == "disk_rename" ||
         type == "disk_remove";
}

}  // namespace

JobFileWatch::Damage* JobFileWatch::damage_at(const std::string& path) {
  // observe() looks a file up only once some file was damaged.
  REHEARSE_ASSERT(!damaged_.empty());
  for (auto& [damaged, damage] : damaged_) {
    if (names_file(path, damaged)) return &damage;
  }
  return nullptr;
}

void JobFileWatch::observe(const TraceEvent& e, std::size_t i, Violations& out) {
  if (e.type == "job_file_damaged") {
    if (e.flag("applied")) damaged_[e.str("path")] = Damage{e.job, {}};
    return;
  }
  if (damaged_.empty()) return;
  if (is_crash_event(e.type)) {
    note_crash(e);
  } else if (e.type == "disk_read") {
    if (Damage* d = damage_at(e.str("path"))) d->readers.insert(pid_of(e));
  } else if (e.type == "queue_take") {
    note_take(e);
  } else if (e.type == "service_call" || e.type == "message_delivered" ||
             e.type == "message_refused") {
    check_call(e, i, out);
  } else if (changes_disk(e.type)) {
    check_kept(e, i, out);
  }
}

// A crashed process forgets what it read; the machine's power loss, every process.
void JobFileWatch::note_crash(const TraceEvent& e) {
  REHEARSE_ASSERT(is_crash_event(e.type));
  const bool machine = e.type == "disk_crash";
  const std::int64_t pid = pid_of(e);
  for (auto& [path, damage] : damaged_) {
    if (machine) {
      damage.readers.clear();
    } else {
      damage.readers.erase(pid);
    }
  }
}

void JobFileWatch::note_take(const TraceEvent& e) {
  REHEARSE_ASSERT_EQ(e.type, "queue_take");
  closed_.erase(e.job);
  for (const auto& [path, damage] : damaged_) {
    if (damage.job == e.job && damage.readers.count(pid_of(e)) != 0) closed_.insert(e.job);
  }
}

// An outbox notification (the message names its `event`) may tell of the
// failure; any other send, and any service call, is the run going on.
void JobFileWatch::check_call(const TraceEvent& e, std::size_t i, Violations& out) {
  // observe() judges calls only once some file was damaged.
  REHEARSE_ASSERT(!damaged_.empty());

  if (closed_.count(e.job) == 0) return;
  if (e.type != "service_call" && !e.str("event").empty()) return;
  const std::string what = e.type == "service_call"
                               ? fmt::format("called {} ({})", e.service, e.str("operation"))
                               : fmt::format("sent a {} to {}", e.str("kind"), e.str("target"));
  out.push_back({invariant_, i, e.t,
                 fmt::format("job {}: {} in a run taken after its process read the damaged "
                             "file of the job: a corrupt ledger or pipeline file fails the run "
                             "closed before any call",
                             e.job, what)});
}

void JobFileWatch::check_kept(const TraceEvent& e, std::size_t i, Violations& out) {
  REHEARSE_ASSERT(changes_disk(e.type));
  REHEARSE_ASSERT(!damaged_.empty());
  for (const std::string& path : {e.str("path"), e.str("to"), e.str("from")}) {
    if (path.empty()) continue;
    const Damage* d = damage_at(path);
    if (d == nullptr) continue;
    out.push_back({invariant_, i, e.t,
                   fmt::format("job {}: its damaged file {} was changed ({}): a corrupt ledger or "
                               "pipeline file is kept until an operator repairs it",
                               d->job, path, e.type)});
    return;
  }
}

}  // namespace rehearse::sim
