#include "sim/world_runners.hpp"

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "model/fetch_job.hpp"
#include "model/group_job.hpp"
#include "model/publish_job.hpp"

namespace rehearse::sim {

Result<std::shared_ptr<DeliveryLedger>> open_world_ledger(Disk& disk, std::string dir) {
  auto ledger = DeliveryLedger::open(disk, std::move(dir));
  if (!ledger.ok()) return std::move(ledger).error();
  return std::make_shared<DeliveryLedger>(std::move(ledger).value());
}

std::unique_ptr<JobRunner> make_core_runner(const CoreRunnerSpec& spec, Clock& clock,
                                            rehearse::Services& services, Notifier& notifier, Log& log,
                                            DeliveryLedger& ledger, TokenClient& token_client) {
  switch (spec.kind) {
    case CoreRunnerKind::group: {
      GroupJobConfig config;
      config.job_id = spec.job_id;
      for (const auto& [id, calls] : spec.tasks) config.tasks.push_back({id, calls});
      config.targets = spec.targets;
      config.retryable_classes = spec.retryable_classes;
      return std::make_unique<GroupJob>(clock, services, notifier, log, ledger, std::move(config));
    }
    case CoreRunnerKind::fetch: {
      FetchJobConfig config;
      config.parallel = spec.parallel;
      for (int i = 0; i < spec.requests; ++i) {
        config.requests.push_back(
            FetchRequestSpec{"quote", fmt::format("{}-{}", spec.job_id, i + 1), nullptr});
      }
      return std::make_unique<FetchJob>(clock, token_client, log, std::move(config));
    }
    case CoreRunnerKind::publish: {
      PublishJobConfig config;
      config.job_id = spec.job_id;
      config.targets = spec.targets;
      config.task = spec.publish_task;
      return std::make_unique<PublishJob>(clock, services, notifier, log, ledger,
                                          std::move(config));
    }
  }
  REHEARSE_UNREACHABLE();
}

}  // namespace rehearse::sim
