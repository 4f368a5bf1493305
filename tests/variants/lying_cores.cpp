// Test-only lying variants of core components (lying_cores.hpp).
#include "tests/variants/lying_cores.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "model/disk.hpp"

namespace rehearse::variants {
namespace {

// Every operation goes to the real disk; a lie overrides one of them.
class ForwardingDisk : public Disk {
 public:
  explicit ForwardingDisk(Disk& inner) : inner_(inner) {}

  Result<std::optional<std::string>> read_file(const std::string& path) override {
    return inner_.read_file(path);
  }
  Result<std::optional<std::string>> read_range(const std::string& path, std::uint64_t offset,
                                                std::uint64_t length) override {
    return inner_.read_range(path, offset, length);
  }
  Status write_file(const std::string& path, std::string_view bytes) override {
    return inner_.write_file(path, bytes);
  }
  Status append_file(const std::string& path, std::string_view bytes) override {
    return inner_.append_file(path, bytes);
  }
  Status fsync_file(const std::string& path) override { return inner_.fsync_file(path); }
  Status rename_file(const std::string& from, const std::string& to) override {
    return inner_.rename_file(from, to);
  }
  Status fsync_dir(const std::string& dir) override { return inner_.fsync_dir(dir); }
  Result<bool> remove_file(const std::string& path) override { return inner_.remove_file(path); }
  Status create_dir(const std::string& dir) override { return inner_.create_dir(dir); }
  Result<std::vector<std::string>> list_dir(const std::string& dir) override {
    return inner_.list_dir(dir);
  }
  Result<DiskLockHandle> lock_exclusive(const std::string& path) override {
    return inner_.lock_exclusive(path);
  }

 private:
  Disk& inner_;
};

// The lock is a handle that holds nothing.
class LocklessDisk final : public ForwardingDisk {
 public:
  using ForwardingDisk::ForwardingDisk;
  Result<DiskLockHandle> lock_exclusive(const std::string&) override {
    return DiskLockHandle(std::make_unique<DiskLock>());
  }
};

// From the third write of a pipeline file's temporary on, the first write's
// bytes are written again.
class StaleSnapshotDisk final : public ForwardingDisk {
 public:
  using ForwardingDisk::ForwardingDisk;
  Status write_file(const std::string& path, std::string_view bytes) override {
    if (path.find("pipeline.json") == std::string::npos) {
      return ForwardingDisk::write_file(path, bytes);
    }
    if (++writes_ == 1) first_ = std::string(bytes);
    return ForwardingDisk::write_file(path, writes_ >= 3 ? std::string_view(first_) : bytes);
  }

 private:
  int writes_ = 0;
  std::string first_;
};

// The copy of a damaged journal is never made: its rename drops the source.
class CopylessDisk final : public ForwardingDisk {
 public:
  using ForwardingDisk::ForwardingDisk;
  Status rename_file(const std::string& from, const std::string& to) override {
    if (to.find(".damaged-") == std::string::npos) return ForwardingDisk::rename_file(from, to);
    auto removed = ForwardingDisk::remove_file(from);
    return removed.ok() ? Status{} : Status(removed.error());
  }
};

// One directory's fsync does nothing and reports success.
class DirSyncSkippingDisk final : public ForwardingDisk {
 public:
  DirSyncSkippingDisk(Disk& inner, std::string dir) : ForwardingDisk(inner), dir_(std::move(dir)) {}
  Status fsync_dir(const std::string& dir) override {
    return dir == dir_ ? Status{} : ForwardingDisk::fsync_dir(dir);
  }

 private:
  std::string dir_;
};

// A failure of one class reported as another.
class MisclassifyingRunner final : public JobRunner {
 public:
  MisclassifyingRunner(std::unique_ptr<JobRunner> core, FailureClass from, FailureClass to)
      : core_(std::move(core)), from_(from), to_(to) {}

  Task<RunOutcome> run(RunContext context) override {
    RunOutcome outcome = co_await core_->run(std::move(context));
    if (outcome.failed() && outcome.failure_class == from_) outcome.failure_class = to_;
    co_return outcome;
  }

 private:
  std::unique_ptr<JobRunner> core_;
  FailureClass from_;
  FailureClass to_;
};

// The core's ReconcileJob over a lying disk (a process-memory decorator: a
// new one at every boot, like the job).
template <typename LyingDisk>
class ReconcileOverLyingDisk final : public JobRunner {
 public:
  ReconcileOverLyingDisk(Clock& clock, Services& services, Log& log, Disk& disk, Environment env,
                         ReconcileConfig config)
      : disk_(disk), job_(clock, services, log, disk_, std::move(env), std::move(config)) {}

  Task<RunOutcome> run(RunContext context) override {
    RunOutcome outcome = co_await job_.run(std::move(context));
    co_return outcome;
  }

 private:
  LyingDisk disk_;  // declared before job_, which keeps a reference to it
  ReconcileJob job_;
};

class SkipAsFailureGroupJob final : public JobRunner {
 public:
  explicit SkipAsFailureGroupJob(std::unique_ptr<JobRunner> core) : core_(std::move(core)) {}

  Task<RunOutcome> run(RunContext context) override {
    RunOutcome outcome = co_await core_->run(std::move(context));
    if (outcome.kind == RunOutcomeKind::skipped) {
      outcome = RunOutcome::failure(FailureClass::unknown, "nothing to deliver");
    }
    co_return outcome;
  }

 private:
  std::unique_ptr<JobRunner> core_;
};

// Every operation goes to the real queue; the lie moves ready_at.
class LyingQueue final : public JobQueue {
 public:
  LyingQueue(JobQueue& inner, QueueLie lie, DurationMs shift_ms)
      : inner_(inner), lie_(lie), shift_ms_(shift_ms) {}

  Result<QueueAddResult> add(QueueEntrySpec spec) override { return inner_.add(bend(spec)); }
  Result<std::optional<QueueEntry>> take_next(TimeMs now,
                                              const std::set<std::string>& busy) override {
    return inner_.take_next(now, busy);
  }
  Result<std::optional<TimeMs>> next_ready_at(const std::set<std::string>& busy) override {
    return inner_.next_ready_at(busy);
  }
  Status set_intent(std::uint64_t id, std::string intent) override {
    return inner_.set_intent(id, std::move(intent));
  }
  Result<std::vector<std::uint64_t>> finish(std::uint64_t id, QueueFinish finish) override {
    for (QueueEntrySpec& spec : finish.adds) spec = bend(spec);
    if (lie_ == QueueLie::unlogged_retry && finish.adds.empty() && exhausts(finish)) {
      if (auto extra = one_more_retry(id)) finish.adds.push_back(*extra);
    }
    return inner_.finish(id, std::move(finish));
  }
  Status requeue(std::uint64_t id) override { return inner_.requeue(id); }
  Result<std::vector<QueueEntry>> list() override { return inner_.list(); }
  Result<std::vector<QueueEntry>> list_active() override { return inner_.list_active(); }
  Result<std::size_t> cancel_retries(const std::string& job_id, TimeMs slot) override {
    return inner_.cancel_retries(job_id, slot);
  }
  Result<std::uint64_t> outbox_add(std::string target, std::string payload) override {
    return inner_.outbox_add(std::move(target), std::move(payload));
  }
  Result<std::vector<OutboxMessage>> outbox_list() override { return inner_.outbox_list(); }
  Result<bool> outbox_remove(std::uint64_t id) override { return inner_.outbox_remove(id); }

 private:
  static bool exhausts(const QueueFinish& finish) {
    for (const OutboxMessage& m : finish.outbox) {
      if (m.payload.find("retry_exhausted") != std::string::npos) return true;
    }
    return false;
  }
  // The retry after the active entry `id`, `shift_ms` after its due time.
  std::optional<QueueEntrySpec> one_more_retry(std::uint64_t id) {
    auto active = inner_.list_active();
    if (!active.ok()) return std::nullopt;
    for (const QueueEntry& e : active.value()) {
      if (e.id != id) continue;
      QueueEntrySpec spec = e.spec;
      spec.kind = RunKind::retry;
      spec.attempt += 1;
      spec.ready_at += shift_ms_;
      return spec;
    }
    return std::nullopt;
  }

  QueueEntrySpec bend(QueueEntrySpec spec) const {
    if (lie_ == QueueLie::shorter_retries && spec.kind == RunKind::retry) {
      spec.ready_at -= shift_ms_;
    } else if (lie_ == QueueLie::late_slots && spec.kind == RunKind::regular) {
      spec.ready_at += shift_ms_;
    }
    return spec;
  }

  JobQueue& inner_;
  QueueLie lie_;
  DurationMs shift_ms_;
};

class DoubleDeliveryNotifier final : public Notifier {
 public:
  explicit DoubleDeliveryNotifier(Notifier& inner) : inner_(inner) {}

  Task<Status> send(std::string target, nlohmann::json message) override {
    const bool delivery = message.value("kind", std::string()) == "delivery";
    Status first = co_await inner_.send(target, message);
    if (!delivery || !first.ok()) co_return first;
    co_return co_await inner_.send(std::move(target), std::move(message));
  }

 private:
  Notifier& inner_;
};

}  // namespace

std::unique_ptr<JobQueue> make_lying_queue(JobQueue& inner, QueueLie lie, DurationMs shift_ms) {
  return std::make_unique<LyingQueue>(inner, lie, shift_ms);
}

std::unique_ptr<Notifier> make_double_delivery_notifier(Notifier& inner) {
  return std::make_unique<DoubleDeliveryNotifier>(inner);
}

std::unique_ptr<JobRunner> make_skip_as_failure_group_job(std::unique_ptr<JobRunner> core) {
  return std::make_unique<SkipAsFailureGroupJob>(std::move(core));
}

std::unique_ptr<JobRunner> make_lockless_reconcile_job(Clock& clock, Services& services, Log& log,
                                                       Disk& disk, Environment env,
                                                       ReconcileConfig config) {
  return std::make_unique<ReconcileOverLyingDisk<LocklessDisk>>(clock, services, log, disk,
                                                                std::move(env), std::move(config));
}

std::unique_ptr<JobRunner> make_stale_pipeline_reconcile_job(Clock& clock, Services& services,
                                                             Log& log, Disk& disk, Environment env,
                                                             ReconcileConfig config) {
  return std::make_unique<ReconcileOverLyingDisk<StaleSnapshotDisk>>(
      clock, services, log, disk, std::move(env), std::move(config));
}

std::unique_ptr<JobRunner> make_misclassifying_runner(std::unique_ptr<JobRunner> core,
                                                      FailureClass from, FailureClass to) {
  return std::make_unique<MisclassifyingRunner>(std::move(core), from, to);
}

std::unique_ptr<Disk> make_copyless_disk(Disk& inner) {
  return std::make_unique<CopylessDisk>(inner);
}

std::unique_ptr<Disk> make_dir_sync_skipping_disk(Disk& inner, std::string dir) {
  return std::make_unique<DirSyncSkippingDisk>(inner, std::move(dir));
}

}  // namespace rehearse::variants
