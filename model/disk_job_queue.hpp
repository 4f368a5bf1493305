// DiskJobQueue: the JobQueue port (model/job_queue.hpp) kept in one file on
// the Disk port, for a worker that has no external queue server (a single
// machine: the queue's file lives beside the state store).
//
// Durability. The queue is one document, `<dir>/queue.json`. Every mutating
// operation (add, take_next, set_intent, finish, requeue, cancel_retries,
// outbox_add, outbox_remove) computes the new document in memory, writes it
// to `queue.json.tmp`, fsyncs it, renames it over `queue.json` and fsyncs the
// directory; only then does it return, and only then does the in-memory copy
// change. So an operation that returned is durable (nothing acknowledged is
// lost by a crash of the process or a power loss), and one that a crash cut
// is wholly there or wholly absent after a restart (rename is atomic), never
// applied twice. Reads (next_ready_at, list, list_active, outbox_list) touch
// no disk.
//
// Open. Creates the directory (and makes its entry durable), takes an
// exclusive lock (`queue.lock`, held while the object lives: one worker per
// queue directory), reads queue.json (missing: an empty queue), and makes
// what it read durable (fsync of the file and the directory) before handing
// any of it out, so a rename that a dead predecessor left unsynced cannot be
// acted on and then lost. A leftover temp file is ignored (it is rewritten
// before it is renamed).
//
// Integrity. The document carries a CRC-32C of its body; a file that does not
// parse, has the wrong shape or the wrong checksum fails closed: open returns
// ErrorCode::corrupt naming the file, and the file is left as it is (never
// reset: the queue's delayed retries are acknowledged work).
//
// Failure. Any disk error inside an operation breaks the object: that
// operation and every later one return io_error (the scheduler halts and the
// process restarts, as for the state store; an fsync failure is not retried
// in place). A fresh open reads what is durable.
//
// The cost of an operation is one rewrite of the whole queue (a worker's
// queue holds a few entries per job: the regular slot in flight and at most
// one delayed retry).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/disk.hpp"
#include "model/job_queue.hpp"
#include "model/result.hpp"

namespace rehearse {

class DiskJobQueue final : public JobQueue {
 public:
  static constexpr const char* kFileName = "queue.json";
  static constexpr const char* kTempSuffix = ".tmp";
  static constexpr const char* kLockName = "queue.lock";
  static constexpr int kFormat = 1;

  static Result<DiskJobQueue> open(Disk& disk, std::string dir);

  DiskJobQueue(DiskJobQueue&&) noexcept = default;
  DiskJobQueue& operator=(DiskJobQueue&&) noexcept = default;

  Result<QueueAddResult> add(QueueEntrySpec spec) override;
  Result<std::optional<QueueEntry>> take_next(TimeMs now,
                                              const std::set<std::string>& busy_jobs) override;
  Result<std::optional<TimeMs>> next_ready_at(const std::set<std::string>& busy_jobs) override;
  Status set_intent(std::uint64_t id, std::string intent) override;
  Result<std::vector<std::uint64_t>> finish(std::uint64_t id, QueueFinish finish) override;
  Status requeue(std::uint64_t id) override;
  Result<std::vector<QueueEntry>> list() override;
  Result<std::vector<QueueEntry>> list_active() override;
  Result<std::size_t> cancel_retries(const std::string& job_id, TimeMs slot) override;
  Result<std::uint64_t> outbox_add(std::string target, std::string payload) override;
  Result<std::vector<OutboxMessage>> outbox_list() override;
  Result<bool> outbox_remove(std::uint64_t id) override;

  std::string path() const;
  // The error that broke this object, if one did.
  const std::optional<Error>& broken() const noexcept { return broken_; }

  // The queue's content as one document (what queue.json holds), and back.
  struct Content {
    std::uint64_t next_id = 1;
    std::uint64_t next_outbox_id = 1;
    std::map<std::uint64_t, QueueEntry> entries;    // by id
    std::map<std::uint64_t, OutboxMessage> outbox;  // by id

    bool operator==(const Content&) const = default;
  };
  static std::string encode(const Content& content);
  static Result<Content> decode(std::string_view bytes);

 private:
  DiskJobQueue(Disk& disk, std::string dir) : disk_(&disk), dir_(std::move(dir)) {}
  Status usable() const;
  Status persist(Content next);
  Status load();

  Disk* disk_;
  std::string dir_;
  DiskLockHandle lock_;
  Content content_;
  std::optional<Error> broken_;
};

}  // namespace rehearse
