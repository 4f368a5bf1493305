#include "sim/check/policy_draws.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "model/assert.hpp"
#include "model/failure.hpp"
#include "model/time.hpp"
#include "sim/check/draw.hpp"

namespace rehearse::sim {

namespace {

using nlohmann::json;

std::int64_t seconds(Rng& rng, std::int64_t lo, std::int64_t hi) {
  REHEARSE_ASSERT_GE(lo, 0);  // a delay is never negative (draw_omission makes those)
  return rng.next_in(lo, hi);
}

json temporal(Rng& rng) {
  const std::int64_t initial_s = seconds(rng, 1, 600);
  json p{{"initialInterval", fmt::format("{}s", initial_s)},
         {"backoffCoefficient", pick(rng, std::vector<double>{1.0, 1.5, 2.0, 3.0})},
         {"maximumAttempts", rng.next_in(2, 5)}};
  if (rng.next_bool(0.5)) {
    p["maximumInterval"] = initial_s * 1000 * pick(rng, std::vector<std::int64_t>{2, 4, 8});
  }
  return {{"temporal", p}};
}

json stepfunctions(Rng& rng) {
  const std::int64_t interval_s = seconds(rng, 1, 300);
  json r{{"ErrorEquals", {"States.ALL"}},
         {"IntervalSeconds", interval_s},
         {"MaxAttempts", rng.next_in(1, 4)},
         {"BackoffRate", pick(rng, std::vector<double>{1.0, 1.5, 2.0})}};
  if (rng.next_bool(0.5)) {
    r["MaxDelaySeconds"] = interval_s * pick(rng, std::vector<std::int64_t>{2, 3, 5});
  }
  if (rng.next_bool(0.5)) r["JitterStrategy"] = rng.next_bool(0.5) ? "FULL" : "NONE";
  return {{"stepfunctions", rng.next_bool(0.5) ? json::array({r}) : r}};
}

json sidekiq(Rng& rng) {
  json p = json::object();
  switch (rng.next_below(6)) {
    case 0: p["retry"] = true; break;  // 25 retries, the last days apart
    case 1: break;                     // the default: 25
    default: p["retry"] = rng.next_in(1, 6);
  }
  if (rng.next_bool(0.5)) p["queue"] = "default";  // read past: it bears on no retry
  return {{"sidekiq", p}};
}

json celery(Rng& rng) {
  json p{{"max_retries", rng.next_in(1, 4)}};
  switch (rng.next_below(3)) {
    case 0: p["retry_backoff"] = true; break;
    case 1: p["retry_backoff"] = seconds(rng, 1, 300); break;
    default:
      if (rng.next_bool(0.5)) p["default_retry_delay"] = seconds(rng, 0, 600);
      return {{"celery", p}};
  }
  if (rng.next_bool(0.5)) p["retry_backoff_max"] = seconds(rng, 60, 1800);
  if (rng.next_bool(0.5)) p["retry_jitter"] = rng.next_bool(0.5);
  return {{"celery", p}};
}

json k8s(Rng& rng) {
  json spec = json::object();
  if (rng.next_bool(0.75)) spec["backoffLimit"] = rng.next_in(1, 6);
  if (rng.next_bool(0.5)) return {{"k8s", spec}};
  return {{"k8s",
           {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", {{"name", "drawn"}}},
            {"spec", spec}}}};
}

json bullmq(Rng& rng) {
  json b{{"type", rng.next_bool(0.5) ? "exponential" : "fixed"},
         {"delay", seconds(rng, 1, 600) * 1000}};
  if (rng.next_bool(0.5)) b["jitter"] = static_cast<double>(rng.next_in(1, 10)) / 10.0;
  json p{{"attempts", rng.next_in(2, 5)}, {"backoff", b}};
  if (rng.next_bool(0.5)) p["removeOnFail"] = true;
  return {{"bullmq", p}};
}

// The core's own forms with a cap on each delay (max_delay).
json capped(Rng& rng) {
  const std::int64_t delay_s = seconds(rng, 1, 600);
  // The stream's order: the type, then the cap's factor.
  const char* type = rng.next_bool(0.5) ? "exponential" : "linear";
  const std::int64_t cap_s = delay_s * rng.next_in(1, 4);
  REHEARSE_ASSERT_GE(cap_s, delay_s);  // a cap below the first delay would cap every delay
  json b{{"type", type},
         {"delay", fmt::format("{}s", delay_s)},
         {"max_delay", fmt::format("{}s", cap_s)}};
  if (rng.next_bool(0.5)) return {{"max", rng.next_in(1, 4)}, {"backoff", b}};
  return {{"attempts", rng.next_in(2, 5)}, {"backoff", b}};
}

// ------------------------------------------------ deadlines without a count

json temporal_deadline(Rng& rng) {
  // The TypeScript SDK's activity options, with the `ms` package's words.
  const std::int64_t initial_s = seconds(rng, 1, 120);
  json retry{{"initialInterval", fmt::format("{} second{}", initial_s, initial_s == 1 ? "" : "s")},
             {"backoffCoefficient", pick(rng, std::vector<double>{1.5, 2.0})}};
  if (rng.next_bool(0.5)) retry["maximumAttempts"] = 0;  // absent is 0 too
  return {{"temporal",
           {{"scheduleToCloseTimeout", fmt::format("{}m", rng.next_in(5, 120))},
            {"startToCloseTimeout", "1m"},
            {"retry", retry}}}};
}

json celery_deadline(Rng& rng) {
  json p{{"max_retries", nullptr}, {"expires", rng.next_in(300, 7200)}};
  if (rng.next_bool(0.5)) {
    p["retry_backoff"] = true;
    p["retry_backoff_max"] = seconds(rng, 60, 600);
  } else {
    p["default_retry_delay"] = seconds(rng, 30, 600);
  }
  return {{"celery", p}};
}

json k8s_deadline(Rng& rng) {
  json spec{{"backoffLimit", rng.next_in(2, 8)}, {"activeDeadlineSeconds", rng.next_in(30, 900)}};
  return {{"k8s", {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"spec", spec}}}};
}

json until(Rng& rng) {
  json b{{"type", rng.next_bool(0.5) ? "exponential" : "fixed"},
         {"delay", fmt::format("{}s", seconds(rng, 10, 600))}};
  json p{{"until", fmt::format("{}m", rng.next_in(10, 240))}, {"backoff", b}};
  if (rng.next_bool(0.3)) p["max"] = rng.next_in(1, 6);  // both: whichever ends first
  return p;
}

// ------------------------------------------------ several retriers, blocks, text

json retriers(Rng& rng) {
  static const std::vector<std::string> kNames{
      "States.Timeout",    "Lambda.TooManyRequestsException", "Lambda.ServiceException",
      "States.TaskFailed", "MyApp.PaymentDeclined",           "Lambda.SdkClientException"};
  json array = json::array();
  const std::int64_t count = rng.next_in(2, 3);
  for (std::int64_t i = 0; i < count; ++i) {
    array.push_back({{"ErrorEquals", {pick(rng, kNames)}},
                     {"IntervalSeconds", seconds(rng, 1, 120)},
                     {"MaxAttempts", rng.next_in(0, 3)},
                     {"BackoffRate", pick(rng, std::vector<double>{1.0, 2.0})}});
  }
  if (rng.next_bool(0.5)) {
    array.push_back({{"ErrorEquals", {"States.ALL"}}, {"MaxAttempts", rng.next_in(1, 2)}});
  }
  return {{"stepfunctions", {{"Type", "Task"}, {"Retry", array}, {"End", true}}}};
}

json sidekiq_block(Rng& rng) {
  static const std::vector<std::string> kBlocks{"10 * (count + 1)",    "(count ** 2) + 30",
                                                "(count + 1).minutes", "30",
                                                "60 - count * 40",     "count * 17 % 50"};
  return {{"sidekiq", {{"retry", rng.next_in(1, 5)}, {"retry_in", pick(rng, kBlocks)}}}};
}

// Settings as their users keep them: the scenario loader reads the text.
json native_text(Rng& rng) {
  switch (rng.next_below(4)) {
    case 0:
      return {{"celery", fmt::format("@app.task(bind=True, autoretry_for=(ConnectionError, "
                                     "TimeoutError), retry_kwargs={{'max_retries': {}}}, "
                                     "retry_backoff={})",
                                     rng.next_in(1, 4), seconds(rng, 1, 60))}};
    case 1:
      return {{"k8s", fmt::format("apiVersion: batch/v1\nkind: Job\nspec:\n  backoffLimit: {}\n"
                                  "  template:\n    spec:\n      restartPolicy: Never\n",
                                  rng.next_in(1, 5))}};
    case 2:
      return {{"temporal", fmt::format("RetryPolicy(initial_interval=timedelta(seconds={}), "
                                       "maximum_attempts={})",
                                       seconds(rng, 1, 300), rng.next_in(2, 5))}};
    default:
      return {{"sidekiq", fmt::format("class Drawn\n  include Sidekiq::Job\n  sidekiq_options "
                                      "retry: {}, queue: 'default'\nend\n",
                                      rng.next_in(1, 4))}};
  }
}

struct FormDraw {
  const char* name;
  json (*draw)(Rng&);
};

const std::vector<FormDraw>& form_table() {
  static const std::vector<FormDraw> kForms{
      {"temporal", &temporal},
      {"stepfunctions", &stepfunctions},
      {"sidekiq", &sidekiq},
      {"celery", &celery},
      {"k8s", &k8s},
      {"bullmq", &bullmq},
      {"capped", &capped},
      {"temporal_deadline", &temporal_deadline},
      {"celery_deadline", &celery_deadline},
      {"k8s_deadline", &k8s_deadline},
      {"until", &until},
      {"retriers", &retriers},
      {"sidekiq_block", &sidekiq_block},
      {"native_text", &native_text},
  };
  return kForms;
}

// Narrowed classes a quarter of the time, a budget scope a quarter of the time.
void draw_siblings(Rng& rng, json& policy) {
  REHEARSE_ASSERT(policy.is_object());  // every form draws an object
  if (rng.next_bool(0.25)) {
    std::vector<std::string> classes;
    for (std::size_t i = 0; i < kFailureClassCount; ++i) {
      classes.emplace_back(to_string(static_cast<FailureClass>(i)));
    }
    policy["retryable_classes"] = pick_subset(rng, classes);
  }
  if (rng.next_bool(0.25)) policy["budget"] = rng.next_bool(0.5) ? "per_slot" : "per_episode";
}

// One policy in four, whatever its form (three in four of a call job's),
// honours Retry-After, and one in
// four names the world's retry budget (from a stream of their own, so the
// forms' draws stay what they were).
void honour_retry_after(json& jobs, std::uint64_t seed) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].is_object() || !jobs[i].contains("retry_policy")) continue;
    json& policy = jobs[i]["retry_policy"];
    if (!policy.is_object()) continue;
    Rng rng = Rng(seed).derive(kRetryAfterStream).derive(static_cast<std::uint64_t>(i));
    // Call jobs are the ones a service's Retry-After reaches.
    const bool call = jobs[i].value("kind", "") == "call";
    if (rng.next_bool(call ? 0.75 : 0.25)) policy["retry_after"] = "honor";
    // A budget shared by the world's jobs that draw one, small enough to bind.
    if (rng.next_bool(0.25)) {
      policy["retry_budget"] = {{"name", "world-budget"},
                                {"percent", rng.next_in(0, 50)},
                                {"window", format_duration(rng.next_in(1, 30) * kMinuteMs)},
                                {"min_retries", rng.next_in(0, 3)}};
    }
  }
}

// The core's BullMQ form on an exponential curve: two in five draw
// decorrelated jitter (half of those under a cap), one in five a named shape;
// from a stream of their own, so the forms' draws stay what they were.
void draw_jitter_shapes(json& jobs, std::uint64_t seed) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].is_object() || !jobs[i].contains("retry_policy")) continue;
    json& policy = jobs[i]["retry_policy"];
    if (!policy.is_object() || !policy.contains("attempts")) continue;
    json& backoff = policy["backoff"];
    if (!backoff.is_object() || backoff.value("type", "") != "exponential") continue;
    Rng rng = Rng(seed).derive(kJitterShapeStream).derive(static_cast<std::uint64_t>(i));
    const std::uint64_t shape = rng.next_below(5);
    if (shape < 2) {
      backoff["jitter"] = "decorrelated";
      const json& delay = backoff["delay"];
      if (rng.next_bool(0.5) && delay.is_number_integer()) {
        backoff["max_delay"] = delay.get<std::int64_t>() * rng.next_in(2, 6);
      }
    } else if (shape == 2) {
      backoff["jitter"] = rng.next_bool(0.5) ? "equal" : "full";
    }
  }
}

}  // namespace

const std::vector<const char*>& drawn_policy_forms() {
  static const std::vector<const char*> kNames = [] {
    std::vector<const char*> names;
    for (const FormDraw& f : form_table()) names.push_back(f.name);
    return names;
  }();
  return kNames;
}

json draw_policy_in_form(const char* form, Rng& rng) {
  for (const FormDraw& f : form_table()) {
    if (std::string(f.name) != form) continue;
    json policy = f.draw(rng);
    REHEARSE_ASSERT(policy.is_object() && !policy.empty());  // a policy, in its system's keys
    return policy;
  }
  return json();
}

// A policy as people get it wrong (docs/semantics.md §2): the job must run on
// schedule, never be retried, and say so (policy_invalid).
json draw_omission(Rng& rng) {
  static const std::vector<std::string> kOmissions{
      R"({"max": 2})",                     // no backoff
      R"({"max": 0})",                     // never retried, no reason
      R"({"max": 2, "backoff_sec": -5})",  // negative delay
      R"({"attempts": 3, "backoff": {"type": "quadratic", "delay": 1000}})",  // unknown type
      R"({"max": 2, "backoff_sec": 60, "retryable_classes": ["timeouts"]})",  // unknown class
  };
  json policy = json::parse(pick(rng, kOmissions));
  REHEARSE_ASSERT(policy.is_object());  // it replaces a job's retry_policy
  return policy;
}

void vary_policy_forms(json& jobs, std::uint64_t seed) {
  if (!jobs.is_array()) return;
  const std::size_t jobs_before = jobs.size();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto index = static_cast<std::uint64_t>(i);
    Rng omission = Rng(seed).derive(kPolicyOmissionStream).derive(index);
    if (omission.next_bool(1.0 / 25.0)) {
      jobs[i]["retry_policy"] = draw_omission(omission);
      continue;
    }
    Rng rng = Rng(seed).derive(kPolicyFormsStream).derive(index);
    if (rng.next_bool(0.5)) continue;
    json policy = pick(rng, form_table()).draw(rng);
    draw_siblings(rng, policy);
    jobs[i]["retry_policy"] = std::move(policy);
  }
  honour_retry_after(jobs, seed);
  draw_jitter_shapes(jobs, seed);
  REHEARSE_ASSERT_EQ(jobs.size(), jobs_before);  // policies vary, jobs do not
}

}  // namespace rehearse::sim
