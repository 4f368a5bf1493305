// Goal: OTLP/JSON trace exports (the protobuf-JSON mapping) are read as the
// HTTP client calls they record, and a malformed export is refused with the
// file, the line (JSON Lines) and the JSON pointer of the record.
// Method: spans written as the OpenTelemetry SDKs and the Collector's file
// exporter write them (64-bit integers as strings, AnyValue attributes,
// enums as integers), including the older semantic conventions.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sim/import/otlp_reader.hpp"

namespace {

using namespace rehearse;
using namespace rehearse::sim;

// One span; `attrs` is the inside of its attributes array.
std::string span(const std::string& attrs, const std::string& start = "1764480600000000000",
                 const std::string& end = "1764480600100000000", int kind = 3) {
  return R"({"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",)"
         R"("name":"POST","kind":)" +
         std::to_string(kind) + R"(,"startTimeUnixNano":")" + start + R"(","endTimeUnixNano":")" +
         end + R"(","attributes":[)" + attrs + R"(],"status":{}})";
}

std::string export_of(const std::string& spans) {
  return R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"invoice-worker"}}]},)"
         R"("scopeSpans":[{"scope":{"name":"@opentelemetry/instrumentation-http","version":"0.52.0"},"spans":[)" +
         spans + "]}]}]}";
}

const std::string kLedger503 =
    R"({"key":"http.request.method","value":{"stringValue":"POST"}},)"
    R"({"key":"server.address","value":{"stringValue":"ledger.internal"}},)"
    R"({"key":"url.full","value":{"stringValue":"https://ledger.internal/entries"}},)"
    R"({"key":"http.response.status_code","value":{"intValue":"503"}})";

TEST(OtlpReader, ReadsAClientSpanAsACall) {
  auto got =
      read_otlp_calls(export_of(span(kLedger503)), "t.json", {{"ledger.internal", "ledger-api"}});
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->calls.size(), 1u);
  const CallObservation& c = got->calls[0];
  EXPECT_EQ(c.service, "ledger-api");
  EXPECT_EQ(c.outcome, CallOutcome::http_error);
  EXPECT_EQ(c.status, 503);
  EXPECT_EQ(c.start_ms, 1764480600000);
  EXPECT_EQ(c.end_ms, 1764480600100);
  EXPECT_EQ(c.where, "t.json:/resourceSpans/0/scopeSpans/0/spans/0");
  EXPECT_EQ(got->addresses, std::vector<std::string>{"ledger.internal"});
}

TEST(OtlpReader, OlderConventionsAndPeerServiceAndErrors) {
  const std::string old_style =
      R"({"key":"http.method","value":{"stringValue":"GET"}},)"
      R"({"key":"http.url","value":{"stringValue":"http://billing:8080/invoices?x=1"}},)"
      R"({"key":"http.status_code","value":{"intValue":200}})";
  const std::string peer_timeout =
      R"({"key":"http.request.method","value":{"stringValue":"GET"}},)"
      R"({"key":"peer.service","value":{"stringValue":"model-api"}},)"
      R"({"key":"server.address","value":{"stringValue":"api.example.com"}},)"
      R"({"key":"error.type","value":{"stringValue":"java.net.SocketTimeoutException"}})";
  const std::string refused =
      R"({"key":"url.full","value":{"stringValue":"https://ledger.internal/x"}},)"
      R"({"key":"error.type","value":{"stringValue":"ECONNREFUSED"}})";
  const std::string strange =
      R"({"key":"url.full","value":{"stringValue":"https://ledger.internal/x"}},)"
      R"({"key":"error.type","value":{"stringValue":"SomethingOdd"}})";
  const std::string server_span = span(kLedger503, "1", "2", 2);
  const std::string not_http = span(R"({"key":"db.system","value":{"stringValue":"redis"}})");
  auto got =
      read_otlp_calls(export_of(span(old_style) + "," + span(peer_timeout) + "," + span(refused) +
                                "," + span(strange) + "," + server_span + "," + not_http),
                      "t.json", {});
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->calls.size(), 4u);
  EXPECT_EQ(got->calls[0].service, "billing");
  EXPECT_EQ(got->calls[0].outcome, CallOutcome::success);
  EXPECT_EQ(got->calls[1].service, "model-api");
  EXPECT_EQ(got->calls[1].outcome, CallOutcome::timeout);
  EXPECT_EQ(got->calls[2].outcome, CallOutcome::network_error);
  EXPECT_EQ(got->calls[2].error, "connection_refused");
  EXPECT_EQ(got->calls[3].error, "connection_reset");
  ASSERT_EQ(got->ambiguities.size(), 1u);  // the guess for SomethingOdd
  EXPECT_NE(got->ambiguities[0].what.find("SomethingOdd"), std::string::npos);
  EXPECT_EQ(got->spans, 6);
  EXPECT_EQ(got->skipped_not_client, 1);
  EXPECT_EQ(got->skipped_not_http, 1);
}

TEST(OtlpReader, JsonLinesNameTheLine) {
  const std::string one = export_of(span(kLedger503));
  auto got = read_otlp_calls(one + "\n" + one + "\n", "t.jsonl", {});
  ASSERT_TRUE(got.ok()) << got.error().describe();
  ASSERT_EQ(got->calls.size(), 2u);
  EXPECT_EQ(got->calls[1].where, "t.jsonl:2:/resourceSpans/0/scopeSpans/0/spans/0");
  auto bad = read_otlp_calls(one + "\n" + one.substr(0, 40) + "\n", "t.jsonl", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().where.rfind("t.jsonl:2:", 0), 0u) << bad.error().describe();
}

TEST(OtlpReader, MalformedExportsNameTheRecord) {
  const std::map<std::string, std::string> none;
  auto not_json = read_otlp_calls("{\"resourceSpans\": [", "t.json", none);
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.error().where, "t.json:1:20");
  auto no_spans = read_otlp_calls("{\"traces\": []}", "t.json", none);
  ASSERT_FALSE(no_spans.ok());
  EXPECT_NE(no_spans.error().message.find("resourceSpans"), std::string::npos);
  auto bad_time = read_otlp_calls(export_of(span(kLedger503, "12x")), "t.json", none);
  ASSERT_FALSE(bad_time.ok());
  EXPECT_EQ(bad_time.error().where,
            "t.json:/resourceSpans/0/scopeSpans/0/spans/0/startTimeUnixNano");
  auto backwards =
      read_otlp_calls(export_of(span(kLedger503, "2000000", "1000000")), "t.json", none);
  ASSERT_FALSE(backwards.ok());
  EXPECT_NE(backwards.error().message.find("before"), std::string::npos);
  auto bad_status = read_otlp_calls(
      export_of(span(R"({"key":"url.full","value":{"stringValue":"http://a/"}},)"
                     R"({"key":"http.response.status_code","value":{"intValue":"9000"}})")),
      "t.json", none);
  ASSERT_FALSE(bad_status.ok());
  EXPECT_NE(bad_status.error().message.find("from 100 to 599"), std::string::npos);
  auto bad_attr = read_otlp_calls(export_of(span(R"({"key":"url.full"})")), "t.json", none);
  ASSERT_FALSE(bad_attr.ok());
  EXPECT_EQ(bad_attr.error().where,
            "t.json:/resourceSpans/0/scopeSpans/0/spans/0/attributes/0/value");
}

}  // namespace
