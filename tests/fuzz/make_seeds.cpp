// Writes the seed corpora of tests/fuzz/corpus/<target>/ (docs/fuzzing.md):
// cron expressions from tests/data/cron_vectors.json, the bundled and test
// scenarios, policies in every form, and state, journal, ledger and pipeline
// files made by the real encoders and stores. Run from the `fuzz` build:
//   build/fuzz/tests/fuzz/fuzz_make_seeds <source dir>
// Every seed starts with the bytes its target reads first (properties.hpp).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/delivery_ledger.hpp"
#include "model/pipeline_store.hpp"
#include "model/state_codec.hpp"
#include "model/state_store.hpp"
#include "tests/fuzz/job_state_bytes.hpp"
#include "tests/fuzz/mem_disk.hpp"

namespace fs = std::filesystem;
using namespace rehearse;
using nlohmann::json;

namespace {

fs::path g_out;

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_out / target);
  std::ofstream(g_out / target / ("seed-" + name), std::ios::binary) << bytes;
}

std::string be64(std::uint64_t v) {
  std::string s;
  for (int i = 7; i >= 0; --i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

void cron_seeds(const fs::path& source) {
  const json vectors = json::parse(read(source / "tests/data/cron_vectors.json"));
  int n = 0;
  for (const char* group : {"cases", "rejects", "never_fires", "strict", "extensions"}) {
    const json& list = vectors.at(group);
    // Every 12th vector of the large groups: a varied set, small enough to run quickly.
    const std::size_t step = list.size() > 100 ? 12 : 1;
    for (std::size_t i = 0; i < list.size(); i += step) {
      const TimeMs from = 1'704'067'200'000 + static_cast<TimeMs>(i) * 7'919'000;
      seed("cron", std::to_string(n++),
           be64(static_cast<std::uint64_t>(from)) + list[i].at("expr").get<std::string>());
    }
  }
}

void time_seeds() {
  const char* instants[] = {"2026-12-04T17:00:00Z", "2024-02-29T23:59:59.999Z", "1970-01-01T00:00Z",
                            "9999-12-31T23:59:59.999Z", "2023-02-29T00:00:00Z"};
  const char* durations[] = {"90s", "1h30m", "250ms", "1d12h", "7d", "0ms", "30m", "2h"};
  int n = 0;
  for (const char* t : instants) {
    seed("time", std::to_string(n++), be64(1'764'864'000'000) + be64(90'000) + '\0' + t);
  }
  for (const char* d : durations) {
    seed("time", std::to_string(n++), be64(951'782'400'000) + be64(5'400'000) + '\1' + d);
  }
}

void policy_seeds() {
  const std::pair<int, const char*> policies[] = {
      {0, R"({"max": 2, "backoff_sec": 300, "retryable_classes": ["timeout", "network"]})"},
      {0, R"({"attempts": 3, "backoff": {"type": "exponential", "delay": "1m", "jitter": 0.5}})"},
      {0, R"({"max": 0, "reason": "a publish is not safe to repeat"})"},
      {1, R"("auto")"},
      {2, "{attempts: 4, backoff: {type: 'exponential', delay: 1_800_000}, removeOnFail: true}"},
      {3, R"({initialInterval: "30m", backoffCoefficient: 2, maximumAttempts: 4})"},
      {4, R"({"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1800, "MaxAttempts": 3,
             "BackoffRate": 2, "JitterStrategy": "FULL"})"},
      {5, "{retry: 5} // sidekiq_options"},
      {6, "{max_retries: 3, retry_backoff: 1800, retry_backoff_max: 7200, retry_jitter: false}"},
      {7,
       "{apiVersion: 'batch/v1', kind: 'Job', spec: {backoffLimit: 4, /* pods */ template: {}}}"},
  };
  int n = 0;
  for (const auto& [form, text] : policies) {
    seed("policy", std::to_string(n++), std::string(1, static_cast<char>(form)) + text);
  }
}

void scenario_seeds(const fs::path& source) {
  for (const char* dir : {"scenarios", "tests/data/scenarios-good", "tests/data/scenarios-bad"}) {
    for (const auto& entry : fs::directory_iterator(source / dir)) {
      if (entry.path().extension() != ".json") continue;
      seed("scenario", entry.path().stem().string(), read(entry.path()));
    }
  }
}

// A store's files after a few updates (and a compaction when `compact`).
std::map<std::string, std::string> store_after_updates(int updates, bool compact) {
  fuzz::MemDisk disk;
  StoreOptions options;
  options.durability = Durability::no_sync;
  auto store = StateStore::open(disk, "store", options);
  for (int i = 0; i < updates; ++i) {
    const std::string bytes(32, static_cast<char>(i * 37 + 11));
    fuzz::Input in(bytes);
    JobState next = fuzz::job_state_from(in, "job-" + std::to_string(i % 3));
    next.retry_count = i + 1;
    (void)store->update(next.job_id, [&next](JobState& s) { s = next; });
  }
  if (compact) (void)store->compact();
  return disk.files;
}

void state_seeds() {
  int n = 0;
  for (const bool compact : {false, true}) {
    for (const auto& [path, bytes] : store_after_updates(4, compact)) {
      if (path.find("retry_state.json") != std::string::npos && !bytes.empty()) {
        seed("state_codec", std::to_string(n++), std::string(1, '\0') + bytes);
      }
      if (path.find("retry_state.journal") != std::string::npos && !bytes.empty()) {
        seed("state_codec", std::to_string(n++), std::string(1, '\1') + bytes);
        seed("state_codec", std::to_string(n++), std::string(1, '\2') + bytes);
        // A torn tail: the journal cut inside its last record.
        seed("state_codec", std::to_string(n++),
             std::string(1, '\1') + bytes.substr(0, bytes.size() - 7));
      }
    }
  }
  JobState job;
  job.job_id = "daily-report";
  job.retry_status = RetryStatus::retrying;
  job.failure_class = FailureClass::rate_limit;
  job.retry_count = 2;
  job.next_retry_at = 1'764'864'000'000;
  seed("state_codec", std::to_string(n++), std::string(1, '\3') + encode_job(job).dump());
  // The store target: options, updates, then bytes appended to the journal.
  const std::string record = encode_journal_record(9, job);
  seed("state_store", "0", std::string("\x02\x03") + std::string(60, '\x05') + '\0' + "");
  seed("state_store", "1",
       std::string("\x04\x02") + std::string(40, '\x09') + static_cast<char>(record.size() / 2) +
           record);
  seed("state_store", "2",
       std::string("\x01\x05") + std::string(90, '\x03') + '\x10' + "9 12 {\"job_id\":\n" + record);
}

// Snapshot + journal inputs (prop_ledger.cpp): the snapshot holds the first
// two slots, the journal moves the second one on and adds the third, and the
// bytes appended later add a fourth slot (whole, or torn).
void ledger_journal_seeds(std::vector<DeliverySlot> slots) {
  const std::string snapshot = encode_ledger("job-1", {slots[0], slots[1]});
  std::string journal = encode_ledger_journal_header("job-1", 1);
  slots[1].guard_at = slots[1].slot + 2000;
  journal += encode_ledger_record(slots[1]) + encode_ledger_record(slots[2]);
  DeliverySlot more;
  more.slot = slots[2].slot + 86'400'000;
  more.outbox = json::array({"a", "b"});
  more.outbox_at = more.slot;
  const std::string appended = encode_ledger_record(more);
  const std::string nul(1, '\0');
  for (int op = 0; op < 8; ++op) {
    seed("ledger", "j" + std::to_string(op),
         std::string(1, static_cast<char>(op)) + '\1' + snapshot + nul + journal + nul + appended);
  }
  seed("ledger", "j-torn",
       std::string("\x02\x00", 2) + snapshot + nul + journal.substr(0, journal.size() - 7) + nul +
           "\"}\n");
  seed("ledger", "j-no-snapshot", std::string("\x00\x03", 2) + snapshot + nul + journal);
  seed("ledger", "j-empty", std::string("\x01\x01", 2) + snapshot + nul + journal.substr(0, 60));
}

void ledger_seeds() {
  std::vector<DeliverySlot> slots(3);
  slots[0].slot = 1'764'864'000'000;
  slots[0].guard_at = slots[0].slot + 5000;
  slots[0].marked_at = slots[0].slot + 6000;
  slots[0].verdict = SlotVerdict::delivered;
  slots[0].delivered_to = {"ops", "team"};
  slots[1].slot = 1'764'950'400'000;
  slots[1].outbox = json::array({"summary"});
  slots[1].outbox_at = slots[1].slot + 1000;
  slots[1].delivered_to = {"ops"};
  slots[2].slot = 1'765'036'800'000;
  slots[2].guard_at = slots[2].slot;
  slots[2].marked_at = slots[2].slot;
  slots[2].verdict = SlotVerdict::skipped;
  const std::string file = encode_ledger("job-1", slots);
  for (int op = 0; op < 8; ++op) {
    seed("ledger", std::to_string(op), std::string(1, static_cast<char>(op)) + '\1' + file);
  }
  seed("ledger", "8", std::string("\x01\x00", 2) + file);
  ledger_journal_seeds(slots);
}

void pipeline_seeds() {
  std::vector<PipelineItem> items(2);
  items[0].id = "p-1";
  items[0].issue = "ISSUE-1";
  items[0].stage = "REVIEWING";
  items[0].last_config_error_at = 1'764'864'000'000;
  items[0].validated_instance = "orchestrator-1";
  items[1].id = "p-2";
  items[1].issue = "ISSUE-2";
  items[1].failures = 3;
  items[1].reconcile_error = "timeout";
  items[1].next_attempt_at = 1'764'867'600'000;
  seed("pipeline", "0", encode_pipeline(items));
  seed("pipeline", "1", encode_pipeline({}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_make_seeds SOURCE_DIR\n";
    return 2;
  }
  const fs::path source = argv[1];
  g_out = source / "tests/fuzz/corpus";
  cron_seeds(source);
  time_seeds();
  policy_seeds();
  scenario_seeds(source);
  state_seeds();
  ledger_seeds();
  pipeline_seeds();
  return 0;
}
