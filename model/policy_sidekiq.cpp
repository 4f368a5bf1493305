// Sidekiq's retry settings as the core's RetryPolicy (docs/policies.md, "sidekiq").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "model/assert.hpp"
#include "model/policy_forms_detail.hpp"
#include "model/ruby_snippet.hpp"

namespace rehearse::policy_forms_detail {

using nlohmann::json;
using namespace policy_json;

namespace {

// retry_in: the AST model/ruby_snippet read from a sidekiq_retry_in block,
// or (in JSON) the block's body as Ruby text.
Result<json> read_retry_in(const json& v) {
  if (!v.is_string()) return v;
  const std::string block = "sidekiq_retry_in { |count| " + v.get<std::string>() + " }";
  auto read = read_sidekiq_snippet(block);
  if (!read.ok()) {
    return invalid("/retry_in", fmt::format("expected arithmetic in count such as \"10 * (count "
                                            "+ 1)\": {}",
                                            read.error().message));
  }
  return read->at("retry_in");
}

// The block's AST must evaluate (the reader's shapes only).
Status check_block(const json& ast) {
  auto at_zero = eval_count_expression(ast, 0);
  if (!at_zero.ok() && at_zero.error().code == ErrorCode::schema_error) {
    return schema("/retry_in",
                  fmt::format("not a sidekiq_retry_in expression: {}", at_zero.error().message));
  }
  return {};
}

}  // namespace

Result<SystemPolicy> convert_sidekiq(const json& value) {
  SystemPolicy out;
  if (auto s = require_object(value, "Sidekiq"); !s.ok()) return std::move(s).error();
  if (auto s =
          sort_keys(value, {"retry", "retry_in"},
                    {"queue", "backtrace", "dead", "tags", "pool", "retry_queue"}, "Sidekiq", out);
      !s.ok()) {
    return std::move(s).error();
  }
  int retries = 25;
  if (!value.contains("retry")) {
    out.defaults.push_back("retry: 25");
  } else if (value.at("retry").is_boolean()) {
    retries = value.at("retry").get<bool>() ? 25 : 0;
  } else {
    REHEARSE_TRY(count,
                 read_integer(value.at("retry"), "/retry",
                              "retry (true, false or the number of retries)", 0, kRetryCountMax));
    retries = static_cast<int>(*count);
  }
  // (count ** 4) + 15 + rand(10) * (count + 1) seconds, count = n - 1; a
  // sidekiq_retry_in block replaces the first two terms when above 0.
  Backoff b{BackoffKind::polynomial, 15 * kSecondMs, 0.0};
  b.exponent = 4;
  b.unit_ms = kSecondMs;
  b.additive_steps = 10;
  if (value.contains("retry_in")) {
    REHEARSE_TRY(ast, read_retry_in(value.at("retry_in")));
    if (auto s = check_block(*ast); !s.ok()) return std::move(s).error();
    b.kind = BackoffKind::expression;
    b.expression = ast->dump();
  }
  out.policy = system_policy(PolicyForm::sidekiq, retries, b);
  return out;
}

}  // namespace rehearse::policy_forms_detail
