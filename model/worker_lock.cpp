#include "model/worker_lock.hpp"

#include <utility>

namespace rehearse {

std::string worker_lock_path(const std::string& state_dir) {
  return join_path(state_dir, kWorkerLockName);
}

Task<Result<DiskLockHandle>> take_worker_lock(Disk& disk, Clock& clock, Log& log,
                                              std::string state_dir, DurationMs poll_ms) {
  if (auto made = disk.create_dir(state_dir); !made.ok()) co_return made.error();
  const std::string path = worker_lock_path(state_dir);
  const TimeMs asked_at = clock.now();
  bool standing_by = false;
  for (;;) {
    auto held = disk.lock_exclusive(path);
    if (held.ok()) {
      log.info("worker_lock_taken", {{"path", path}, {"waited_ms", clock.now() - asked_at}});
      co_return std::move(held).value();
    }
    if (held.error().code != ErrorCode::busy) co_return std::move(held).error();
    if (!standing_by) {
      log.info("worker_standby", {{"path", path}, {"holder", held.error().message}});
      standing_by = true;
    }
    co_await clock.sleep_for(poll_ms > 0 ? poll_ms : kWorkerLockPollMs);
  }
}

}  // namespace rehearse
