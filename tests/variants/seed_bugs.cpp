// Test-only faulty variants (see seed_bugs.hpp for what each one replays and
// why it is built the way it is). Never linked into model/ or the CLI.
#include "tests/variants/seed_bugs.hpp"

#include <utility>

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "model/disk.hpp"
#include "model/failure.hpp"
#include "model/job_state.hpp"
#include "model/reconcile.hpp"
#include "model/time.hpp"
#include "model/token_client.hpp"

namespace rehearse::variants {
namespace {

// ------------------------------------------------------------------ (a)

class SwallowingGroupJob final : public JobRunner {
 public:
  SwallowingGroupJob(std::unique_ptr<JobRunner> core, Clock& clock, Log& log,
                     DeliveryLedger& ledger)
      : core_(std::move(core)), clock_(clock), log_(log), ledger_(ledger) {}

  Task<RunOutcome> run(RunContext context) override {
    RunOutcome outcome = co_await core_->run(context);
    if (!outcome.failed()) co_return outcome;
    // The bug: the notices were "the delivery", so the run completed the
    // slot exactly as a successful delivery does -- guard, then marker --
    // and returned normally. The original failure is gone.
    const LogFields fields{{"job_id", context.job_id},
                           {"slot", format_instant(context.slot)},
                           {"attempt", context.attempt}};
    if (ledger_.consume_guard(context.job_id, context.slot, clock_.now()).ok()) {
      log_.info("guard_set", fields);
    }
    if (ledger_.mark_complete(context.job_id, context.slot, SlotVerdict::delivered, clock_.now())
            .ok()) {
      LogFields marked = fields;
      marked.push_back({"verdict", "delivered"});
      log_.info("slot_marked", marked);
    }
    co_return RunOutcome::success();
  }

 private:
  std::unique_ptr<JobRunner> core_;
  Clock& clock_;
  Log& log_;
  DeliveryLedger& ledger_;
};

// ------------------------------------------------------------------ (b)

// Rewrites a get_issue 404/410 into a 503: "the orchestrator is having a bad
// moment", which is exactly how the pre-fix job read a lost issue.
class NotFoundIsTransient final : public Services {
 public:
  explicit NotFoundIsTransient(Services& inner) : inner_(inner) {}

  Task<ServiceResult> call(ServiceRequest request) override {
    const bool issue_query = request.operation == "get_issue";
    ServiceResult result = co_await inner_.call(std::move(request));
    if (issue_query && result.has_response() &&
        (result.response().status == 404 || result.response().status == 410)) {
      co_return ServiceResult(
          ServiceResponse{503, nlohmann::json{{"message", "503 Service Unavailable"}}});
    }
    co_return result;
  }

 private:
  Services& inner_;
};

class Transient404ReconcileJob final : public JobRunner {
 public:
  Transient404ReconcileJob(Clock& clock, Services& services, Log& log, Disk& disk, Environment env,
                           ReconcileConfig config)
      : services_(services), job_(clock, services_, log, disk, std::move(env), std::move(config)) {}

  Task<RunOutcome> run(RunContext context) override {
    RunOutcome outcome = co_await job_.run(std::move(context));
    co_return outcome;
  }

 private:
  NotFoundIsTransient services_;  // declared before job_, which keeps a reference to it
  ReconcileJob job_;
};

// ------------------------------------------------------------------ (c)

class StickyTokenFetchJob final : public JobRunner {
 public:
  StickyTokenFetchJob(Clock& clock, Services& services, Log& log, std::string job_id, int requests)
      : clock_(clock),
        services_(services),
        log_(log),
        job_id_(std::move(job_id)),
        requests_(requests) {}

  Task<RunOutcome> run(RunContext context) override {
    for (int i = 0; i < requests_; ++i) {
      ServiceRequest request = make_request(context, i);
      if (!token_) {
        ServiceRequest issue;
        issue.service = "brokerage";
        issue.operation = "issue_token";
        issue.body = nlohmann::json{{"reason", "initial"}};
        issue.headers = request.headers;
        ServiceResult issued = co_await services_.call(std::move(issue));
        if (!issued.is_success()) co_return fail(context, i, issued);
        const nlohmann::json& body = issued.response().body;
        if (!body.is_object() || !body.contains("access_token") ||
            !body.at("access_token").is_string()) {
          co_return RunOutcome::failure(FailureClass::provider_5xx,
                                        "502 token response without access_token");
        }
        token_ = body.at("access_token").get<std::string>();
      }
      request.headers[kRequestHeaderAuthorization] = "Bearer " + *token_;
      ServiceResult result = co_await services_.call(request);
      if (!result.is_success() && result.has_response() && result.response().status == 401) {
        // The bug: "retry once" -- with the token the server just refused.
        // The cache is never dropped, so every later request fails the same
        // way until the process restarts.
        ServiceResult again = co_await services_.call(request);
        result = std::move(again);
      }
      if (!result.is_success()) co_return fail(context, i, result);
    }
    co_return RunOutcome::success();
  }

 private:
  ServiceRequest make_request(const RunContext& context, int index) const {
    ServiceRequest request;
    request.service = "brokerage";
    request.operation = "quote";
    request.target = fmt::format("{}-{}", job_id_, index + 1);
    request.headers[kRequestHeaderJob] = context.job_id;
    request.headers[kRequestHeaderSlot] = format_instant(context.slot);
    request.headers[kRequestHeaderAttempt] = std::to_string(context.attempt);
    request.headers[kRequestHeaderId] =
        fmt::format("{}/{}/a{}/r{}", context.job_id, format_instant(context.slot), context.attempt,
                    index);
    return request;
  }

  RunOutcome fail(const RunContext& context, int index, const ServiceResult& result) {
    const FailureInfo info = to_failure_info(result);
    const FailureClass failure_class = classify(info);
    log_.warning(
        "fetch_request_failed",
        LogFields{{"job_id", context.job_id},
                  {"slot", format_instant(context.slot)},
                  {"attempt", context.attempt},
                  {"request_id", fmt::format("{}/{}/a{}/r{}", context.job_id,
                                             format_instant(context.slot), context.attempt, index)},
                  {"failure_class", to_string(failure_class)},
                  {"message", info.message}});
    return RunOutcome::failure(failure_class, info.message);
  }

  Clock& clock_;
  Services& services_;
  Log& log_;
  std::string job_id_;
  int requests_ = 1;
  std::optional<std::string> token_;  // process memory: gone only with the process
};

// What the scheduler sees of the store, with the bug's bend.
class BuggyStore final : public JobStateStore {
 public:
  BuggyStore(JobStateStore& inner, StoreBug bug) : inner_(&inner), bug_(bug) {}
  BuggyStore(std::unique_ptr<StateStore> fresh, StoreBug bug)
      : inner_(fresh.get()), fresh_(std::move(fresh)), bug_(bug) {}

  Result<JobState> read(const std::string& job_id) override { return inner_->read(job_id); }
  Result<std::map<std::string, JobState>> read_all() override {
    auto all = inner_->read_all();
    if (!all.ok() || bug_ != StoreBug::reset_counters_at_boot || booted_) return all;
    booted_ = true;  // the scheduler reads everything once, at its boot
    for (auto& [id, state] : all.value()) {
      state.retry_count = 0;
      for (auto& [slot, record] : state.slots) record.retry_count = 0;
    }
    return all;
  }
  Status update(const std::string& job_id, const std::function<void(JobState&)>& mutate) override {
    return inner_->update(job_id, [&](JobState& state) {
      const int before = state.retry_count;
      mutate(state);
      bend(state, before);
    });
  }
  StoreHealth health() const override { return inner_->health(); }
  const std::string& dir() const noexcept override { return inner_->dir(); }
  std::string journal_path() const override { return inner_->journal_path(); }

 private:
  void bend(JobState& state, int count_before) const {
    if (bug_ == StoreBug::retry_moves_next_run_at && state.next_retry_at) {
      state.next_run_at = state.next_retry_at;
    } else if (bug_ == StoreBug::success_keeps_counter && state.retry_status == RetryStatus::ok &&
               state.retry_count == 0) {
      state.retry_count = count_before;
    }
  }

  JobStateStore* inner_;
  std::unique_ptr<StateStore> fresh_;  // reset_when_corrupt: the store it started over
  StoreBug bug_;
  bool booted_ = false;
};

// (b): the corrupt files are removed under the store's lock and a new,
// empty store is opened over the directory.
std::unique_ptr<JobStateStore> start_over(StateStore& store, Disk& disk) {
  {
    auto lock = disk.lock_exclusive(store.lock_path());
    if (!lock.ok()) return nullptr;
    (void)disk.remove_file(store.journal_path());
    (void)disk.remove_file(store.snapshot_path());
  }  // the lock is released before the new store takes it
  auto fresh = StateStore::open(disk, store.dir());
  if (!fresh.ok()) return nullptr;
  return std::make_unique<BuggyStore>(std::make_unique<StateStore>(std::move(fresh).value()),
                                      StoreBug::reset_when_corrupt);
}

}  // namespace

std::unique_ptr<JobStateStore> make_buggy_store(StateStore& store, Disk& disk, StoreBug bug) {
  if (bug == StoreBug::reset_when_corrupt && !store.health().ok()) {
    if (auto fresh = start_over(store, disk)) return fresh;
  }
  return std::make_unique<BuggyStore>(store, bug);
}

std::unique_ptr<JobRunner> make_swallowing_group_job(std::unique_ptr<JobRunner> core, Clock& clock,
                                                     Log& log, DeliveryLedger& ledger) {
  return std::make_unique<SwallowingGroupJob>(std::move(core), clock, log, ledger);
}

std::unique_ptr<JobRunner> make_transient_404_reconcile_job(Clock& clock, Services& services,
                                                            Log& log, Disk& disk, Environment env,
                                                            ReconcileConfig config) {
  return std::make_unique<Transient404ReconcileJob>(clock, services, log, disk, std::move(env),
                                                    std::move(config));
}

std::unique_ptr<JobRunner> make_sticky_token_fetch_job(Clock& clock, Services& services, Log& log,
                                                       std::string job_id, int requests) {
  return std::make_unique<StickyTokenFetchJob>(clock, services, log, std::move(job_id), requests);
}

}  // namespace rehearse::variants
