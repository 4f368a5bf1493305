// The syntax readers of pasted retry settings: YAML (model/yaml_document.*),
// Python calls (model/python_literal.*), Sidekiq Ruby (model/ruby_snippet.*)
// and `ms` durations (model/ms_duration.*). Inputs are the snippets users
// write; expected values are worked out by hand from each language's rules.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "model/ms_duration.hpp"
#include "model/python_literal.hpp"
#include "model/ruby_snippet.hpp"
#include "model/yaml_document.hpp"

namespace rehearse {
namespace {

using nlohmann::json;

// The error's "where" and that its message contains `text`.
void expect_error(const Result<json>& r, const std::string& where, const std::string& text) {
  ASSERT_FALSE(r.ok()) << r->dump();
  EXPECT_EQ(r.error().code, ErrorCode::parse_error) << r.error().describe();
  EXPECT_EQ(r.error().where, where) << r.error().describe();
  EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().describe();
}

json ok(const Result<json>& r) {
  EXPECT_TRUE(r.ok()) << r.error().describe();
  return r.ok() ? *r : json();
}

// ---- YAML

TEST(YamlDocument, ReadsAJobManifestWithCoreSchemaTypes) {
  const json v = ok(read_yaml_document(R"(apiVersion: batch/v1
kind: Job
metadata:
  name: "nightly"
spec:
  backoffLimit: 6
  activeDeadlineSeconds: 600.5
  suspend: false
  ttl: ~
  podFailurePolicy:
    rules:
      - action: FailJob
        onExitCodes: {operator: In, values: [42]}
  quoted: "6"
  single: 'true'
  block: |
    12
)"));
  EXPECT_EQ(v["spec"]["backoffLimit"], json(6));
  EXPECT_TRUE(v["spec"]["backoffLimit"].is_number_integer());
  EXPECT_EQ(v["spec"]["activeDeadlineSeconds"], json(600.5));
  EXPECT_EQ(v["spec"]["suspend"], json(false));
  EXPECT_TRUE(v["spec"]["ttl"].is_null());
  EXPECT_EQ(v["metadata"]["name"], json("nightly"));
  EXPECT_EQ(v["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"], json::array({42}));
  EXPECT_EQ(v["spec"]["quoted"], json("6"));
  EXPECT_EQ(v["spec"]["single"], json("true"));
  EXPECT_EQ(v["spec"]["block"], json("12\n"));
  EXPECT_EQ(v["apiVersion"], json("batch/v1"));
}

TEST(YamlDocument, JsonTextIsYaml) {
  const std::string text = R"({"attempts": 4, "backoff": {"type": "exponential", "delay": 1000},
 "ok": true, "none": null, "list": [1, 2.5, "x"], "neg": -3})";
  EXPECT_EQ(ok(read_yaml_document(text)), json::parse(text));
}

TEST(YamlDocument, TagsAndLargeNumbers) {
  const json v =
      ok(read_yaml_document("a: !!str 5\nb: !!float 2\nc: 99999999999999999999\nd: +7\n"));
  EXPECT_EQ(v["a"], json("5"));
  EXPECT_TRUE(v["b"].is_number_float());
  EXPECT_TRUE(v["c"].is_number_float());
  EXPECT_EQ(v["d"], json(7));
}

TEST(YamlDocument, SeveralDocumentsAreRefused) {
  expect_error(read_yaml_document("a: 1\n---\nb: 2\n---\nc: 3\n"), "2:1",
               "3 YAML documents (separated by '---'); a Job manifest is one document");
}

TEST(YamlDocument, EmptyIsRefused) {
  expect_error(read_yaml_document(""), "1:1", "no YAML document");
  expect_error(read_yaml_document("# only a comment\n"), "1:1", "no YAML document");
}

TEST(YamlDocument, DuplicateAndComplexKeysAreRefused) {
  expect_error(read_yaml_document("spec:\n  backoffLimit: 1\n  backoffLimit: 2\n"), "3:3",
               "key \"backoffLimit\" given twice");
  expect_error(read_yaml_document("? [a, b]\n: 1\n"), "1:3", "a map key that is a list");
}

TEST(YamlDocument, AmbiguousScalarsAreRefused) {
  expect_error(read_yaml_document("spec:\n  suspend: yes\n"), "2:12",
               "a boolean in YAML 1.1 (Kubernetes tooling) and a string in YAML 1.2");
  expect_error(read_yaml_document("mode: 0755\n"), "1:7", "zero-led");
  expect_error(read_yaml_document("x: .inf\n"), "1:4", "not a number JSON can hold");
  expect_error(read_yaml_document("x: !Ref y\n"), "1:4", "the tag '!Ref' is not supported");
}

TEST(YamlDocument, SyntaxErrorsCarryYamlCppsPlace) {
  const auto r = read_yaml_document("a: [1, 2\nb: 3\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::parse_error);
  EXPECT_FALSE(r.error().where.empty());
  expect_error(read_yaml_document("a: 1\n  b: 2\n"), "2:4", "illegal map value");
}

TEST(YamlDocument, AliasBombsStop) {
  std::string text = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (char c = 'b'; c <= 'h'; ++c) {
    const char prev = static_cast<char>(c - 1);
    text += fmt::format("{0}: &{0} [*{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}, *{1}]\n",
                        c, prev);
  }
  const auto r = read_yaml_document(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("aliases expand"), std::string::npos) << r.error().describe();
}

// ---- Python

TEST(PythonCall, CeleryDecoratorWithItsFunction) {
  const json v = ok(read_python_call(
      "@app.task(bind=True, autoretry_for=(RequestException,), retry_kwargs={'max_retries': 5}, "
      "retry_backoff=True)\ndef fetch(self, url):\n    return requests.get(url)\n"));
  EXPECT_EQ(v, json::parse(R"({"$call": "app.task", "args": [], "kwargs": {
    "bind": true, "autoretry_for": [{"$name": "RequestException"}],
    "retry_kwargs": {"max_retries": 5}, "retry_backoff": true}})"));
}

TEST(PythonCall, TemporalRetryPolicy) {
  const json v = ok(read_python_call(
      "RetryPolicy(initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, "
      "maximum_attempts=0, non_retryable_error_types=[\"ValueError\"])"));
  EXPECT_EQ(v, json::parse(R"({"$call": "RetryPolicy", "args": [], "kwargs": {
    "initial_interval": {"$call": "timedelta", "args": [], "kwargs": {"seconds": 1}},
    "backoff_coefficient": 2.0, "maximum_attempts": 0,
    "non_retryable_error_types": ["ValueError"]}})"));
  EXPECT_TRUE(v["kwargs"]["backoff_coefficient"].is_number_float());
}

TEST(PythonCall, KeywordListsAndDicts) {
  EXPECT_EQ(ok(read_python_call("max_retries=5, retry_backoff=True")),
            json::parse(R"({"$call": "", "args": [],
                            "kwargs": {"max_retries": 5, "retry_backoff": true}})"));
  EXPECT_EQ(ok(read_python_call("max_retries = 5  # class attributes\nretry_jitter = False\n")),
            json::parse(R"({"$call": "", "args": [],
                            "kwargs": {"max_retries": 5, "retry_jitter": false}})"));
  EXPECT_EQ(ok(read_python_call("{'max_retries': 5}")), json::parse(R"({"max_retries": 5})"));
}

TEST(PythonCall, Values) {
  const json v = ok(read_python_call(
      "f(1_000, -2, .5, 1e3, 'a\\'b', \"c\\n\", u'\\x41\\u00e9', r'\\d', 'x' \"y\", None,\n"
      "  (1, 2), (3), (), [4,], requests.exceptions.RequestException,  # comment\n"
      "  '''tri'ple''', timeout=timedelta(minutes=5))"));
  EXPECT_EQ(v["args"], json::parse(R"([1000, -2, 0.5, 1000.0, "a'b", "c\n", "Aé", "\\d", "xy",
    null, [1, 2], 3, [], [4], {"$name": "requests.exceptions.RequestException"}, "tri'ple"])"));
  EXPECT_EQ(v["kwargs"]["timeout"]["kwargs"]["minutes"], json(5));
}

TEST(PythonCall, DecoratorWithoutArguments) {
  EXPECT_EQ(ok(read_python_call("@shared_task\nasync def run():\n    pass\n")),
            json::parse(R"({"$call": "shared_task", "args": [], "kwargs": {}})"));
}

TEST(PythonCall, UnbalancedBrackets) {
  expect_error(read_python_call("RetryPolicy(maximum_attempts=3"), "1:31",
               "the '(' at 1:12 is never closed");
  expect_error(read_python_call("f(a=[1, 2)"), "1:10", "')' does not close the '[' at 1:5");
}

TEST(PythonCall, KeywordTwiceAndPositionalAfterKeyword) {
  expect_error(read_python_call("f(max_retries=3,\n  max_retries=4)"), "2:3",
               "keyword 'max_retries' given twice");
  expect_error(read_python_call("f(a=1, RequestException)"), "1:8",
               "a positional argument after keyword arguments");
}

TEST(PythonCall, ExpressionsAreRefused) {
  expect_error(read_python_call("f(countdown=lambda n: 2 ** n)"), "1:13",
               "'lambda' is an expression: write its value");
  expect_error(read_python_call("f(max_retries=3 + 1)"), "1:17",
               "an operator '+' is an expression: write its value");
  expect_error(read_python_call("f(x=-y)"), "1:5", "is an expression: write its value");
  expect_error(read_python_call("f(x=f'{a}')"), "1:5", "an f-string");
  expect_error(read_python_call("f(**opts)"), "1:3", "unpacking");
  expect_error(read_python_call("{'a': 1, 'a': 2}"), "1:10", "key 'a' given twice");
  expect_error(read_python_call("@app.task()\nprint(1)\n"), "2:1", "the decorated `def` line");
}

// ---- Sidekiq

TEST(SidekiqSnippet, AJobClass) {
  const json v = ok(read_sidekiq_snippet(R"(class HardJob
  include Sidekiq::Job
  sidekiq_options retry: 5, queue: 'critical', dead: false

  sidekiq_retry_in { |count| 10 * (count + 1) }

  def perform(name, count)
    # do something
  end
end
)"));
  EXPECT_EQ(v, json::parse(R"({"retry": 5, "queue": "critical", "dead": false,
                              "retry_in": ["*", 10, ["+", "count", 1]]})"));
}

TEST(SidekiqSnippet, OptionForms) {
  EXPECT_EQ(ok(read_sidekiq_snippet("sidekiq_options 'retry' => 5")),
            json::parse(R"({"retry": 5})"));
  EXPECT_EQ(ok(read_sidekiq_snippet("sidekiq_options(:retry => false, :queue => :low,\n"
                                    "  tags: [\"a\", 'b'], backtrace: nil)")),
            json::parse(
                R"({"retry": false, "queue": "low", "tags": ["a", "b"], "backtrace": null})"));
  EXPECT_EQ(
      ok(read_sidekiq_snippet("  sidekiq_options retry: 1_000,\n    \"lock\": :until_executed\n")),
      json::parse(R"({"retry": 1000, "lock": "until_executed"})"));
}

TEST(SidekiqSnippet, DoBlockWithTwoParametersAndDurations) {
  const json v =
      ok(read_sidekiq_snippet("include Sidekiq::Worker\nsidekiq_retry_in do |n, exception|\n  (n + "
                              "1).minutes + 30.seconds\nend\n"));
  EXPECT_EQ(v["retry_in"], json::parse(R"(["+", ["*", ["+", "count", 1], 60], 30])"));
}

TEST(SidekiqSnippet, RubyPrecedence) {
  const json v =
      ok(read_sidekiq_snippet("sidekiq_retry_in { |c| -2 ** 2 + c ** 2 ** 3 - 7 / 2 % 3 }"));
  EXPECT_EQ(v["retry_in"], json::parse(R"(["-", ["+", ["neg", ["**", 2, 2]],
                                                      ["**", "count", ["**", 2, 3]]],
                                               ["%", ["/", 7, 2], 3]])"));
  auto r = eval_count_expression(v["retry_in"], 2);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(*r, -4 + 256 - 0);  // 7 / 2 = 3, 3 % 3 = 0
}

TEST(SidekiqSnippet, BlocksThatCannotBePlanned) {
  const std::string tail =
      "cannot be planned; write an arithmetic expression in count (e.g. `10 * (count + 1)`) or "
      "use `retry: N` (docs/policies.md \"Sidekiq\")";
  expect_error(read_sidekiq_snippet("sidekiq_retry_in do |count, exception|\n"
                                    "  case exception\n  when Timeout then 10\n  end\nend\n"),
               "2:3", "sidekiq_retry_in: the block branches (`case`) " + tail);
  expect_error(read_sidekiq_snippet("sidekiq_retry_in { |count, ex| ex.is_a?(X) ? :kill : 10 }"),
               "1:32", "the block uses `ex` (only the retry count can be planned) " + tail);
  expect_error(read_sidekiq_snippet("sidekiq_retry_in { |count| :discard }"), "1:28",
               "the block returns the symbol :discard " + tail);
  expect_error(read_sidekiq_snippet("sidekiq_retry_in { |count| count ** 4 + rand(10) }"), "1:41",
               "the block draws a random number (`rand`) " + tail);
  expect_error(read_sidekiq_snippet("sidekiq_retry_in { |count| 10 if count < 3 }"), "1:31",
               "the block branches (`if`) " + tail);
  expect_error(read_sidekiq_snippet("sidekiq_retry_in do |count|\n  x = 1\n  x\nend"), "2:3",
               "the block calls `x` " + tail);
}

TEST(SidekiqSnippet, CallErrors) {
  expect_error(read_sidekiq_snippet("class A\n  sidekiq_options retry: 5, retry: 6\nend"), "2:29",
               "option 'retry' given twice");
  expect_error(read_sidekiq_snippet("sidekiq_options retry: \"#{n}\""), "1:25",
               "string interpolation");
  expect_error(read_sidekiq_snippet("class A\nend\n"), "1:1",
               "no `sidekiq_options` or `sidekiq_retry_in` line found");
  expect_error(read_sidekiq_snippet("sidekiq_retry_in { |count| (count + 1 }"), "1:39",
               "sidekiq_retry_in: expected ')'");
}

TEST(SidekiqSnippet, BoundsWhatItReads) {
  expect_error(read_sidekiq_snippet("sidekiq_options {{a: 1}: 2}"), "1:18",
               "sidekiq_options: expected a key");
  std::string long_sum = "sidekiq_retry_in { |count| 1";
  for (int i = 0; i < 200; ++i) long_sum += " + 1";
  expect_error(read_sidekiq_snippet(long_sum + " }"), "1:542",
               "the expression has more than 128 operations");
}

TEST(CountExpression, RubyIntegerSemantics) {
  const auto at = [](const char* ast, std::int64_t count) {
    return eval_count_expression(json::parse(ast), count);
  };
  EXPECT_EQ(*at(R"(["/", -7, 2])", 0), -4);
  EXPECT_EQ(*at(R"(["%", -7, 2])", 0), 1);
  EXPECT_EQ(*at(R"(["%", 7, -2])", 0), -1);
  EXPECT_EQ(*at(R"(["/", "count", -1])", -9223372036854775807), 9223372036854775807);
  EXPECT_EQ(*at(R"(["**", 0, 0])", 0), 1);
  EXPECT_EQ(*at(R"(["**", -1, "count"])", 1'000'000'001), -1);
  EXPECT_EQ(*at(R"(["+", ["**", "count", 4], 15])", 3), 96);
  EXPECT_EQ(at(R"(["**", 2, ["neg", 1]])", 0).error().code, ErrorCode::invalid_argument);
  EXPECT_NE(at(R"(["**", 2, 64])", 0).error().message.find("overflows"), std::string::npos);
  EXPECT_NE(at(R"(["/", 1, ["-", "count", 3]])", 3).error().message.find("division by zero"),
            std::string::npos);
  EXPECT_EQ(at(R"(["neg", "count"])", INT64_MIN).error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(at(R"(["sqrt", 4])", 0).error().code, ErrorCode::schema_error);
  EXPECT_EQ(at(R"("exception")", 0).error().code, ErrorCode::schema_error);
}

// ---- ms durations

TEST(MsDuration, TheGrammarOfMs) {
  const auto ms = [](const char* text) {
    const auto r = parse_ms_duration(text);
    EXPECT_TRUE(r.ok()) << text << ": " << r.error().describe();
    return r.ok() ? *r : -1;
  };
  EXPECT_EQ(ms("1 second"), 1000);
  EXPECT_EQ(ms("1s"), 1000);
  EXPECT_EQ(ms("1m"), 60'000);
  EXPECT_EQ(ms("1 minute"), 60'000);
  EXPECT_EQ(ms("2 hours"), 7'200'000);
  EXPECT_EQ(ms("1.5h"), 5'400'000);
  EXPECT_EQ(ms("100"), 100);
  EXPECT_EQ(ms("100ms"), 100);
  EXPECT_EQ(ms("3 msecs"), 3);
  EXPECT_EQ(ms("1d"), 86'400'000);
  EXPECT_EQ(ms("2 days"), 172'800'000);
  EXPECT_EQ(ms("1w"), 604'800'000);
  EXPECT_EQ(ms("1 weeks"), 604'800'000);
  EXPECT_EQ(ms("1y"), 31'557'600'000);
  EXPECT_EQ(ms("2 years"), 63'115'200'000);
  EXPECT_EQ(ms("1 YRS"), 31'557'600'000);
  EXPECT_EQ(ms("1.1s"), 1100);  // ms computes 1100.0000000000002 in floating point
  EXPECT_EQ(ms(".5s"), 500);
  EXPECT_EQ(ms("1   Min"), 60'000);
  EXPECT_EQ(ms("0"), 0);
  EXPECT_EQ(ms("1.50000000000000000000000s"), 1500);
}

TEST(MsDuration, Refusals) {
  const auto refused = [](const char* text, const char* why) {
    const auto r = parse_ms_duration(text);
    ASSERT_FALSE(r.ok()) << text << " -> " << *r;
    EXPECT_EQ(r.error().code, ErrorCode::invalid_argument);
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("expected a duration as the `ms` package writes it"),
              std::string::npos);
  };
  refused("", "empty");
  refused("-1s", "a negative duration");
  refused("1 fortnight", "unknown unit 'fortnight'");
  refused("ms", "no number");
  refused("1.s", "ending in '.'");
  refused(" 1s", "no number");
  refused("1\ts", "unknown unit");
  refused("0.5ms", "not a whole number of milliseconds");
  refused("1e3", "unknown unit 'e3'");
  refused("99999999999y", "too large");
  refused(std::string(101, '1').c_str(), "longer than 100 characters");
}

}  // namespace
}  // namespace rehearse
