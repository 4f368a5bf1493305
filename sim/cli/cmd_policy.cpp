// rehearse policy explain POLICY [--schedule EXPR] [--json]
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model/cron.hpp"
#include "model/retry_policy.hpp"
#include "sim/cli/args.hpp"
#include "sim/cli/commands.hpp"
#include "sim/cli/error_report.hpp"
#include "sim/cli/json_input.hpp"

namespace rehearse::cli {
namespace {

constexpr const char* kPolicyHelp =
    "usage: rehearse policy explain POLICY [--schedule EXPR] [--json]\n"
    "\n"
    "Prints the retry plan a policy gives after one failure: how many retries, the\n"
    "delay before each, the cumulative offset from the failure, and the recovery\n"
    "window (delays without jitter).\n"
    "\n"
    "POLICY is inline JSON or @FILE.json, in any accepted form:\n"
    "  per-job  '{\"max\": 2, \"backoff_sec\": 300, \"retryable_classes\": [\"timeout\"], \"reason\": \"...\"}'\n"
    "  BullMQ   '{\"attempts\": 4, \"backoff\": {\"type\": \"exponential\", \"delay\": 1800000}}'\n"
    "  auto     '\"auto\"' (or auto) with --schedule EXPR, the job's effective schedule\n"
    "See docs/retry.md.\n";

const std::vector<OptionSpec> kExplainOptions{
    {"--schedule", true, "EXPR", "the job's effective cron schedule (required for \"auto\")"},
    {"--json", false, "", "print one JSON document"},
};

int policy_explain(const Args& args) {
  auto parsed = parse_args(args, kExplainOptions);
  if (!parsed) return usage_error(parsed.error().describe(), "see 'rehearse policy --help'");
  if (parsed->has("--help")) {
    fmt::print("{}\noptions:\n{}", kPolicyHelp, format_options_help(kExplainOptions));
    return kExitOk;
  }
  if (parsed->positionals.size() != 1) {
    return usage_error("policy explain: expected exactly one POLICY argument (quote the JSON)");
  }
  const std::string& arg = parsed->positionals.front();
  auto input = read_json_argument(arg, /*bare_words=*/{"auto"});
  if (!input) return input_error(input.error());

  std::optional<ScheduleFacts> facts;
  if (auto expr = parsed->value("--schedule")) {
    auto schedule = CronSchedule::parse(*expr);
    if (!schedule) {
      return usage_error(fmt::format("--schedule \"{}\": {}", *expr, schedule.error().describe()));
    }
    facts = schedule_facts(*schedule);
  }
  auto policy = parse_retry_policy(input->value, facts);
  if (!policy) {
    const Error& e = policy.error();
    return input_error(make_error(e.code, e.message,
                                  input->origin + (e.where.empty() ? "" : ":" + e.where)));
  }
  const RetryPlan plan = plan_retries(*policy);
  if (parsed->has("--json")) {
    nlohmann::json doc = to_json(plan);
    doc["policy"] = to_json(*policy);
    fmt::print("{}\n", doc.dump(2));
    return kExitOk;
  }
  fmt::print("policy:            {}\n", describe(*policy));
  if (!policy->reason.empty()) fmt::print("reason:            {}\n", policy->reason);
  fmt::print("retries:           {} after one failure\n", plan.max_retries);
  for (std::size_t i = 0; i < plan.delays_ms.size(); ++i) {
    fmt::print("  retry {:<3} after {:<10} at +{} from the failure\n", i + 1,
               format_duration(plan.delays_ms[i]), format_duration(plan.offsets_ms[i]));
  }
  fmt::print("recovery window:   {}\n", format_duration(plan.recovery_window_ms));
  std::string classes;
  for (const auto& c : class_names(plan.retryable_classes)) {
    classes += classes.empty() ? "" : ", ";
    classes += c;
  }
  fmt::print("retryable classes: {}\n", classes.empty() ? "none" : classes);
  fmt::print("budget:            {}\n", to_string(plan.budget));
  if (policy->backoff.jitter > 0.0) {
    fmt::print("jitter:            {} (each delay drawn from [{}*d, d])\n", policy->backoff.jitter,
               1.0 - policy->backoff.jitter);
  }
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
