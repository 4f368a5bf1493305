#include "tests/sim/monitors/group_world.hpp"

#include <utility>

#include "model/delivery_ledger.hpp"
#include "model/group_job.hpp"

namespace rehearse::sim::testing {
namespace {

class Handle final : public GroupRunnerHandle {
 public:
  Handle(Clock& clock, ::rehearse::Services& services, Notifier& notifier, Log& log,
         DeliveryLedger ledger, GroupJobConfig config)
      : ledger_(std::move(ledger)),
        job_(clock, services, notifier, log, ledger_, std::move(config)) {}
  JobRunner& runner() override { return job_; }

 private:
  DeliveryLedger ledger_;
  GroupJob job_;
};

}  // namespace

std::unique_ptr<GroupRunnerHandle> make_group_runner(Clock& clock, ::rehearse::Services& services,
                                                     Notifier& notifier, Log& log, Disk& disk,
                                                     const std::string& ledger_dir,
                                                     const std::string& job_id,
                                                     const std::vector<std::string>& targets,
                                                     const std::vector<std::string>& tasks) {
  auto ledger = DeliveryLedger::open(disk, ledger_dir);
  if (!ledger.ok()) return nullptr;
  GroupJobConfig config;
  config.job_id = job_id;
  config.targets = targets;
  for (const std::string& t : tasks) config.tasks.push_back({t, 1});
  return std::make_unique<Handle>(clock, services, notifier, log, std::move(*ledger),
                                  std::move(config));
}

}  // namespace rehearse::sim::testing
