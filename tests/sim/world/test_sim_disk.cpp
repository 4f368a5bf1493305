// Goal: SimDisk honours every durability rule of the Disk port
// (model/disk.hpp) exactly as documented in docs/sim-disk.md — unsynced bytes
// and unsynced directory entries (creates, renames, removes, new directories)
// are lost by a power loss, synced ones kept, reads see the page cache — and
// its errors mirror the operating system's.
// Method: one rule per unit test on a bare SimDisk (no simulator, no trace);
// a RapidCheck property runs random operation sequences with crashes, torn
// writes and process restarts on SimDisk and on a deliberately simple model of
// the rules written here (one directory of named files, each name pointing at
// a file object with a live and a durable content), and compares every read,
// listing and crash outcome.
#include "sim/world/sim_disk.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/sim/world/sim_disk_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::sim::disk_test {
namespace {

// --- file bytes -------------------------------------------------------------

TEST(SimDiskDurability, ReadsSeeUnsyncedBytesUntilACrash) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "hello").ok());
  ASSERT_TRUE(disk.append_file("/d/f", " world").ok());
  EXPECT_EQ(read(disk, "/d/f"), "hello world");
  auto range = disk.read_range("/d/f", 6, 3);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, "wor");
  EXPECT_EQ(disk.live_content("/d/f"), "hello world");
  EXPECT_EQ(disk.durable_content("/d/f"), std::nullopt) << "its entry is not durable yet";
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), std::nullopt) << "a new file whose entry was never synced";
  EXPECT_EQ(listing(disk, "/d"), Names{});
}

TEST(SimDiskDurability, SyncedEntryWithUnsyncedBytesComesBackEmpty) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "data").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());  // the name, not the bytes
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "") << "the ext4 zero-length file after a crash";
}

TEST(SimDiskDurability, FsyncedBytesAndEntrySurvive) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "v1").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  EXPECT_EQ(disk.durable_content("/d/f"), "v1");
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "v1");
  EXPECT_EQ(listing(disk, "/d"), Names{"f"});
}

// A reader that skips re-reading durable bytes it has read relies on this:
// the identity changes with every change of the durable bytes, and only then.
TEST(SimDiskDurability, TheDurableIdentityChangesExactlyWhenTheDurableBytesDo) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "v1").ok());
  EXPECT_EQ(disk.durable_identity("/d/f"), std::nullopt) << "no durable entry yet";
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  const auto first = disk.durable_identity("/d/f");
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(disk.append_file("/d/f", "+").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  EXPECT_EQ(disk.durable_identity("/d/f"), first) << "unsynced bytes are not durable";
  disk.crash();
  EXPECT_EQ(disk.durable_identity("/d/f"), first) << "a crash leaves the medium as it was";
  ASSERT_TRUE(disk.append_file("/d/f", "+").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  const auto synced = disk.durable_identity("/d/f");
  EXPECT_NE(synced, first);
  ASSERT_TRUE(disk.corrupt("/d/f", CorruptionKind::flip_bytes).ok());
  EXPECT_NE(disk.durable_identity("/d/f"), synced) << "damage on the medium";
  // A rename over it names another file.
  ASSERT_TRUE(disk.write_file("/d/g", "v1+").ok());
  ASSERT_TRUE(disk.fsync_file("/d/g").ok());
  ASSERT_TRUE(disk.rename_file("/d/g", "/d/f").ok());
  const auto before_sync = disk.durable_identity("/d/f");
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  EXPECT_NE(disk.durable_identity("/d/f"), before_sync);
}

TEST(SimDiskDurability, AppendsAfterTheLastFsyncAreLost) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.append_file("/d/j", "r1\n").ok());
  ASSERT_TRUE(disk.fsync_file("/d/j").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  ASSERT_TRUE(disk.append_file("/d/j", "r2\n").ok());
  ASSERT_TRUE(disk.fsync_file("/d/j").ok());
  ASSERT_TRUE(disk.append_file("/d/j", "r3\n").ok());  // never synced
  EXPECT_EQ(read(disk, "/d/j"), "r1\nr2\nr3\n");
  disk.crash();
  EXPECT_EQ(read(disk, "/d/j"), "r1\nr2\n");
  EXPECT_EQ(disk.counters().bytes_synced, 6u) << "fsync copies only the new bytes";
}

TEST(SimDiskDurability, RewriteWithoutFsyncKeepsTheOldBytes) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/f", "old content").ok());
  ASSERT_TRUE(disk.write_file("/d/f", "new").ok());
  EXPECT_EQ(read(disk, "/d/f"), "new");
  EXPECT_EQ(disk.durable_content("/d/f"), "old content");
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "old content");
  // And an fsync after a shrinking rewrite makes the short content durable.
  ASSERT_TRUE(disk.write_file("/d/f", "x").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "x");
}

// --- directory entries -----------------------------------------------------------

TEST(SimDiskDurability, RenameWithoutFsyncDirIsUndoneByACrash) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/state", "old").ok());
  ASSERT_TRUE(disk.write_file("/d/state.tmp", "new").ok());
  ASSERT_TRUE(disk.fsync_file("/d/state.tmp").ok());
  ASSERT_TRUE(disk.rename_file("/d/state.tmp", "/d/state").ok());
  EXPECT_EQ(read(disk, "/d/state"), "new");
  EXPECT_EQ(listing(disk, "/d"), Names{"state"});
  EXPECT_EQ(disk.durable_content("/d/state"), "old");
  disk.crash();
  // The old name and content survive; the temp file's entry never was durable.
  EXPECT_EQ(read(disk, "/d/state"), "old");
  EXPECT_EQ(listing(disk, "/d"), Names{"state"});
}

TEST(SimDiskDurability, RenameFollowedByFsyncDirIsKept) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/state", "old").ok());
  ASSERT_TRUE(disk.write_file("/d/state.tmp", "new").ok());
  ASSERT_TRUE(disk.fsync_file("/d/state.tmp").ok());
  ASSERT_TRUE(disk.rename_file("/d/state.tmp", "/d/state").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/state"), "new");
  EXPECT_EQ(listing(disk, "/d"), Names{"state"});
}

TEST(SimDiskDurability, RenameOfUnsyncedBytesWithFsyncDirGivesAnEmptyFile) {
  // The classic forgotten fsync before rename: the name is durable, the bytes
  // are not.
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/state", "old").ok());
  ASSERT_TRUE(disk.write_file("/d/state.tmp", "new").ok());
  ASSERT_TRUE(disk.rename_file("/d/state.tmp", "/d/state").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/state"), "");
}

TEST(SimDiskDurability, RemoveIsDurableOnlyAfterFsyncDir) {
  SimDisk disk;
  ASSERT_TRUE(disk.put_durable("/d/a", "A").ok());
  ASSERT_TRUE(disk.put_durable("/d/b", "B").ok());
  auto removed = disk.remove_file("/d/a");
  ASSERT_TRUE(removed.ok());
  EXPECT_TRUE(*removed);
  EXPECT_EQ(read(disk, "/d/a"), std::nullopt);
  disk.crash();
  EXPECT_EQ(read(disk, "/d/a"), "A") << "the unlink was not durable";
  ASSERT_TRUE(*disk.remove_file("/d/a"));
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/a"), std::nullopt);
  EXPECT_EQ(listing(disk, "/d"), Names{"b"});
  auto again = disk.remove_file("/d/a");
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST(SimDiskDurability, NewDirectoryAndItsContentVanishWithoutFsyncOfTheParent) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.create_dir("/d/s").ok());
  ASSERT_TRUE(disk.write_file("/d/s/f", "x").ok());
  ASSERT_TRUE(disk.fsync_file("/d/s/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d/s").ok());  // the file is durable in s, s is not in d
  EXPECT_EQ(disk.durable_content("/d/s/f"), std::nullopt);
  disk.crash();
  EXPECT_EQ(listing(disk, "/d"), Names{});
  EXPECT_EQ(read(disk, "/d/s/f"), std::nullopt);
  EXPECT_FALSE(disk.list_dir("/d/s").ok());
  // With the parent synced too, everything is there.
  ASSERT_TRUE(disk.create_dir("/d/s").ok());
  ASSERT_TRUE(disk.fsync_dir("/d").ok());
  ASSERT_TRUE(disk.write_file("/d/s/f", "y").ok());
  ASSERT_TRUE(disk.fsync_file("/d/s/f").ok());
  ASSERT_TRUE(disk.fsync_dir("/d/s").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/s/f"), "y");
}

TEST(SimDiskDurability, FsyncFileOfADirectorySyncsItsEntriesAsFsyncOfItsDescriptorWould) {
  SimDisk disk;
  with_dir(disk);
  ASSERT_TRUE(disk.write_file("/d/f", "x").ok());
  ASSERT_TRUE(disk.fsync_file("/d/f").ok());
  ASSERT_TRUE(disk.fsync_file("/d").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "/d/f"), "x");
}

TEST(SimDiskDurability, RelativePathsLiveUnderTheRelativeRoot) {
  SimDisk disk;
  ASSERT_TRUE(disk.create_dir("state").ok());
  ASSERT_TRUE(disk.fsync_dir(".").ok());
  ASSERT_TRUE(disk.write_file("./state//f", "x").ok());  // normalised to state/f
  ASSERT_TRUE(disk.fsync_file("state/f").ok());
  ASSERT_TRUE(disk.fsync_dir("state/").ok());
  disk.crash();
  EXPECT_EQ(read(disk, "state/f"), "x");
  EXPECT_EQ(listing(disk, "."), Names{"state"});
  EXPECT_EQ(listing(disk, "/"), Names{}) << "the absolute root is a separate tree";
}

// --- errors mirror the operating system ----------------------------------------------

TEST(SimDiskErrors, MissingIsAValueUnreadableIsAnIoError) {
  SimDisk disk;
  with_dir(disk);
  EXPECT_EQ(read(disk, "/d/missing"), std::nullopt);
  EXPECT_EQ(read(disk, "/nowhere/missing"), std::nullopt);
  auto range = disk.read_range("/d/missing", 0, 10);
  ASSERT_TRUE(range.ok());
  EXPECT_FALSE(range->has_value());
  auto dir_read = disk.read_file("/d");
  ASSERT_FALSE(dir_read.ok());
  EXPECT_EQ(dir_read.error().code, ErrorCode::io_error);
  EXPECT_EQ(dir_read.error().where, "/d");
  ASSERT_TRUE(disk.write_file("/d/f", "abc").ok());
  auto past = disk.read_range("/d/f", 99, kReadToEnd);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(**past, "");
  auto not_dir = disk.read_file("/d/f/x");
  ASSERT_FALSE(not_dir.ok());
  EXPECT_NE(not_dir.error().message.find("Not a directory"), std::string::npos);
}

TEST(SimDiskErrors, WritesIntoMissingDirectoriesAndOntoDirectoriesFail) {
  SimDisk disk;
  with_dir(disk);
  const Status w = disk.write_file("/nowhere/f", "x");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code, ErrorCode::io_error);
  EXPECT_NE(w.error().message.find("No such file"), std::string::npos);
  EXPECT_FALSE(disk.append_file("/d", "x").ok());
  EXPECT_FALSE(disk.fsync_file("/d/missing").ok());
  EXPECT_FALSE(disk.fsync_dir("/nowhere").ok());
  EXPECT_FALSE(disk.rename_file("/d/missing", "/d/x").ok());
  EXPECT_FALSE(disk.create_dir("/nowhere/x").ok());
  EXPECT_FALSE(disk.list_dir("/nowhere").ok());
  EXPECT_FALSE(disk.remove_file("/d").ok());
  ASSERT_TRUE(disk.write_file("/d/f", "x").ok());
  EXPECT_FALSE(disk.create_dir("/d/f").ok());
  EXPECT_TRUE(disk.create_dir("/d").ok()) << "an existing directory is not an error";
  EXPECT_FALSE(disk.rename_file("/d/f", "/d").ok());
}

TEST(SimDiskErrors, ListingIsSortedBytewise) {
  SimDisk disk;
  with_dir(disk);
  for (const char* name : {"b", "a", "B", "\xc3\xa9", "a.tmp"}) {
    ASSERT_TRUE(disk.write_file(std::string("/d/") + name, "").ok());
  }
  EXPECT_EQ(listing(disk, "/d"), (Names{"B", "a", "a.tmp", "b", "\xc3\xa9"}));
}

// --- property: SimDisk agrees with a simple model of the rules
// -------------------------------------

// The rules restated as plainly as possible: one directory; a name points at a
// file object; each object has live and durable bytes; the directory has live
// and durable name tables. A dead process changes nothing.
struct ModelDisk {
  struct File {
    std::string live;
    std::string durable;
  };
  std::map<int, File> files;
  std::map<std::string, int> live_names;
  std::map<std::string, int> durable_names;
  int next_id = 1;
  bool dead = false;

  File& open(const std::string& name) {
    if (!live_names.count(name)) live_names[name] = next_id++;
    return files[live_names[name]];
  }
  void crash() {
    live_names = durable_names;
    for (auto& [id, f] : files) f.live = f.durable;
    dead = false;
  }
};

struct Op {
  enum Kind { write, append, fsync, rename, remove, fsync_dir, read, crash, torn, restart };
  Kind kind = write;
  std::string a;
  std::string b;
  std::string bytes;
  std::uint64_t keep = 0;
};

rc::Gen<Op> gen_op() {
  const auto name = rc::gen::element<std::string>("a", "b", "c");
  return rc::gen::apply(
      [](int kind, std::string a, std::string b, std::string bytes, std::uint64_t keep) {
        Op op;
        op.kind = static_cast<Op::Kind>(kind);
        op.a = std::move(a);
        op.b = std::move(b);
        op.bytes = std::move(bytes);
        op.keep = keep;
        return op;
      },
      rc::gen::weightedElement<int>({{4, Op::write},
                                     {4, Op::append},
                                     {4, Op::fsync},
                                     {3, Op::rename},
                                     {2, Op::remove},
                                     {3, Op::fsync_dir},
                                     {2, Op::read},
                                     {2, Op::crash},
                                     {1, Op::torn},
                                     {1, Op::restart}}),
      name, name, rc::gen::container<std::string>(rc::gen::inRange('a', 'z')),
      rc::gen::inRange<std::uint64_t>(0, 8));
}

REHEARSE_PROP(SimDiskProps, CrashOutcomesMatchTheModel, ()) {
  const auto ops = *rc::gen::container<std::vector<Op>>(gen_op());
  SimDisk disk(nullptr, Rng(0));
  RC_ASSERT(disk.make_dirs("/d").ok());
  ModelDisk model;
  const auto path = [](const std::string& name) { return "/d/" + name; };

  for (const Op& op : ops) {
    switch (op.kind) {
      case Op::write:
      case Op::append: {
        const Status s = op.kind == Op::write ? disk.write_file(path(op.a), op.bytes)
                                              : disk.append_file(path(op.a), op.bytes);
        RC_ASSERT(s.ok() == !model.dead);
        if (model.dead) break;
        auto& f = model.open(op.a);
        f.live = op.kind == Op::write ? op.bytes : f.live + op.bytes;
        break;
      }
      case Op::fsync: {
        const Status s = disk.fsync_file(path(op.a));
        const bool exists = model.live_names.count(op.a) != 0;
        RC_ASSERT(s.ok() == (!model.dead && exists));
        if (s.ok()) {
          auto& f = model.files[model.live_names[op.a]];
          f.durable = f.live;
        }
        break;
      }
      case Op::rename: {
        const Status s = disk.rename_file(path(op.a), path(op.b));
        const bool exists = model.live_names.count(op.a) != 0;
        RC_ASSERT(s.ok() == (!model.dead && exists));
        if (s.ok() && op.a != op.b) {
          model.live_names[op.b] = model.live_names[op.a];
          model.live_names.erase(op.a);
        }
        break;
      }
      case Op::remove: {
        auto r = disk.remove_file(path(op.a));
        RC_ASSERT(r.ok() == !model.dead);
        if (r.ok()) {
          RC_ASSERT(*r == (model.live_names.erase(op.a) == 1));
        }
        break;
      }
      case Op::fsync_dir: {
        const Status s = disk.fsync_dir("/d");
        RC_ASSERT(s.ok() == !model.dead);
        if (s.ok()) model.durable_names = model.live_names;
        break;
      }
      case Op::read: break;  // every step is compared below
      case Op::crash:
        disk.crash();
        model.crash();
        break;
      case Op::torn: {
        // A torn append of op.bytes keeping op.keep bytes (clamped below the
        // length), flushed to the medium, and the writer dies.
        disk.arm_torn_write(path(op.a), op.keep);
        const Status s = disk.append_file(path(op.a), op.bytes);
        RC_ASSERT(!s.ok());
        if (model.dead) {
          disk.disarm_torn_write();  // a dead process never reaches the write
          break;
        }
        auto& f = model.open(op.a);
        const std::size_t keep =
            op.bytes.empty()
                ? 0
                : static_cast<std::size_t>(std::min<std::uint64_t>(op.keep, op.bytes.size() - 1));
        f.live += op.bytes.substr(0, keep);
        f.durable = f.live;
        model.dead = true;
        break;
      }
      case Op::restart:
        disk.process_crashed(0);
        model.dead = false;
        break;
    }
    // Whatever just happened, the disk shows what the model says, now and
    // after a power loss (read through the inspection API, which changes
    // nothing).
    RC_ASSERT(disk.is_dead(0) == model.dead);
    for (const std::string name : {"a", "b", "c"}) {
      const auto live_it = model.live_names.find(name);
      const std::optional<std::string> live =
          live_it == model.live_names.end() ? std::nullopt
                                            : std::optional(model.files[live_it->second].live);
      RC_ASSERT(disk.live_content(path(name)) == live);
      const auto durable_it = model.durable_names.find(name);
      const std::optional<std::string> durable =
          durable_it == model.durable_names.end()
              ? std::nullopt
              : std::optional(model.files[durable_it->second].durable);
      RC_ASSERT(disk.durable_content(path(name)) == durable);
    }
    if (!model.dead) {
      Names names;
      for (const auto& [name, id] : model.live_names) names.push_back(name);
      auto listed = disk.list_dir("/d");
      RC_ASSERT(listed.ok());
      RC_ASSERT(*listed == names);
    }
  }
  disk.crash();
  model.crash();
  for (const std::string name : {"a", "b", "c"}) {
    auto r = disk.read_file(path(name));
    RC_ASSERT(r.ok());
    const auto it = model.live_names.find(name);
    RC_ASSERT(r->has_value() == (it != model.live_names.end()));
    if (it != model.live_names.end()) RC_ASSERT(**r == model.files[it->second].live);
  }
}

}  // namespace
}  // namespace rehearse::sim::disk_test
