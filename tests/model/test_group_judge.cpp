// Goal: the group job's delivery rule: judge_group names the run by the
// first retryable failure, else the most specific one, and lets deliverables,
// not counts, decide; in random worlds the delivery rules hold after every
// attempt (a guard or marker never set by a failed run, nothing redone once
// resumed, each target delivered at most once).
// Method: judge_group on hand-made and generated task outcomes, checked
// against the rule as written (not a second implementation of it); the real
// GroupJob on the simulated world (group_job_fixtures.hpp) under RapidCheck-
// generated task outputs, fault windows and outages.
#include "model/group_job.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/delivery_ledger.hpp"
#include "tests/model/group_job_fixtures.hpp"
#include "tests/support/property.hpp"

namespace rehearse::group_test {
namespace {

// ---------------------------------------------------------------------------
// The judgement, unit and property.

TaskOutcome failed(std::string task, FailureClass c, std::string error) {
  TaskOutcome o;
  o.task = std::move(task);
  o.kind = TaskOutcomeKind::failed;
  o.failure_class = c;
  o.error = std::move(error);
  return o;
}
TaskOutcome produced(std::string task, TaskOutcomeKind kind) {
  TaskOutcome o;
  o.task = std::move(task);
  o.kind = kind;
  return o;
}

TEST(JudgeGroup, FirstRetryableFailureNamesTheRun) {
  const auto j = judge_group({failed("a", FailureClass::auth, "403"),
                              failed("b", FailureClass::rate_limit, "quota"),
                              failed("c", FailureClass::timeout, "slow")},
                             default_retryable_classes());
  EXPECT_EQ(j.verdict, GroupVerdict::failed);
  EXPECT_EQ(j.failure_class, FailureClass::rate_limit);
  EXPECT_EQ(j.error, "quota");
  EXPECT_EQ(j.failed_task, "b");
}

TEST(JudgeGroup, WithoutRetryableFailureTheMostSpecificNamesTheRun) {
  const auto j = judge_group(
      {failed("a", FailureClass::unknown, "?"), failed("b", FailureClass::not_found, "gone"),
       failed("c", FailureClass::auth, "denied"), failed("d", FailureClass::auth, "denied again")},
      default_retryable_classes());
  EXPECT_EQ(j.failure_class, FailureClass::auth);
  EXPECT_EQ(j.failed_task, "c");  // ties: the earlier task
  // A policy that narrows its classes makes rate_limit permanent here.
  FailureClassSet only_timeout;
  insert(only_timeout, FailureClass::timeout);
  const auto k = judge_group({failed("a", FailureClass::rate_limit, "quota"),
                              failed("b", FailureClass::provider_5xx, "503")},
                             only_timeout);
  EXPECT_EQ(k.failure_class, FailureClass::rate_limit);
}

TEST(JudgeGroup, DeliverablesNotCountsDecide) {
  const auto skip_fail = judge_group({produced("a", TaskOutcomeKind::skip),
                                      failed("b", FailureClass::rate_limit, "q")},
                                     default_retryable_classes());
  EXPECT_EQ(skip_fail.verdict, GroupVerdict::failed);
  const auto preview_fail = judge_group({failed("a", FailureClass::rate_limit, "q"),
                                         produced("b", TaskOutcomeKind::preview)},
                                        default_retryable_classes());
  EXPECT_EQ(preview_fail.verdict, GroupVerdict::deliver);
  const auto skips =
      judge_group({produced("a", TaskOutcomeKind::skip), produced("b", TaskOutcomeKind::skip)},
                  default_retryable_classes());
  EXPECT_EQ(skips.verdict, GroupVerdict::skipped);
  EXPECT_EQ(judge_group({}, default_retryable_classes()).verdict, GroupVerdict::skipped);
}

TEST(JudgeGroup, SpecificityFollowsTheClassifiersOrder) {
  const std::vector<FailureClass> order = {FailureClass::auth,       FailureClass::validation,
                                           FailureClass::not_found,  FailureClass::config,
                                           FailureClass::rate_limit, FailureClass::provider_5xx,
                                           FailureClass::timeout,    FailureClass::network,
                                           FailureClass::unknown};
  ASSERT_EQ(order.size(), all_failure_classes().size());
  for (std::size_t i = 1; i < order.size(); ++i) {
    EXPECT_LT(failure_specificity(order[i - 1]), failure_specificity(order[i]));
  }
}

TEST(JudgeGroup, NoticeTextKeepsTheErrorVerbatim) {
  EXPECT_EQ(failure_notice_text("weekly-summary", "HTTP 429: quota"),
            "\xE2\x9A\xA0\xEF\xB8\x8F weekly-summary auto-generation failed: HTTP 429: quota");
}

rc::Gen<TaskOutcome> gen_outcome(int index) {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange(0, 4),
                                    rc::gen::inRange<int>(0, static_cast<int>(kFailureClassCount))),
                      [index](const std::pair<int, int>& p) {
                        TaskOutcome o;
                        o.task = fmt::format("t{}", index);
                        o.kind = static_cast<TaskOutcomeKind>(p.first);
                        if (o.kind == TaskOutcomeKind::failed) {
                          o.failure_class =
                              all_failure_classes()[static_cast<std::size_t>(p.second)];
                          o.error = fmt::format("error of t{}", index);
                        }
                        return o;
                      });
}

REHEARSE_PROP(JudgeGroupProp, VerdictAndNamingFollowTheRule, ()) {
  const int n = *rc::gen::inRange(0, 8);
  std::vector<TaskOutcome> outcomes;
  for (int i = 0; i < n; ++i) outcomes.push_back(*gen_outcome(i));
  const auto bits = *rc::gen::inRange<unsigned>(0, 1u << kFailureClassCount);
  const FailureClassSet retryable(bits);

  const auto j = judge_group(outcomes, retryable);
  bool any_deliverable = false;
  bool any_failure = false;
  for (const auto& o : outcomes) {
    any_deliverable |= o.deliverable();
    any_failure |= o.kind == TaskOutcomeKind::failed;
  }
  if (any_deliverable) {
    RC_ASSERT(j.verdict == GroupVerdict::deliver);
  } else if (any_failure) {
    RC_ASSERT(j.verdict == GroupVerdict::failed);
  } else {
    RC_ASSERT(j.verdict == GroupVerdict::skipped);
  }
  if (j.verdict != GroupVerdict::failed) return;
  // The named task is a failed task, and its class and error are its own.
  std::size_t named = outcomes.size();
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].task == j.failed_task) named = i;
  }
  RC_ASSERT(named < outcomes.size());
  RC_ASSERT(outcomes[named].kind == TaskOutcomeKind::failed);
  RC_ASSERT(outcomes[named].failure_class == j.failure_class);
  RC_ASSERT(outcomes[named].error == j.error);
  bool any_retryable = false;
  for (const auto& o : outcomes) {
    any_retryable |= o.kind == TaskOutcomeKind::failed && contains(retryable, o.failure_class);
  }
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const auto& o = outcomes[i];
    if (o.kind != TaskOutcomeKind::failed || i == named) continue;
    if (any_retryable) {
      RC_ASSERT(contains(retryable, j.failure_class));
      if (i < named) RC_ASSERT(!contains(retryable, o.failure_class));
    } else {
      const int mine = failure_specificity(j.failure_class);
      const int theirs = failure_specificity(o.failure_class);
      const bool ordered = i < named ? mine < theirs : mine <= theirs;
      RC_ASSERT(ordered);
    }
  }
}

// ---------------------------------------------------------------------------
// Random worlds: the delivery rules hold after every attempt.

REHEARSE_PROP(GroupJobProp, DeliveryRulesHoldInRandomWorlds, ()) {
  const auto seed = *rc::gen::arbitrary<std::uint64_t>();
  World w(seed);
  const int task_count = *rc::gen::inRange(1, 5);
  GroupJobConfig c;
  c.job_id = "weekly";
  c.targets = kTargets;
  for (int i = 0; i < task_count; ++i) {
    const std::string id = fmt::format("task-{}", i);
    const int calls = *rc::gen::inRange(0, 3);
    c.tasks.push_back({id, calls});
    const int script = *rc::gen::inRange(0, 4);  // 3: no script (404)
    if (script < 3) w.model.set_output(id, static_cast<ModelOutput>(script));
  }
  const int faults = *rc::gen::inRange(0, 4);
  for (int i = 0; i < faults; ++i) {
    const TimeMs from = kSlot + *rc::gen::inRange<TimeMs>(0, 3 * kHourMs);
    const TimeMs until = from + *rc::gen::inRange<TimeMs>(1, 2 * kHourMs);
    const double rate = *rc::gen::element(0.3, 1.0);
    switch (*rc::gen::inRange(0, 4)) {
      case 0: w.model.add_quota_outage(from, until); break;
      case 1:
        w.model.add_http_errors(from, until, *rc::gen::element(500, 503, 429, 404), rate);
        break;
      case 2: w.model.add_timeouts(from, until, rate); break;
      default: w.model.add_network_errors(from, until, rate); break;
    }
  }
  const int outages = *rc::gen::inRange(0, 3);
  for (int i = 0; i < outages; ++i) {
    const TimeMs from = kSlot + *rc::gen::inRange<TimeMs>(0, 3 * kHourMs);
    const TimeMs until = from + *rc::gen::inRange<TimeMs>(1, 2 * kHourMs);
    if (*rc::gen::arbitrary<bool>()) {
      w.messenger.add_outage(from, until);
    } else {
      w.messenger.add_outage(from, until, {*rc::gen::elementOf(kTargets)});
    }
  }
  GroupJob job = w.make_job(c);

  std::optional<RunOutcome> final_outcome;
  for (int attempt = 1; attempt <= 8 && !final_outcome; ++attempt) {
    const DeliverySlot before = w.record();
    const auto calls_before = w.model.total_calls();
    const RunOutcome out = w.run_at(job, kSlot + (attempt - 1) * 40 * kMinuteMs, attempt);
    const DeliverySlot after = w.record();
    RC_ASSERT(out.kind != RunOutcomeKind::already_complete);
    if (before.outbox) RC_ASSERT(w.model.total_calls() == calls_before);  // resumed, not redone
    if (out.failed()) {
      // Guard and marker are never set by a failed run.
      RC_ASSERT(!after.guard_consumed());
      RC_ASSERT(!after.complete());
      RC_ASSERT(!out.error.empty());
    } else {
      final_outcome = out;
      RC_ASSERT(after.guard_consumed());
      RC_ASSERT(after.complete());
    }
  }
  // Without crashes there is never a duplicate delivery.
  RC_ASSERT(w.messenger.duplicate_deliveries().empty());
  const DeliverySlot rec = w.record();
  for (const auto& target : kTargets) {
    const auto n = w.messenger.delivery_count("weekly", kSlot, target);
    RC_ASSERT(n == (rec.has_delivered_to(target) ? 1 : 0));
  }
  if (final_outcome) {
    RC_TAG(to_string(final_outcome->kind));
    const bool delivered = final_outcome->kind == RunOutcomeKind::success;
    RC_ASSERT(rec.verdict == (delivered ? SlotVerdict::delivered : SlotVerdict::skipped));
    for (const auto& target : kTargets) {
      RC_ASSERT(w.messenger.delivery_count("weekly", kSlot, target) == (delivered ? 1 : 0));
    }
    // And the slot is never re-entered.
    const auto calls = w.model.total_calls();
    const RunOutcome again = w.run_at(job, w.sim.now() + kMinuteMs, 99);
    RC_ASSERT(again.kind == RunOutcomeKind::already_complete);
    RC_ASSERT(w.model.total_calls() == calls);
  } else {
    RC_TAG("still failing");
    RC_ASSERT(!rec.complete());
  }
}

}  // namespace
}  // namespace rehearse::group_test
