// Goal: the exclusive lock makes StateStore::update a real read-modify-write
// across processes: no update is lost however the processes interleave.
// Method: fork() 4 processes that each do 1000 locked increments of one job's
// counter through StateStore::update over PosixDisk with the DEFAULT options
// (full durability: fsync per append, temp+fsync+rename+directory fsync per
// compaction) except a small journal bound, so that compactions by one
// process interleave with the others following the journal. The final count
// must be exactly 4000. A CONTROL run in this test (not a production switch)
// does the same read-modify-write of the same file format without the lock,
// in two processes whose reads and writes are sequenced by pipes (A reads, B
// reads, A writes, B writes) in each of 100 rounds, and ends at exactly 100 of
// 200 increments every run: it shows the first run's result is due to the
// lock and not to luck in scheduling.
#include <errno.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "model/posix_disk.hpp"
#include "model/state_codec.hpp"
#include "model/state_store.hpp"
#include "tests/support/temp_dir.hpp"

namespace rehearse {
namespace {

constexpr int kProcesses = 4;
constexpr int kIncrements = 1000;
const char* const kJob = "shared-counter";

using testsupport::TempDir;

// Runs body in kProcesses children and returns how many exited 0. The
// children leave with _exit so that no gtest state runs twice.
template <typename Body>
int run_children(Body body) {
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    REHEARSE_ASSERT(pid >= 0);
    if (pid == 0) ::_exit(body(p) ? 0 : 1);
    children.push_back(pid);
  }
  int succeeded = 0;
  for (const pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) ++succeeded;
  }
  return succeeded;
}

TEST(StoreContention, LockedIncrementsFromFourProcessesLoseNothing) {
  TempDir dir;
  StoreOptions options;  // default durability: full
  options.journal_records_max = 300;
  ASSERT_EQ(options.durability, Durability::full);
  const auto started = std::chrono::steady_clock::now();
  const int ok = run_children([&](int) {
    PosixDisk disk;  // each process opens its own lock descriptor
    auto store = StateStore::open(disk, dir.path(), options);
    if (!store.ok()) return false;
    for (int i = 0; i < kIncrements; ++i) {
      if (!store->update(kJob, [](JobState& s) { ++s.retry_count; }).ok()) return false;
    }
    return true;
  });
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started);
  ASSERT_EQ(ok, kProcesses);
  PosixDisk disk;
  auto store = StateStore::open(disk, dir.path(), options);
  ASSERT_TRUE(store.ok());
  EXPECT_TRUE(store->health().ok());
  auto job = store->read(kJob);
  ASSERT_TRUE(job.ok()) << job.error().describe();
  EXPECT_EQ(job->retry_count, kProcesses * kIncrements);
  EXPECT_EQ(store->sequence(), static_cast<std::uint64_t>(kProcesses * kIncrements));
  std::printf("locked run: %d increments in %.2f s\n", kProcesses * kIncrements, seconds.count());
}

// The same read-modify-write of retry_state.json with everything but the
// lock, split in its two halves: read + decode + increment, then encode +
// write a temp file + rename.
struct UnlockedIncrement {
  PosixDisk disk;
  std::string path;
  std::string temp;
  StateDocument document;

  bool read() {
    auto bytes = disk.read_file(path);
    if (!bytes.ok()) return false;
    document = StateDocument{};
    if (bytes->has_value()) {
      auto decoded = decode_state(**bytes);
      if (!decoded.ok()) return false;
      document = std::move(*decoded);
    }
    JobState& job = document.jobs[kJob];
    job.job_id = kJob;
    ++job.retry_count;
    return true;
  }
  bool write() {
    return disk.write_file(temp, encode_state(document)).ok() && disk.rename_file(temp, path).ok();
  }
};

bool send_token(int fd) {
  const char token = 't';
  for (;;) {
    const ssize_t n = ::write(fd, &token, 1);
    if (n == 1) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

bool await_token(int fd) {
  char token = 0;
  for (;;) {
    const ssize_t n = ::read(fd, &token, 1);
    if (n == 1) return true;
    if (n == 0 || (n < 0 && errno != EINTR)) return false;  // the peer is gone
  }
}

constexpr int kControlRounds = 100;

// Two processes, sequenced by two pipes so that each round is the classic
// lost update, every time: A reads, B reads, A writes, B writes (B's write
// carries the value both read plus one, so A's increment is lost).
//   A: read  -> tell B  -> wait  -> write -> tell B -> wait (round over)
//   B: wait  -> read    -> tell A -> wait -> write  -> tell A
bool sequenced_increments(const std::string& dir, bool first, int to_peer, int from_peer) {
  UnlockedIncrement rmw;
  rmw.path = join_path(dir, StateStore::kSnapshotName);
  rmw.temp = rmw.path + (first ? ".tmp.a" : ".tmp.b");
  for (int round = 0; round < kControlRounds; ++round) {
    if (first) {
      if (!rmw.read() || !send_token(to_peer) || !await_token(from_peer)) return false;
      if (!rmw.write() || !send_token(to_peer) || !await_token(from_peer)) return false;
    } else {
      if (!await_token(from_peer) || !rmw.read() || !send_token(to_peer)) return false;
      if (!await_token(from_peer) || !rmw.write() || !send_token(to_peer)) return false;
    }
  }
  return true;
}

// The control of the locked run above: without the lock, an interleaving
// that loses updates is not a matter of luck. The pipes force it in every
// round, so exactly one increment of each round's two survives, every run.
TEST(StoreContention, ControlWithoutTheLockLosesUpdates) {
  TempDir dir;
  int a_to_b[2];
  int b_to_a[2];
  ASSERT_EQ(::pipe(a_to_b), 0);
  ASSERT_EQ(::pipe(b_to_a), 0);
  std::vector<pid_t> children;
  for (const bool first : {true, false}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const bool ok = first ? sequenced_increments(dir.path(), true, a_to_b[1], b_to_a[0])
                            : sequenced_increments(dir.path(), false, b_to_a[1], a_to_b[0]);
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (const int fd : {a_to_b[0], a_to_b[1], b_to_a[0], b_to_a[1]}) ::close(fd);
  for (const pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
    }
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  PosixDisk disk;
  auto bytes = disk.read_file(join_path(dir.path(), StateStore::kSnapshotName));
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(bytes->has_value());
  auto document = decode_state(**bytes);
  ASSERT_TRUE(document.ok()) << document.error().describe();
  const int count = document->jobs.at(kJob).retry_count;
  std::printf("unlocked control: %d of %d increments survived\n", count, 2 * kControlRounds);
  EXPECT_EQ(count, kControlRounds) << "each round's two unlocked increments must leave exactly one";
}

}  // namespace
}  // namespace rehearse
