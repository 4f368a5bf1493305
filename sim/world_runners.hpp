// The core's job runners as the world builds them, behind a narrow header.
//
// A separate translation unit keeps the scheduler side of the world
// (sim/world.cpp) apart from the runners and the ledger
// (sim/world_runners.cpp). This header includes neither: it names the ledger
// by a forward declaration only and takes a plain description of the job.
// (The split began when the ledger's per-slot record and the retry machine's
// shared the name SlotRecord; the ledger's is now DeliverySlot.)
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/disk.hpp"
#include "model/failure.hpp"
#include "model/job_runner.hpp"
#include "model/ports.hpp"
#include "model/result.hpp"
#include "model/token_client.hpp"

namespace rehearse {
class DeliveryLedger;
}  // namespace rehearse

namespace rehearse::sim {

enum class CoreRunnerKind : unsigned char { group, fetch, publish };

// What the core's runner of one job needs to know (taken from a JobSpec).
struct CoreRunnerSpec {
  CoreRunnerKind kind = CoreRunnerKind::group;
  std::string job_id;
  std::vector<std::pair<std::string, int>> tasks;  // group: (task id, model calls)
  std::vector<std::string> targets;                 // group, publish
  int requests = 1;                                 // fetch
  bool parallel = false;                            // fetch
  FailureClassSet retryable_classes = default_retryable_classes();  // group
  std::string publish_task = "publish";             // publish: the model-api task
};

// Opens the delivery ledger in `dir` (process memory of the worker; the
// shared_ptr carries its own deleter, so holders need not see the type).
Result<std::shared_ptr<DeliveryLedger>> open_world_ledger(Disk& disk, std::string dir);

std::unique_ptr<JobRunner> make_core_runner(const CoreRunnerSpec& spec, Clock& clock,
                                            rehearse::Services& services, Notifier& notifier, Log& log,
                                            DeliveryLedger& ledger, TokenClient& token_client);

}  // namespace rehearse::sim
