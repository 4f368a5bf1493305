// rehearse policy explain POLICY [--from SYSTEM] [--schedule EXPR] [--json]
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model/assert.hpp"
#include "model/cron.hpp"
#include "model/js_literal.hpp"
#include "model/policy_forms.hpp"
#include "model/policy_text.hpp"
#include "model/retry_policy.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/cron_explain.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/json_input.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kPolicyHelp =
    "usage: rehearse policy explain POLICY [--from SYSTEM] [--schedule EXPR] [--json]\n"
    "\n"
    "Prints the retry plan a policy gives after one failure: how many retries, the\n"
    "delay before each, the cumulative offset from the failure, and the recovery\n"
    "window (delays without jitter; jitter's range is noted).\n"
    "\n"
    "POLICY is inline JSON or @FILE.json, in any accepted form:\n"
    "  per-job  '{\"max\": 2, \"backoff_sec\": 300, \"retryable_classes\": [\"timeout\"], "
    "\"reason\": \"...\"}'\n"
    "  BullMQ   '{\"attempts\": 4, \"backoff\": {\"type\": \"exponential\", \"delay\": 1800000}}'\n"
    "  auto     '\"auto\"' (or auto) with --schedule EXPR, the job's effective schedule\n"
    "  system   '{\"temporal\": {...}}' (bullmq, temporal, stepfunctions, sidekiq, celery, k8s)\n"
    "\n"
    "With --from SYSTEM, POLICY is that system's own settings as its users keep\n"
    "them, inline or @FILE: JSON or a JavaScript object literal for every system\n"
    "({attempts: 4, backoff: {type: 'exponential', delay: 1_800_000}}), a Job or\n"
    "CronJob manifest in YAML (k8s), the task decorator as Python writes it\n"
    "(celery: @app.task(autoretry_for=(RequestException,), retry_backoff=True)),\n"
    "RetryPolicy(...) or the activity options (temporal: TypeScript or Python),\n"
    "sidekiq_options retry: 5 (sidekiq, Ruby). It is converted with the system's\n"
    "meaning of attempts, its delay formula and its deadline (Temporal's\n"
    "scheduleToCloseTimeout, Celery's expires, a Job's activeDeadlineSeconds);\n"
    "keys that do not bear on retries (BullMQ's removeOnFail) are listed as ignored.\n"
    "With --schedule, the plan is set against the schedule's shortest gap between\n"
    "slots: how long the recovery window leaves before the next regular slot.\n"
    "See docs/retry.md and docs/policies.md.\n";

const std::vector<OptionSpec> kExplainOptions{
    {"--from", true, "SYSTEM",
     "read POLICY as that system writes it: bullmq, temporal, stepfunctions, sidekiq, celery, k8s"},
    {"--schedule", true, "EXPR",
     "the job's effective cron schedule (required for \"auto\"; shows the gap to the next slot)"},
    {"--state", true, "NAME",
     "with --from stepfunctions: the state of a state machine whose retries to explain"},
    {"--json", false, "", "print one JSON document"},
};

// What the command explains: the policy, and when it came from a system, the conversion.
struct Explained {
  RetryPolicy policy;
  std::optional<SystemPolicy> converted;
};

Error located(const Error& e, const std::string& origin) {
  REHEARSE_ASSERT(!origin.empty());  // a file, or "POLICY" for an inline argument
  return make_error(e.code, e.message, origin + (e.where.empty() ? "" : ":" + e.where));
}

Result<Explained> read_from_system(const std::string& system, const std::string& arg,
                                   const std::optional<std::string>& state) {
  if (find_policy_system(system) == nullptr) {
    return make_error(ErrorCode::invalid_argument, fmt::format("--from \"{}\": expected one of {}",
                                                               system, policy_system_names()));
  }
  auto input = read_argument_text(arg);
  if (!input) return std::move(input).error();
  auto value = read_native_policy(system, input->text);
  if (!value) {
    const Error& e = value.error();
    return make_error(e.code, fmt::format("invalid {} policy: {}", system, e.message),
                      input->origin + ":" + e.where);
  }
  if (state) {
    if (system != "stepfunctions") {
      return make_error(ErrorCode::invalid_argument,
                        "--state chooses a state of a Step Functions state machine: use it with "
                        "--from stepfunctions");
    }
    auto chosen = select_stepfunctions_state(*value, *state);
    if (!chosen) return located(chosen.error(), input->origin);
    value = std::move(chosen);
  }
  auto converted = convert_system_policy(system, *value);
  if (!converted) return located(converted.error(), input->origin);
  REHEARSE_ASSERT(converted->system != nullptr);  // print_text names the system
  return Explained{converted->policy, *converted};
}

Result<Explained> read_policy(const std::string& arg, const std::optional<ScheduleFacts>& facts) {
  auto input = read_json_argument(arg, /*bare_words=*/{"auto"});
  if (!input) return std::move(input).error();
  auto texts = read_policy_texts(input->value);
  if (!texts) return located(texts.error(), input->origin);
  input->value = std::move(*texts);
  auto policy = parse_retry_policy(input->value, facts);
  if (!policy) return located(policy.error(), input->origin);
  Explained out{*policy, std::nullopt};
  // A wrapped system form ({"temporal": {...}}) gets the same notes as --from.
  if (input->value.is_object()) {
    for (const auto& [key, v] : input->value.items()) {
      if (find_policy_system(key) == nullptr) continue;
      if (auto c = convert_system_policy(key, v)) {
        REHEARSE_ASSERT(c->system != nullptr);
        out.converted = *c;
        out.converted->policy = *policy;
      }
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += fmt::format("{}{}", out.empty() ? "" : ", ", i);
  return out;
}

// The plan against the schedule's shortest gap between slots (null without --schedule).
nlohmann::json slot_gap(const std::optional<CronSchedule>& schedule, const RetryPlan& plan) {
  if (!schedule) return nullptr;
  const ScheduleRhythm r = schedule_rhythm(*schedule);
  if (!r.has_gap) return nullptr;
  // The jitter range brackets the plain window; the longest one is compared.
  REHEARSE_ASSERT_LE(plan.shortest_window_ms, plan.recovery_window_ms);
  REHEARSE_ASSERT_LE(plan.recovery_window_ms, plan.longest_window_ms);
  const DurationMs window = plan.longest_window_ms;
  return {{"shortest_slot_gap_ms", r.shortest_gap_ms},
          {"shortest_slot_gap", format_duration(r.shortest_gap_ms)},
          {"shortest_slot_gap_from", format_instant(r.shortest_gap_from_ms)},
          {"recovery_window_ms", window},
          {"runs_into_next_slot", window >= r.shortest_gap_ms},
          {"gap_ms", r.shortest_gap_ms - window}};
}

// The count, and what ends the chain when it is not the count alone.
void print_count(const RetryPlan& plan) {
  if (plan.deadline_ms > 0) {
    fmt::print("deadline:          {} after the slot (no retry comes due later)\n",
               format_duration(plan.deadline_ms));
  }
  const char* why = plan.stop == RetryPlan::Stop::deadline ? "; the next would pass the deadline"
                    : plan.stop == RetryPlan::Stop::listed
                        ? "; listed in part, the chain goes on until the deadline"
                        : "";
  fmt::print("retries:           {} after one failure (limit {}{})\n", plan.planned,
             format_retry_limit(plan.max_retries), why);
}

void print_window(const RetryPlan& plan) {
  fmt::print("recovery window:   {}\n", format_duration(plan.recovery_window_ms));
  if (plan.shortest_window_ms != plan.recovery_window_ms ||
      plan.longest_window_ms != plan.recovery_window_ms) {
    fmt::print("  with jitter:     {} to {}\n", format_duration(plan.shortest_window_ms),
               format_duration(plan.longest_window_ms));
  }
}

void print_delays(const RetryPlan& plan) {
  for (std::size_t i = 0; i < plan.delays_ms.size(); ++i) {
    fmt::print("  retry {:<3} after {:<10} at +{} from the failure\n", i + 1,
               format_duration(plan.delays_ms[i]), format_duration(plan.offsets_ms[i]));
  }
}

// Several retriers: each one's error names, the classes it takes and its
// own plan (a failure of its classes after the others' retries still
// starts at its retry 1).
void print_rules(const RetryPolicy& policy) {
  fmt::print(
      "retriers:          {} (a failure goes to the first that names its class; each "
      "counts its own retries)\n",
      policy.rules.size());
  for (std::size_t r = 0; r < policy.rules.size(); ++r) {
    const RetryRule& rule = policy.rules[r];
    const std::string classes = join(class_names(rule.classes));
    fmt::print("retrier {}:         [{}] -> {}\n", r, join(rule.error_names),
               classes.empty() ? "no class (earlier retriers took them)" : classes);
    const RetryPlan plan = plan_rule(policy, r);
    print_count(plan);
    print_delays(plan);
    print_window(plan);
  }
}

void print_text(const Explained& e, const RetryPlan& plan,
                const std::vector<std::string>& surprises, const nlohmann::json& gap) {
  // plan_retries gives one delay and one offset per retry.
  REHEARSE_ASSERT_EQ(plan.delays_ms.size(), static_cast<std::size_t>(plan.planned));
  REHEARSE_ASSERT_EQ(plan.offsets_ms.size(), plan.delays_ms.size());
  if (e.converted) {
    const PolicySystem& s = *e.converted->system;
    fmt::print("system:            {} ({})\n", s.title, s.attempts_meaning);
    fmt::print("formula:           {}\n", s.formula);
    if (!e.converted->defaults.empty()) {
      fmt::print("defaults used:     {}\n", join(e.converted->defaults));
    }
    if (!e.converted->ignored.empty()) {
      fmt::print("ignored keys:      {}\n", join(e.converted->ignored));
    }
    for (const std::string& note : e.converted->notes) fmt::print("read as:           {}\n", note);
  }
  fmt::print("policy:            {}\n", describe(e.policy));
  if (!e.policy.reason.empty()) fmt::print("reason:            {}\n", e.policy.reason);
  if (e.policy.rules.empty()) {
    print_count(plan);
    print_delays(plan);
  } else {
    print_rules(e.policy);
  }
  if (e.policy.rules.empty()) print_window(plan);
  const std::string classes = join(class_names(plan.retryable_classes));
  fmt::print("retryable classes: {}\n", classes.empty() ? "none" : classes);
  fmt::print("budget:            {}\n", to_string(plan.budget));
  if (e.policy.backoff.jitter > 0.0) {
    fmt::print("jitter:            {} (each delay drawn from [{}*d, d])\n", e.policy.backoff.jitter,
               1.0 - e.policy.backoff.jitter);
  }
  if (e.policy.backoff.decorrelated) {
    fmt::print(
        "jitter:            decorrelated (each delay drawn from [{}, 3 x the previous], "
        "the first from [{}, {}]; the delays above are each retry's longest)\n",
        format_duration(e.policy.backoff.delay_ms), format_duration(e.policy.backoff.delay_ms),
        format_duration(decorrelated_ceiling_ms(e.policy.backoff, 0)));
  }
  if (!gap.is_null()) {
    const DurationMs g = gap["gap_ms"].get<DurationMs>();
    fmt::print(
        "next slot:         slots can be {} apart (from {}); {}\n",
        gap["shortest_slot_gap"].get<std::string>(),
        gap["shortest_slot_gap_from"].get<std::string>(),
        g > 0
            ? fmt::format("the recovery window leaves {} before the next slot", format_duration(g))
            : fmt::format("the retry chain runs {} into the next slot", format_duration(-g)));
  }
  for (const auto& s : surprises) fmt::print("note:              {}\n", s);
}

int policy_explain(const Args& args) {
  auto parsed = parse_args(args, kExplainOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse policy --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kPolicyHelp, format_options_help(kExplainOptions));
    return kExitOk;
  }
  if (parsed->positionals.size() != 1) {
    return usage_error("policy explain: expected exactly one POLICY argument (quote it)");
  }
  std::optional<CronSchedule> schedule;
  std::optional<ScheduleFacts> facts;
  if (auto expr = parsed->value("--schedule")) {
    auto s = CronSchedule::parse(*expr);
    if (!s) return usage_error(fmt::format("--schedule \"{}\": {}", *expr, s.error().describe()));
    facts = schedule_facts(*s);
    schedule = std::move(*s);
  }
  const std::string& arg = parsed->positionals.front();
  auto from = parsed->value("--from");
  if (from && find_policy_system(*from) == nullptr) {
    return usage_error(
        fmt::format("--from \"{}\": expected one of {}", *from, policy_system_names()));
  }
  const auto state = parsed->value("--state");
  auto explained = from ? read_from_system(*from, arg, state) : read_policy(arg, facts);
  if (!explained) return input_error(explained.error());
  const RetryPlan plan = plan_retries(explained->policy);
  SystemPolicy for_notes = explained->converted.value_or(SystemPolicy{});
  for_notes.policy = explained->policy;
  const auto surprises = policy_surprises(for_notes, plan);
  const nlohmann::json gap = slot_gap(schedule, plan);
  if (parsed->has("--json")) {
    nlohmann::json doc = to_json(plan);
    doc["policy"] = to_json(explained->policy);
    if (explained->converted) {
      doc["system"] = std::string(explained->converted->system->name);
      doc["defaults"] = explained->converted->defaults;
      doc["ignored"] = explained->converted->ignored;
      doc["read_as"] = explained->converted->notes;
    }
    for (std::size_t r = 0; r < explained->policy.rules.size(); ++r) {
      doc["retriers"].push_back(to_json(plan_rule(explained->policy, r)));
    }
    if (!surprises.empty()) doc["notes"] = surprises;
    if (!gap.is_null()) doc["next_slot"] = gap;
    fmt::print("{}\n", doc.dump(2));
    return kExitOk;
  }
  print_text(*explained, plan, surprises, gap);
  return kExitOk;
}

}  // namespace

int cmd_policy(const Args& args) {
  if (args.empty() || args.front() == "--help" || args.front() == "-h") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kPolicyHelp);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args.front() == "explain") return policy_explain(Args(args.begin() + 1, args.end()));
  return usage_error(fmt::format("unknown policy subcommand '{}'", args.front()),
                     "expected 'policy explain'");
}

}  // namespace rehearse::cli
