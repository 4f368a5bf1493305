// Goal: the group job core is not simulator-only. The same GroupJob the
// simulator runs is driven here the way a production worker would: on the
// real system clock (model/system_clock.hpp) by model/real_driver.hpp, with
// its send guard and slot marker in real files (PosixDisk, a temporary
// directory), against a model API and a messenger that answer after real
// short delays.
// Method: small in-process adapters of the Services, Notifier and Log ports,
// written here as a user of the library would write them (they sleep on the
// driver's clock, so every answer arrives through the driver's timer loop).
// One weekly group job runs one slot: one task yields a summary, the other
// meets a 503, so the delivery goes out with a failure notice item. Checks:
// the outcome, the messages, real time having passed, the ledger file's
// content as a JSON document, a quiet re-run, and a failed slot that leaves no
// guard behind.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "model/group_job.hpp"
#include "model/posix_disk.hpp"
#include "model/real_driver.hpp"
#include "model/system_clock.hpp"
#include "tests/example/in_process_ports.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::example;

GroupJobConfig weekly() {
  GroupJobConfig config;
  config.job_id = "weekly-summary";
  config.tasks = {{"summary", 1}, {"impact-report", 1}};
  config.targets = {"team-chat", "ops-mail"};
  return config;
}

TEST(RealGroupJob, DeliversOnTheRealClockAndRecordsTheSlotInAFile) {
  TempDir dir;
  PosixDisk disk;
  auto opened = DeliveryLedger::open(disk, dir.path() + "/ledger");
  ASSERT_TRUE(opened.ok()) << opened.error().describe();
  DeliveryLedger ledger = std::move(opened).value();

  RealDriver driver;
  InProcessModelApi model(driver.clock());
  InProcessMessenger messenger(driver.clock());
  MemoryLog log;
  GroupJob job(driver.clock(), model, messenger, log, ledger, weekly());
  const TimeMs slot = *parse_instant("2026-12-04T17:00:00Z");

  const TimeMs started_ms = SystemClock::wall_now_ms();
  auto outcome = driver.run(job.run(RunContext{"weekly-summary", slot, 1, false}));
  const TimeMs elapsed_ms = SystemClock::wall_now_ms() - started_ms;
  ASSERT_TRUE(outcome.ok()) << outcome.error().describe();
  EXPECT_EQ(outcome->kind, RunOutcomeKind::success) << outcome->error;
  // Two model calls and two sends, one after the other, on real time.
  EXPECT_GE(elapsed_ms, 2 * kModelLatencyMs + 2 * kMessengerLatencyMs);
  EXPECT_EQ(model.calls(), 2);
  EXPECT_EQ(driver.timer_count(), 0u);

  ASSERT_EQ(messenger.sent().size(), 2u);
  for (const auto& [target, message] : messenger.sent()) {
    EXPECT_EQ(message.at("kind"), "delivery");
    EXPECT_EQ(message.at("job_id"), "weekly-summary");
    EXPECT_EQ(message.at("slot"), "2026-12-04T17:00:00Z");
    const auto& items = message.at("items");
    ASSERT_EQ(items.size(), 2u);
    EXPECT_EQ(items[0].at("kind"), "summary");
    EXPECT_EQ(items[0].at("text"), "This week: 2026-12-04T17:00:00Z");
    EXPECT_EQ(items[1].at("kind"), "failure_notice");
    EXPECT_EQ(items[1].at("text"),
              "\xE2\x9A\xA0\xEF\xB8\x8F impact-report auto-generation failed: "
              "HTTP 503 Service Unavailable");
  }
  EXPECT_TRUE(log.has("guard_set"));
  EXPECT_TRUE(log.has("slot_marked"));

  // The ledger files, read as plain text: the snapshot (written by the first
  // change of the job: the outbox) and the journal of the changes since,
  // whose last line holds the slot's whole record as it now stands.
  const std::string path = ledger.path_for("weekly-summary");
  EXPECT_EQ(path, dir.path() + "/ledger/weekly-summary.ledger.json");
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const nlohmann::json doc = read_json(path);
  EXPECT_EQ(doc.at("format"), 1);
  EXPECT_EQ(doc.at("job_id"), "weekly-summary");
  ASSERT_EQ(doc.at("slots").size(), 1u);
  EXPECT_TRUE(doc.at("slots")[0].contains("outbox"));
  const std::string journal_path = ledger.journal_path_for("weekly-summary");
  EXPECT_EQ(journal_path, dir.path() + "/ledger/weekly-summary.ledger.journal");
  std::ifstream journal_file(journal_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(journal_file, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u);  // the header, two deliveries, the guard, the marker
  EXPECT_EQ(nlohmann::json::parse(lines[0]).at("job_id"), "weekly-summary");
  const nlohmann::json last = nlohmann::json::parse(lines.back().substr(9));  // after "<crc> "
  const auto& record = last;
  EXPECT_EQ(record.at("slot"), "2026-12-04T17:00:00Z");
  EXPECT_EQ(record.at("verdict"), "delivered");
  EXPECT_EQ(record.at("delivered_to"), nlohmann::json::array({"ops-mail", "team-chat"}));
  EXPECT_FALSE(record.contains("outbox"));
  // Guard and marker carry real instants, taken during the run.
  const TimeMs guard_at = *parse_instant(record.at("guard_at").get<std::string>());
  const TimeMs marked_at = *parse_instant(record.at("marked_at").get<std::string>());
  EXPECT_GE(guard_at, started_ms);
  EXPECT_LE(guard_at, marked_at);
  EXPECT_LE(marked_at, SystemClock::wall_now_ms());

  // Re-running the slot (a stalled job picked up again) is quiet.
  auto again = driver.run(job.run(RunContext{"weekly-summary", slot, 2, true}));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->kind, RunOutcomeKind::already_complete);
  EXPECT_EQ(model.calls(), 2);
  EXPECT_EQ(messenger.sent().size(), 2u);
}

TEST(RealGroupJob, AFailedSlotLeavesNoGuardInTheFile) {
  TempDir dir;
  PosixDisk disk;
  DeliveryLedger ledger = *DeliveryLedger::open(disk, dir.path() + "/ledger");
  RealDriver driver;
  InProcessModelApi model(driver.clock());
  model.set_failing(true);
  InProcessMessenger messenger(driver.clock());
  MemoryLog log;
  GroupJob job(driver.clock(), model, messenger, log, ledger, weekly());
  const TimeMs slot = *parse_instant("2026-12-11T17:00:00Z");

  auto outcome = driver.run(job.run(RunContext{"weekly-summary", slot, 1, false}));
  ASSERT_TRUE(outcome.ok());
  EXPECT_EQ(outcome->kind, RunOutcomeKind::failure);
  EXPECT_EQ(outcome->failure_class, FailureClass::provider_5xx);
  EXPECT_EQ(outcome->error, "HTTP 503 Service Unavailable");
  // Both targets were told; nothing was recorded, so the retry is not blocked.
  ASSERT_EQ(messenger.sent().size(), 2u);
  EXPECT_EQ(messenger.sent()[0].second.at("kind"), "failure_notice");
  EXPECT_FALSE(std::filesystem::exists(ledger.path_for("weekly-summary")));
  EXPECT_FALSE(log.has("guard_set"));

  // The retry, once the API is back, delivers.
  model.set_failing(false);
  auto retry = driver.run(job.run(RunContext{"weekly-summary", slot, 2, true}));
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->kind, RunOutcomeKind::success);
  // As a fresh process reads the files (snapshot and journal).
  DeliveryLedger reader = *DeliveryLedger::open(disk, dir.path() + "/ledger");
  EXPECT_EQ(reader.read("weekly-summary", slot)->verdict, SlotVerdict::delivered);
}

}  // namespace
