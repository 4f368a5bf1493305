// Goal: the exclusive lock makes StateStore::update a real read-modify-write
// across processes: no update is lost however the processes interleave.
// Method: fork() 4 processes that each do 1000 locked increments of one job's
// counter through StateStore::update over PosixDisk with the DEFAULT options
// (full durability: fsync per append, temp+fsync+rename+directory fsync per
// compaction) except a small journal bound, so that compactions by one
// process interleave with the others following the journal. The final count
// must be exactly 4000. A CONTROL run in this test (not a production switch)
// does the same read-modify-write of the same file format without the lock,
// yielding between the read and the write to widen the race window, and must
// lose updates (final < 4000): it shows the first run's result is due to the
// lock and not to luck in scheduling.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <vector>

#include "model/posix_disk.hpp"
#include "model/state_codec.hpp"
#include "model/state_store.hpp"

namespace rehearse {
namespace {

constexpr int kProcesses = 4;
constexpr int kIncrements = 1000;
const char* const kJob = "shared-counter";

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/rehearse-contention-XXXXXX";
    REHEARSE_ASSERT(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
// lock: read, decode, increment, yield, encode, write a temp file, rename.
bool unlocked_increments(const std::string& dir, int process) {
  PosixDisk disk;
  const std::string path = join_path(dir, StateStore::kSnapshotName);
  const std::string temp = path + ".tmp." + std::to_string(process);
  for (int i = 0; i < kIncrements; ++i) {
    auto bytes = disk.read_file(path);
    if (!bytes.ok()) return false;
    StateDocument document;
    if (bytes->has_value()) {
      auto decoded = decode_state(**bytes);
      if (!decoded.ok()) return false;
      document = std::move(*decoded);
    }
    JobState& job = document.jobs[kJob];
    job.job_id = kJob;
    ++job.retry_count;
    // Widen the window between read and write, as a slow disk or a busy
    // scheduler would.
    ::sched_yield();
    ::usleep(50);
    if (!disk.write_file(temp, encode_state(document)).ok()) return false;
    if (!disk.rename_file(temp, path).ok()) return false;
  }
  return true;
}

TEST(StoreContention, ControlWithoutTheLockLosesUpdates) {
  TempDir dir;
  const int ok =
      run_children([&](int process) { return unlocked_increments(dir.path(), process); });
  ASSERT_EQ(ok, kProcesses);
  PosixDisk disk;
  auto bytes = disk.read_file(join_path(dir.path(), StateStore::kSnapshotName));
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(bytes->has_value());
  auto document = decode_state(**bytes);
  ASSERT_TRUE(document.ok()) << document.error().describe();
  const int count = document->jobs.at(kJob).retry_count;
  std::printf("unlocked control: %d of %d increments survived\n", count,
              kProcesses * kIncrements);
  EXPECT_GT(count, 0);
  EXPECT_LT(count, kProcesses * kIncrements) << "the control run lost no update: the race "
                                                "window is too narrow to show the lock matters";
}

}  // namespace
}  // namespace rehearse
