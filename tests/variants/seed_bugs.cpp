// Test-only faulty variants (see seed_bugs.hpp for what each one replays and
// why it is built the way it is). Never linked into model/ or the CLI.
#include "tests/variants/seed_bugs.hpp"

#include <utility>

#include <fmt/format.h>

#include "model/failure.hpp"
#include "model/delivery_ledger.hpp"
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
  Transient404ReconcileJob(Clock& clock, Services& services, Log& log, Disk& disk,
                           Environment env, ReconcileConfig config)
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
  StickyTokenFetchJob(Clock& clock, Services& services, Log& log, std::string job_id,
                      int requests)
      : clock_(clock), services_(services), log_(log), job_id_(std::move(job_id)),
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
        fmt::format("{}/{}/a{}/r{}", context.job_id, format_instant(context.slot),
                    context.attempt, index);
    return request;
  }

  RunOutcome fail(const RunContext& context, int index, const ServiceResult& result) {
    const FailureInfo info = to_failure_info(result);
    const FailureClass failure_class = classify(info);
    log_.warning("fetch_request_failed",
                 LogFields{{"job_id", context.job_id},
                           {"slot", format_instant(context.slot)},
                           {"attempt", context.attempt},
                           {"request_id", fmt::format("{}/{}/a{}/r{}", context.job_id,
                                                      format_instant(context.slot),
                                                      context.attempt, index)},
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

}  // namespace

std::unique_ptr<JobRunner> make_swallowing_group_job(std::unique_ptr<JobRunner> core,
                                                     Clock& clock, Log& log,
                                                     DeliveryLedger& ledger) {
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
