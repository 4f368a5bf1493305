// Goal: state_durable fires when durable state is lost, replaced or written
// unsafely, or its damage goes unreported (journals, ledgers, queue, store
// locks), and stays quiet on the near misses the semantics allow.
// Method: hand-made traces (Script in monitor_fixtures.hpp), one fault each,
// judged by every monitor and again on the trace's fleet twin.
#include "tests/sim/monitors/monitor_fixtures.hpp"

namespace rehearse::sim::monitor_test {
namespace {

TEST(StateDurable, FiresWhenARetryCounterResetsAcrossARestart) {
  Script s;
  const char* slot = "2026-03-02T10:30:00Z";
  regular(s, "slotty", slot, slot, "2026-03-02T11:30:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "slotty", slot, slot, 1, "timeout");
  s.add("process_crash", "2026-03-02T10:35:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T10:36:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  retry_run(s, "slotty", slot, "2026-03-02T10:40:00Z", 2, "failure", "timeout");
  const auto bad = note(s, "retry_scheduled", "slotty", slot, "2026-03-02T10:40:00Z", 1, "timeout");
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// A counter not reset after a success (004's family) announces a higher
// attempt than the witness counted: the witness never adopts it.
TEST(StateDurable, FiresWhenARetryAnnouncesAHigherAttemptThanCounted) {
  Script s;
  const char* slot = "2026-03-02T10:00:00Z";
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "timeout");
  retry_run(s, "hourly", slot, "2026-03-02T10:05:00Z", 2, "success");
  const char* next = "2026-03-02T11:00:00Z";
  regular(s, "hourly", next, next, "2026-03-02T12:00:00Z", "failure", "timeout");
  const auto bad = note(s, "retry_scheduled", "hourly", next, next, 2, "timeout");
  expect_first(run(s, only({"hourly"}), at("2026-03-02T11:01:00Z")), "state_durable", bad);
}

TEST(StateDurable, NearMissAReplayedIntentRepeatsTheSameNotice) {
  Script s;
  const char* slot = "2026-03-02T10:30:00Z";
  regular(s, "slotty", slot, slot, "2026-03-02T11:30:00Z", "failure", "timeout");
  note(s, "retry_scheduled", "slotty", slot, slot, 1, "timeout");
  s.add("process_crash", "2026-03-02T10:30:01Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "crash point"}});
  s.add("process_boot", "2026-03-02T10:31:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  note(s, "retry_scheduled", "slotty", slot, "2026-03-02T10:31:00Z", 1, "timeout");
  retry_run(s, "slotty", slot, "2026-03-02T10:40:00Z", 2, "failure", "timeout");
  note(s, "retry_scheduled", "slotty", slot, "2026-03-02T10:40:00Z", 2, "timeout");
  expect_clean(run(s, only({"slotty"}), at("2026-03-02T10:45:00Z")));
}

TEST(StateDurable, FiresWhenTheCorruptStoreIsReplaced) {
  Script s;
  s.add(
      "store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
      {{"file", "retry_state.json"}, {"path", "/srv/state/retry_state.json"}, {"mode", "garbage"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  note_state_corrupt(s, "2026-03-02T10:01:00Z");
  const auto bad =
      s.add("disk_rename", "2026-03-02T10:02:00Z", {}, std::nullopt,
            {{"from", "/srv/state/retry_state.json.tmp"}, {"to", "/srv/state/retry_state.json"}});
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// Missing means fresh: a store that reports itself corrupt when the world
// damaged nothing (a missing file taken for a broken one) fails closed for
// good. Any damage record before the report makes it a fair one.
TEST(StateDurable, FiresWhenCorruptionIsReportedWithNoDamageInTheWorld) {
  Script s;
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 1}});
  const auto bad = note_state_corrupt(s, "2026-03-02T10:01:00Z");
  expect_first(run(s, base_scenario()), "state_durable", bad);
  for (const char* damage : {"disk_corrupted", "disk_torn_write"}) {
    Script near;
    near.add(damage, "2026-03-02T10:00:00Z", {}, std::nullopt,
             {{"path", "/srv/state/retry_state.journal"}, {"kind", "garbage"}});
    near.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
             {{"process", "worker"}, {"boots", 2}});
    note_state_corrupt(near, "2026-03-02T10:01:00Z");
    const Outcome o = run(near, base_scenario());
    EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(),
                             [](const Violation& v) { return v.invariant == "state_durable"; }))
        << damage << ": " << describe(o.seen);
  }
  Script refused;  // a fault the disk could not apply damaged nothing
  refused.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
              {{"file", "retry_state.json"}, {"applied", false}});
  const auto unfounded = note_state_corrupt(refused, "2026-03-02T10:01:00Z");
  expect_first(run(refused, base_scenario()), "state_durable", unfounded);
}

// In journal-cut-at-record-boundary.json the swarm's other faults change the
// journal, so the scenario's cut lands on a record boundary that loses no
// slot the ledger knows. The journal left is valid (`records_whole`), no
// reader can see the loss (docs/state-file.md, "What stays undetectable"),
// so appending to it is no corrupt file replaced; once the core reports a
// damage (it found the loss another way), the file must be kept.
Script journal_cut_whole_then_appended(bool reported) {
  Script s;
  const char* journal = "/srv/state/retry_state.journal";
  s.add("disk_corrupted", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"path", journal}, {"kind", "truncate"}, {"offset", 1097}});
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"},
         {"path", journal},
         {"mode", "truncated"},
         {"applied", true},
         {"records_whole", true}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  s.add("disk_read", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"path", journal}, {"offset", 0}, {"bytes", 1097}, {"process", 1}});
  if (reported) note_state_corrupt(s, "2026-03-02T10:01:00Z");
  s.add("disk_append", "2026-03-02T10:02:00Z", {}, std::nullopt,
        {{"path", journal}, {"bytes", 300}, {"process", 1}});
  return s;
}

TEST(StateDurable, AJournalCutAtARecordBoundaryIsCorruptOnlyOnceTheCoreFoundTheLoss) {
  const Outcome unseen =
      run(journal_cut_whole_then_appended(false), base_scenario(), at("2026-03-02T10:03:00Z"));
  const auto state_durable = [](const Violation& v) { return v.invariant == "state_durable"; };
  EXPECT_TRUE(std::none_of(unseen.seen.begin(), unseen.seen.end(), state_durable))
      << describe(unseen.seen);
  EXPECT_TRUE(std::none_of(unseen.end.begin(), unseen.end.end(), state_durable))
      << describe(unseen.end);
  const Script found = journal_cut_whole_then_appended(true);
  expect_first(run(found, base_scenario()), "state_durable", found.events().size() - 1);
  // A later boot's full load cannot see the cut (the store keeps no record
  // across processes that it found one): appending after it is no
  // replacement of a corrupt file.
  Script rebooted = found;
  rebooted.add("process_crash", "2026-03-02T10:05:00Z", {}, std::nullopt,
               {{"process", "worker"}, {"cause", "restart"}});
  rebooted.add("process_boot", "2026-03-02T10:06:00Z", {}, std::nullopt,
               {{"process", "worker"}, {"boots", 3}});
  rebooted.add("disk_append", "2026-03-02T10:07:00Z", {}, std::nullopt,
               {{"path", "/srv/state/retry_state.journal"}, {"bytes", 300}, {"process", 1}});
  const Outcome after_boot = run(rebooted, base_scenario(), at("2026-03-02T10:08:00Z"));
  ASSERT_FALSE(after_boot.seen.empty());
  EXPECT_EQ(after_boot.seen.back().event_index, found.events().size() - 1)
      << describe(after_boot.seen);
}

// A cut at a record boundary that the delivery ledger proves lost records
// (the world's `ledger_ahead`): the next process that boots on the state
// directory as the cut left it must report the damage.
Script journal_cut_the_ledger_proves(const char* before_boot) {
  Script s;
  const char* journal = "/srv/state/retry_state.journal";
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"},
         {"path", journal},
         {"mode", "truncated"},
         {"applied", true},
         {"records_whole", true},
         {"ledger_ahead", json::array({{{"job", "hourly"},
                                        {"ledger_slot", "2026-03-02T10:00:00Z"},
                                        {"state_last_slot", "2026-03-02T09:00:00Z"}}})}});
  if (std::string(before_boot) == "append") {
    s.add("disk_append", "2026-03-02T10:00:30Z", {}, std::nullopt,
          {{"path", journal}, {"bytes", 300}, {"process", 1}});
  } else if (std::string(before_boot) == "lock") {
    s.add("disk_write", "2026-03-02T10:00:30Z", {}, std::nullopt,
          {{"path", "/srv/state/worker.lock"}, {"bytes", 10}, {"process", 1}});
  }
  s.add("process_crash", "2026-03-02T10:00:40Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  return s;
}

TEST(StateDurable, FiresWhenABootOnRecordsTheLedgerProvesLostReportsNothing) {
  for (const char* before : {"nothing", "lock"}) {
    const Outcome o =
        run(journal_cut_the_ledger_proves(before), base_scenario(), at("2026-03-02T11:00:00Z"));
    const auto found = std::find_if(o.end.begin(), o.end.end(), [](const Violation& v) {
      return v.invariant == "state_durable" &&
             v.message.find("delivery ledger has slot 2026-03-02T10:00:00Z of job hourly") !=
                 std::string::npos;
    });
    EXPECT_NE(found, o.end.end()) << before << ": " << describe(o.end);
  }
}

// The booted process trusted the store and wrote to it: the report is still owed.
TEST(StateDurable, FiresWhenABootOnRecordsTheLedgerProvesLostWritesInsteadOfReporting) {
  Script s = journal_cut_the_ledger_proves("nothing");
  s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"}, {"bytes", 300}, {"process", 1}});
  const Outcome o = run(s, base_scenario(), at("2026-03-02T11:00:00Z"));
  EXPECT_TRUE(std::any_of(o.end.begin(), o.end.end(), [](const Violation& v) {
    return v.invariant == "state_durable" && v.message.find("never reported") != std::string::npos;
  })) << describe(o.end);
}

TEST(StateDurable, NearMissABootThatReportsOrAStoreWrittenSinceTheCut) {
  Script reported = journal_cut_the_ledger_proves("nothing");
  note_state_corrupt(reported, "2026-03-02T10:01:00Z");
  reported.add("outbox_add", "2026-03-02T10:01:00Z", {}, std::nullopt,
               {{"event", "state_corrupt"}, {"target", "team"}});
  const auto state_durable = [](const Violation& v) { return v.invariant == "state_durable"; };
  for (const Script& s : {reported, journal_cut_the_ledger_proves("append")}) {
    const Outcome o = run(s, base_scenario(), at("2026-03-02T11:00:00Z"));
    EXPECT_TRUE(std::none_of(o.end.begin(), o.end.end(), state_durable)) << describe(o.end);
  }
}

// A journal cut mid-record is dropped as a torn tail at the next
// load. Reported (state_tail_dropped) with a copy of the damaged file kept
// (kept_as), the store may then replace the journal; without the copy, it may
// not, and the report alone counts as the core seeing the damage.
// A torn tail, judged from the world's own records of the journal and the
// files beside it (the core's state_tail_dropped is not read): a state file
// a fault cut may be replaced once the world saw a durable copy of the
// damaged journal (journal_tail_kept); a tail gone with no copy kept fires,
// and so does a corrupt journal (no torn tail: a bad record before it)
// replaced even with a copy.
TEST(StateDurable, ATornTailMayBeDroppedOnlyWithACopyOfTheDamagedJournalKept) {
  const std::string journal = "/srv/state/retry_state.journal";
  const json tail = {
      {"path", journal}, {"offset", 50}, {"length", 12}, {"torn", true}, {"digest", "52c3c793"}};
  Script s;
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"}, {"path", journal}, {"mode", "truncated"}});
  s.add("journal_tail_found", "2026-03-02T10:00:00Z", {}, std::nullopt, tail);
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  Script kept = s;
  json copy = tail;
  copy["copy"] = journal + ".damaged-0-50";
  kept.add("journal_tail_kept", "2026-03-02T10:01:00Z", {}, std::nullopt, copy);
  // The core's report without a copy is no evidence: it is not read.
  kept.add("state_tail_dropped", "2026-03-02T10:01:00Z", {}, std::nullopt,
           {{"file", journal}, {"kept_as", ""}});
  kept.add("disk_rename", "2026-03-02T10:02:00Z", {}, std::nullopt,
           {{"from", journal + ".tmp"}, {"to", journal}});
  json gone = tail;
  gone["kept_as"] = json::array({journal + ".damaged-0-50"});
  kept.add("journal_tail_gone", "2026-03-02T10:02:00Z", {}, std::nullopt, gone);
  const Outcome o = run(kept, base_scenario(), at("2026-03-02T10:03:00Z"));
  EXPECT_TRUE(o.seen.empty()) << describe(o.seen);
  EXPECT_TRUE(std::none_of(o.end.begin(), o.end.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o.end);
  // The core says it kept a copy; the world saw none: the rename over the
  // cut journal fires, and so does the tail gone with nothing kept.
  Script lost = s;
  lost.add("state_tail_dropped", "2026-03-02T10:01:00Z", {}, std::nullopt,
           {{"file", journal}, {"kept_as", journal + ".damaged-0-50"}});
  const auto bad = lost.add("disk_rename", "2026-03-02T10:02:00Z", {}, std::nullopt,
                            {{"from", journal + ".tmp"}, {"to", journal}});
  json none = tail;
  none["kept_as"] = json::array();
  const auto dropped =
      lost.add("journal_tail_gone", "2026-03-02T10:02:00Z", {}, std::nullopt, none);
  const Outcome l = run(lost, base_scenario());
  expect_first(l, "state_durable", bad);
  EXPECT_TRUE(std::any_of(l.seen.begin(), l.seen.end(), [&](const Violation& v) {
    return v.invariant == "state_durable" && v.event_index == dropped;
  })) << describe(l.seen);
  // A tail that no crash explains (torn false) may not be dropped at all.
  Script corrupt;
  json bad_record = tail;
  bad_record["torn"] = false;
  bad_record["kept_as"] = json::array({journal + ".damaged-0-50"});
  const auto replaced =
      corrupt.add("journal_tail_gone", "2026-03-02T10:02:00Z", {}, std::nullopt, bad_record);
  expect_first(run(corrupt, base_scenario()), "state_durable", replaced);
}

// A store's files change only under its lock, read from the disk's own
// records (disk_lock / disk_unlock with the holding process): a write after
// the lock was released, or by a process that does not hold it, fires; one
// under the lock does not. A store whose writer never locks at all is caught
// too, since the world names its store directories (add_locked_store).
TEST(StateDurable, FiresWhenAStoreIsWrittenWithoutItsLock) {
  const std::string lock = "/srv/state/retry_state.lock";
  const std::string journal = "/srv/state/retry_state.journal";
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  s.add("disk_append", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"path", journal}, {"process", 1}});
  s.add("disk_fsync", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"path", journal}, {"process", 1}});
  s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, {{"path", lock}, {"process", 1}});
  const auto bad = s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
                         {{"path", journal}, {"process", 1}});
  expect_first(run(s, base_scenario()), "state_durable", bad);

  Script never;
  const auto unlocked = never.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt,
                                  {{"path", "/srv/ledger/job.ledger.json.tmp"}, {"process", 1}});
  MonitorSet set(base_scenario());
  set.add_locked_store("/srv/ledger/");
  const auto v = set.observe(never.events()[unlocked], unlocked);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->invariant, "state_durable");
}

// An update is acknowledged only once it is durable (docs/semantics.md §5),
// from the disk's own records: a store's lock released while a file appended
// or written in its directory under it has not been fsynced fires at the
// unlock; fsynced (directly, or as a temp file before its rename) it does not,
// and a crash forgets what was pending.
TEST(StateDurable, FiresWhenAStoreReleasesItsLockBeforeAnFsync) {
  const std::string lock = "/srv/state/retry_state.lock";
  const std::string journal = "/srv/state/retry_state.journal";
  const json p1 = {{"process", 1}};
  auto with = [&](const std::string& path) { return json{{"path", path}, {"process", 1}}; };
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  s.add("disk_append", "2026-03-02T10:00:00Z", {}, std::nullopt, with(journal));
  const auto bad = s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  expect_first(run(s, base_scenario()), "state_durable", bad);

  // Near misses: a temp file fsynced and renamed, an fsynced append, and an
  // unsynced append a crash cut before the unlock.
  Script ok;
  const std::string temp = "/srv/state/retry_state.json.tmp";
  ok.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  ok.add("disk_fsync", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  ok.add("disk_rename", "2026-03-02T10:00:00Z", {}, std::nullopt,
         {{"from", temp}, {"to", "/srv/state/retry_state.json"}, {"process", 1}});
  ok.add("disk_append", "2026-03-02T10:00:00Z", {}, std::nullopt, with(journal));
  ok.add("disk_fsync", "2026-03-02T10:00:00Z", {}, std::nullopt, with(journal));
  ok.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_lock", "2026-03-02T10:01:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt, with(journal));
  ok.add("disk_crash", "2026-03-02T10:01:00Z", {}, std::nullopt, p1);
  ok.add("disk_lock", "2026-03-02T10:02:00Z", {}, std::nullopt, with(lock));
  ok.add("disk_unlock", "2026-03-02T10:02:00Z", {}, std::nullopt, with(lock));
  const Outcome o = run(ok, base_scenario());
  EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o.seen);

  // A renamed temp file that was never fsynced is still pending under its new name.
  Script renamed;
  renamed.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  renamed.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  renamed.add("disk_rename", "2026-03-02T10:00:00Z", {}, std::nullopt,
              {{"from", temp}, {"to", "/srv/state/retry_state.json"}, {"process", 1}});
  const auto late =
      renamed.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  expect_first(run(renamed, base_scenario()), "state_durable", late);
}

// A file renamed onto itself keeps its pending change (and the monitor
// reads no entry it has erased).
TEST(StateDurable, AFileRenamedOntoItselfKeepsItsPendingChange) {
  const std::string lock = "/srv/state/retry_state.lock";
  const std::string temp = "/srv/state/retry_state.json.tmp";
  auto with = [&](const std::string& path) { return json{{"path", path}, {"process", 1}}; };
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  s.add("disk_write", "2026-03-02T10:00:00Z", {}, std::nullopt, with(temp));
  s.add("disk_rename", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"from", temp}, {"to", temp}, {"process", 1}});
  const auto late = s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt, with(lock));
  expect_first(run(s, base_scenario()), "state_durable", late);
}

// A success resets the count (docs/semantics.md §4), read from the durable
// row the world reads: `ok` with retry_count 2 fires; `ok` with 0 and
// `retrying` with 2 do not.
TEST(StateDurable, FiresWhenAnOkRowKeepsItsRetryCount) {
  const char* t = "2026-03-02T10:00:00Z";
  Script s;
  s.add("durable_job_state", t, "hourly", std::nullopt,
        {{"retry_status", "retrying"}, {"retry_count", 2}, {"slots", json::object()}});
  s.add("durable_job_state", t, "hourly", std::nullopt,
        {{"retry_status", "ok"}, {"retry_count", 0}, {"slots", json::object()}});
  const Outcome o = run(s, base_scenario());
  EXPECT_TRUE(std::none_of(o.seen.begin(), o.seen.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o.seen);
  const auto bad = s.add("durable_job_state", t, "hourly", std::nullopt,
                         {{"retry_status", "ok"}, {"retry_count", 2}, {"slots", json::object()}});
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// The queue's durable promise (a world with the core's DiskJobQueue on its
// disk): an entry the queue acknowledged (added) and did not finish or drop,
// and a message its outbox acknowledged and did not remove, are in the file
// a boot reopens, as the world's own reader found it (`queue_reopened`). A
// deduplicated add acknowledges nothing new; a cancelled entry and a removed
// message are owed no more.
TEST(StateDurable, FiresWhenTheReopenedQueueLacksAnAcknowledgedEntry) {
  const char* t = "2026-03-02T10:00:00Z";
  const auto entry = [](std::uint64_t id, bool added) {
    return json{{"id", id},
                {"kind", "retry"},
                {"attempt", 2},
                {"ready_at", "2026-03-02T10:40:00Z"},
                {"added", added}};
  };
  const auto message = [](std::uint64_t id) {
    return json{{"id", id}, {"target", "ops"}, {"event", "retry_scheduled"}};
  };
  Script s;
  s.add("queue_add", t, "slotty", "2026-03-02T09:30:00Z", entry(1, true));
  s.add("queue_add", t, "slotty", "2026-03-02T09:30:00Z", entry(1, false));
  s.add("queue_add", t, "slotty", "2026-03-02T08:30:00Z", entry(2, true));
  s.add("queue_cancel", t, "slotty", "2026-03-02T08:30:00Z", entry(2, true));
  s.add("outbox_add", t, "slotty", "2026-03-02T09:30:00Z", message(1));
  s.add("outbox_add", t, "slotty", "2026-03-02T09:30:00Z", message(2));
  s.add("outbox_remove", t, {}, std::nullopt, message(2));
  s.add("process_crash", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"cause", "restart"}});
  s.add("process_boot", "2026-03-02T10:02:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"pid", 1}, {"boots", 2}});
  const auto reopened = [](Script& script, json entries, json outbox, bool readable = true) {
    return script.add("queue_reopened", "2026-03-02T10:02:00Z", {}, std::nullopt,
                      {{"path", "/srv/queue/queue.json"},
                       {"process", 1},
                       {"entries", std::move(entries)},
                       {"outbox", std::move(outbox)},
                       {"readable", readable}});
  };
  const auto durable_findings = [](const Outcome& o) {
    std::vector<Violation> out;
    for (const Violation& v : o.seen) {
      if (v.invariant == "state_durable") out.push_back(v);
    }
    return out;
  };
  // Near miss: everything owed is there.
  Script held = s;
  reopened(held, json::array({1}), json::array({1}));
  EXPECT_TRUE(durable_findings(run(held, base_scenario())).empty())
      << describe(durable_findings(run(held, base_scenario())));
  // The entry a crash took back, the message, and bytes the world cannot read.
  for (const auto& [entries, outbox, readable, what] :
       std::vector<std::tuple<json, json, bool, std::string>>{
           {json::array(), json::array({1}), true, "queue entry 1 (job slotty"},
           {json::array({1}), json::array(), true, "outbox message 1 (retry_scheduled to ops)"},
           {json::array(), json::array(), false, "cannot be read by the world"}}) {
    Script lost = s;
    const std::size_t bad = reopened(lost, entries, outbox, readable);
    const std::vector<Violation> found = durable_findings(run(lost, base_scenario()));
    ASSERT_FALSE(found.empty()) << what;
    EXPECT_EQ(found.front().event_index, bad);
    EXPECT_NE(found.front().message.find(what), std::string::npos) << found.front().message;
    // Once: the next reopen judges from what is left.
    reopened(lost, entries, outbox, readable);
    EXPECT_EQ(durable_findings(run(lost, base_scenario())).size(), found.size()) << what;
  }
}

// Damage must be reported by a process that relies on the file: one that
// booted after the damage and read it (the disk's own `disk_read`).
TEST(StateDurable, FiresAtTheEndWhenCorruptionIsNeverReported) {
  Script s;
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "retry_state.json"}, {"path", "/srv/state/retry_state.json"}});
  s.add("process_boot", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  s.add("disk_read", "2026-03-02T10:01:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.json"}, {"offset", 0}, {"bytes", 9}, {"process", 1}});
  const Outcome o = run(s, base_scenario(), at("2026-03-02T10:02:00Z"));
  const auto it = std::find_if(o.end.begin(), o.end.end(),
                               [](const Violation& v) { return v.invariant == "state_durable"; });
  ASSERT_NE(it, o.end.end()) << describe(o.end);
  EXPECT_EQ(it->event_index, s.events().size());
  // Near miss: reported, kept, and no retry scheduled while corrupt.
  Script ok = s;
  note_state_corrupt(ok, "2026-03-02T10:01:00Z");
  const Outcome o2 = run(ok, base_scenario(), at("2026-03-02T10:02:00Z"));
  EXPECT_TRUE(std::none_of(o2.end.begin(), o2.end.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(o2.end);
  // ...and a retry scheduled while corrupt (the queue's add of it) fires;
  // the notice alone (a replayed intent's, no retry queued) does not.
  regular(ok, "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:03:00Z", "2026-03-02T11:00:00Z",
          "failure", "rate_limit");
  note(ok, "retry_scheduled", "hourly", "2026-03-02T10:00:00Z", "2026-03-02T10:03:00Z", 1,
       "rate_limit");
  const Outcome notice_only = run(ok, base_scenario(), at("2026-03-02T10:04:00Z"));
  EXPECT_TRUE(std::none_of(notice_only.seen.begin(), notice_only.seen.end(),
                           [](const Violation& v) {
                             return v.message.find("scheduled while") != std::string::npos;
                           }))
      << describe(notice_only.seen);
  const auto bad = ok.add(
      "queue_add", "2026-03-02T10:03:00Z", "hourly", "2026-03-02T10:00:00Z",
      {{"kind", "retry"}, {"added", true}, {"attempt", 2}, {"ready_at", "2026-03-02T10:08:00Z"}});
  expect_first(run(ok, base_scenario()), "state_durable", bad);
}

// A damaged file no process read after a boot has no reader to report it
// (jobs_state.json: the worker does not use it, docs/state-file.md, "Runtime
// views"); read before the boot only, by the process that ran on, neither.
// Read by the booted process, it fires like the store's own files, unless that
// process went down before it could report.
TEST(StateDurable, ADamagedFileMustBeReportedOnlyOnceABootedProcessReadIt) {
  const std::string file = "/srv/state/jobs_state.json";
  const auto ends_quiet = [](const Script& script) {
    const Outcome o = run(script, base_scenario(), at("2026-03-02T10:30:00Z"));
    return std::none_of(o.end.begin(), o.end.end(),
                        [](const Violation& v) { return v.invariant == "state_durable"; });
  };
  const auto read_at = [&](Script& script, const char* t) {
    script.add("disk_read", t, {}, std::nullopt,
               {{"path", file}, {"offset", 0}, {"bytes", 10}, {"process", 1}});
  };
  Script s;
  s.add("store_corrupt_injected", "2026-03-02T10:00:00Z", {}, std::nullopt,
        {{"file", "jobs_state.json"}, {"path", file}, {"existed", false}, {"applied", true}});
  Script running = s;
  read_at(running, "2026-03-02T10:05:00Z");
  s.add("process_crash", "2026-03-02T10:10:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"cause", "restart"}, {"crashes", 1}});
  s.add("process_boot", "2026-03-02T10:20:00Z", {}, std::nullopt,
        {{"process", "worker"}, {"boots", 2}});
  EXPECT_TRUE(ends_quiet(s)) << "booted, never read";
  EXPECT_TRUE(ends_quiet(running)) << "read by the process that ran on, no boot since";
  Script read = s;
  read_at(read, "2026-03-02T10:20:00Z");
  const Outcome o = run(read, base_scenario(), at("2026-03-02T10:30:00Z"));
  const auto it = std::find_if(o.end.begin(), o.end.end(),
                               [](const Violation& v) { return v.invariant == "state_durable"; });
  ASSERT_NE(it, o.end.end()) << describe(o.end);
  EXPECT_NE(it->message.find(file), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("no state_corrupt was reported"), std::string::npos);
  Script reported = read;
  note_state_corrupt(reported, "2026-03-02T10:20:00Z");
  EXPECT_TRUE(ends_quiet(reported));
  // The reader went down before it could report (a torn write of its copy of
  // the damage, say): the debt passes to the next process that reads.
  Script died = read;
  died.add("process_crash", "2026-03-02T10:21:00Z", {}, std::nullopt,
           {{"process", "worker"}, {"cause", "torn_write"}, {"crashes", 2}});
  EXPECT_TRUE(ends_quiet(died)) << "read, then down before reporting";
  died.add("process_boot", "2026-03-02T10:25:00Z", {}, std::nullopt,
           {{"process", "worker"}, {"boots", 3}});
  read_at(died, "2026-03-02T10:25:00Z");
  EXPECT_FALSE(ends_quiet(died)) << "the next boot read it and did not report";
}

// The violation "a retry ran while the state store is corrupt" is judged at the
// retry's start (the queue's take), not when its run fact settles at its end:
// a retry already running when the damage is found cannot be held back
// (docs/semantics.md §5: a retry queued before the damage was found does not
// run). One taken after the core reported the store corrupt still fires.
TEST(StateDurable, ARetryFiresOnlyWhenItStartedWhileTheStoreWasCorrupt) {
  const char* slot = "2026-03-02T10:00:00Z";
  const json end = {
      {"kind", "retry"}, {"attempt", 2}, {"outcome", "failure"}, {"failure_class", "rate_limit"}};
  Script s;
  regular(s, "hourly", slot, slot, "2026-03-02T11:00:00Z", "failure", "rate_limit");
  note(s, "retry_scheduled", "hourly", slot, slot, 1, "rate_limit");
  s.add("disk_corrupted", "2026-03-02T10:03:00Z", {}, std::nullopt,
        {{"path", "/srv/state/retry_state.journal"}, {"kind", "garbage"}});
  // Near miss: taken at 10:05, the damage reported at 10:06, ended at 10:10.
  Script before = s;
  run_start(before, "2026-03-02T10:05:00Z", "hourly", slot, {{"kind", "retry"}, {"attempt", 2}});
  note_state_corrupt(before, "2026-03-02T10:06:00Z");
  run_end(before, "2026-03-02T10:10:00Z", "hourly", slot, end);
  const Outcome near = run(before, base_scenario());
  EXPECT_TRUE(std::none_of(near.seen.begin(), near.seen.end(), [](const Violation& v) {
    return v.invariant == "state_durable";
  })) << describe(near.seen);
  // Taken after the damage was reported: fires at the take.
  Script after = s;
  note_state_corrupt(after, "2026-03-02T10:04:00Z");
  const auto bad =
      run_start(after, "2026-03-02T10:05:00Z", "hourly", slot, {{"kind", "retry"}, {"attempt", 2}});
  run_end(after, "2026-03-02T10:10:00Z", "hourly", slot, end);
  expect_first(run(after, base_scenario()), "state_durable", bad);
}

// A disk record of process 1 on `path`.
json by_process_1(const char* path) { return json{{"path", path}, {"process", 1}}; }

// The worker lock (held for the process's life) is no store lock: a store
// file appended under it alone fires (kill matrix: store_update_without_lock
// survived while the worker lock counted).
TEST(StateDurable, FiresOnAStoreChangeUnderTheWorkerLockAlone) {
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/worker.lock"));
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  s.add("disk_unlock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  const auto bad = s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
                         by_process_1("/srv/state/retry_state.journal"));
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

// The worker lock's directory is a locked store from the lock's grant on: a
// core whose updates never take the store's lock fires at its first update,
// even where nothing else ever took that lock and the world did not name the
// directory (a hand-made trace, a user's own world).
TEST(StateDurable, FiresOnAnUpdateInTheWorkerLocksDirectoryWhenNoStoreLockWasEverTaken) {
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/worker.lock"));
  const auto bad = s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
                         by_process_1("/srv/state/retry_state.journal"));
  expect_first(run(s, base_scenario()), "state_durable", bad);
}

TEST(StateDurable, NearMissAnUpdateUnderTheStoreLockBesideTheWorkerLock) {
  Script s;
  s.add("disk_lock", "2026-03-02T10:00:00Z", {}, std::nullopt,
        by_process_1("/srv/state/worker.lock"));
  s.add("disk_lock", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  s.add("disk_append", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.journal"));
  s.add("disk_fsync", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.journal"));
  s.add("disk_unlock", "2026-03-02T10:01:00Z", {}, std::nullopt,
        by_process_1("/srv/state/retry_state.lock"));
  const Outcome o = run(s, base_scenario());
  EXPECT_FALSE(fired(o, "state_durable", "")) << describe(o.seen);
}

}  // namespace
}  // namespace rehearse::sim::monitor_test
