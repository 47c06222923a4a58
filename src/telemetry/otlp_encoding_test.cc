#include "telemetry/otlp_encoding.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "telemetry/otlp_exporter.h"
#include "telemetry/tracer.h"

namespace xb::telemetry {
namespace {

namespace otlp = opentelemetry::proto;

// The hand encoding decodes with classes generated from proto/opentelemetry (the real OTLP field
// numbers): resource attributes, ids, names, kinds, times, attributes, status and flags.
TEST(OtlpEncodingTest, DecodesAsAnExportTraceServiceRequest) {
  SpanData request;
  request.operation = RequestOperation(Rpc::kPublish);
  request.kind = SpanKind::kServer;
  request.context = *ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01");
  request.parent_span_id = {0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
  request.parent_remote = true;
  request.trace_state = "congo=t61rcWkgMzE";
  request.start_unix_ns = 1'700'000'000'000'000'000ULL;
  request.end_unix_ns = request.start_unix_ns + 1234;
  request.rpc = Rpc::kPublish;
  request.error = true;
  request.ints[static_cast<size_t>(IntAttribute::kGrpcStatusCode)] = 3;
  request.ints_set = 1u << static_cast<size_t>(IntAttribute::kGrpcStatusCode);
  SpanData child;
  child.operation = Operation::kPublishParsePublish;
  child.context = request.context;
  child.context.span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  child.parent_span_id = request.context.span_id;
  child.start_unix_ns = request.start_unix_ns + 1;
  child.end_unix_ns = request.start_unix_ns + 2;
  const SpanData spans[] = {request, child};

  const std::string body = EncodeExportTraceRequest({{"service.name", "xmtp-backend"},
                                                     {"service.version", "1.2.3"},
                                                     {"xmtp.backend.identifier", "deploy-a"}},
                                                    spans);
  otlp::collector::trace::v1::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(decoded.ParseFromString(body));
  ASSERT_EQ(decoded.resource_spans_size(), 1);
  const auto& rs = decoded.resource_spans(0);
  ASSERT_EQ(rs.resource().attributes_size(), 3);
  EXPECT_EQ(rs.resource().attributes(0).key(), "service.name");
  EXPECT_EQ(rs.resource().attributes(0).value().string_value(), "xmtp-backend");
  EXPECT_EQ(rs.resource().attributes(2).key(), "xmtp.backend.identifier");
  EXPECT_EQ(rs.resource().attributes(2).value().string_value(), "deploy-a");
  ASSERT_EQ(rs.scope_spans_size(), 1);
  EXPECT_EQ(rs.scope_spans(0).scope().name(), "xmtp-backend");
  ASSERT_EQ(rs.scope_spans(0).spans_size(), 2);

  const auto& s = rs.scope_spans(0).spans(0);
  EXPECT_EQ(s.name(), "xmtp.backend.v1.PublishService/Publish");
  EXPECT_EQ(s.kind(), otlp::trace::v1::Span::SPAN_KIND_SERVER);
  EXPECT_EQ(s.trace_id(),
            std::string("\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36", 16));
  EXPECT_EQ(s.span_id(), std::string(8, '\x11'));
  EXPECT_EQ(s.parent_span_id(), std::string("\x00\xf0\x67\xaa\x0b\xa9\x02\xb7", 8));
  EXPECT_EQ(s.trace_state(), "congo=t61rcWkgMzE");
  EXPECT_EQ(s.start_time_unix_nano(), request.start_unix_ns);
  EXPECT_EQ(s.end_time_unix_nano(), request.end_unix_ns);
  EXPECT_EQ(s.status().code(), otlp::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(s.flags(), 0x301u);  // sampled, has-is-remote, is-remote
  std::map<std::string, std::string> attrs;
  for (const auto& kv : s.attributes()) {
    attrs[kv.key()] = kv.value().has_int_value() ? std::to_string(kv.value().int_value())
                                                 : kv.value().string_value();
  }
  // The route is the span's name; of the rpc.* words only rpc.system is an attribute.
  EXPECT_EQ(attrs["rpc.system"], "grpc");
  EXPECT_EQ(attrs["rpc.grpc.status_code"], "3");
  EXPECT_EQ(attrs.size(), 2u);

  const auto& c = rs.scope_spans(0).spans(1);
  EXPECT_EQ(c.name(), "publish.parse_publish");
  EXPECT_EQ(c.kind(), otlp::trace::v1::Span::SPAN_KIND_INTERNAL);
  EXPECT_EQ(c.parent_span_id(), s.span_id());
  EXPECT_FALSE(c.has_status());
  EXPECT_EQ(c.attributes_size(), 0);
  EXPECT_EQ(c.flags(), 0x101u);
}

// Lengths of every size class (one-byte and multi-byte varints), every integer attribute with
// negative and large values, the principal attribute, and a batch large enough for three-byte
// lengths: the measured sizes match what is written, and it all decodes.
TEST(OtlpEncodingTest, EveryAttributeAndLengthClassDecodes) {
  SpanData span;
  span.operation = RequestOperation(Rpc::kQuery);
  span.kind = SpanKind::kServer;
  span.context = *ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01");
  span.trace_state = "k=" + std::string(300, 'v');  // a two-byte length
  span.rpc = Rpc::kQuery;
  const int64_t values[kIntAttributeCount] = {0, -1, 127, 128, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < kIntAttributeCount; ++i) {
    span.ints[i] = values[i];
    span.ints_set |= 1u << i;
  }
  span.principal = "operator-key";
  span.start_unix_ns = 1;
  span.end_unix_ns = UINT64_MAX;
  const std::vector<SpanData> spans(600, span);  // > 16 KiB of spans in one ScopeSpans

  const OtlpFraming framing(ResourceAttributes{{"service.name", std::string(200, 's')}});
  EncodedSpans batch(framing);
  for (const SpanData& one : spans) {
    batch.Append(one);
  }
  otlp::collector::trace::v1::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(decoded.ParseFromString(std::string(batch.Frame())));
  ASSERT_EQ(decoded.resource_spans_size(), 1);
  EXPECT_EQ(decoded.resource_spans(0).resource().attributes(0).value().string_value(),
            std::string(200, 's'));
  const auto& scope = decoded.resource_spans(0).scope_spans(0);
  EXPECT_EQ(scope.scope().name(), "xmtp-backend");
  ASSERT_EQ(scope.spans_size(), 600);
  const auto& s = scope.spans(599);
  EXPECT_EQ(s.trace_state(), span.trace_state);
  EXPECT_EQ(s.end_time_unix_nano(), UINT64_MAX);
  std::map<std::string, std::string> attrs;
  for (const auto& kv : s.attributes()) {
    attrs[kv.key()] = kv.value().has_int_value() ? std::to_string(kv.value().int_value())
                                                 : kv.value().string_value();
  }
  EXPECT_EQ(attrs.size(), 1 + kIntAttributeCount + 1);
  for (size_t i = 0; i < kIntAttributeCount; ++i) {
    EXPECT_EQ(attrs[std::string(IntAttributeName(static_cast<IntAttribute>(i)))],
              std::to_string(values[i]));
  }
  EXPECT_EQ(attrs["auth.principal"], "operator-key");
  EXPECT_EQ(attrs["rpc.system"], "grpc");

  // The batch is reused: after Clear, a smaller batch gives a body of its own.
  batch.Clear();
  batch.Append(spans[0]);
  ASSERT_TRUE(decoded.ParseFromString(std::string(batch.Frame())));
  EXPECT_EQ(decoded.resource_spans(0).scope_spans(0).spans_size(), 1);
}

// The exporter's batches: spans appended one at a time as they end (the buffer grows under
// them, past the one-byte and two-byte length classes of the framing), framed, cleared and
// refilled; an empty batch frames as a request without spans.
TEST(OtlpEncodingTest, SpansAppendedOneByOneFrameAsOneRequest) {
  const ResourceAttributes resource = {{"service.name", "xmtp-backend"},
                                       {"xmtp.backend.identifier", "deploy-a"}};
  const OtlpFraming framing(resource);
  EncodedSpans batch(framing);
  otlp::collector::trace::v1::ExportTraceServiceRequest decoded;
  ASSERT_TRUE(decoded.ParseFromString(std::string(batch.Frame())));
  ASSERT_EQ(decoded.resource_spans_size(), 1);
  EXPECT_EQ(decoded.resource_spans(0).resource().attributes(1).value().string_value(), "deploy-a");
  EXPECT_EQ(decoded.resource_spans(0).scope_spans(0).spans_size(), 0);

  for (const size_t count : {size_t{1}, size_t{2000}, size_t{3}}) {
    batch.Clear();
    for (size_t i = 0; i < count; ++i) {
      SpanData span;
      span.operation = RequestOperation(Rpc::kGetConfiguration);
      span.kind = SpanKind::kServer;
      span.context.trace_id.fill(1);
      span.context.span_id.fill(2);
      span.start_unix_ns = i;
      span.end_unix_ns = i + 1;
      span.rpc = Rpc::kGetConfiguration;
      batch.Append(span);
    }
    ASSERT_EQ(batch.count(), count);
    ASSERT_TRUE(decoded.ParseFromString(std::string(batch.Frame())));
    const auto& spans = decoded.resource_spans(0).scope_spans(0).spans();
    ASSERT_EQ(static_cast<size_t>(spans.size()), count);
    EXPECT_EQ(decoded.resource_spans(0).scope_spans(0).scope().name(), "xmtp-backend");
    for (size_t i = 0; i < count; ++i) {
      EXPECT_EQ(spans[static_cast<int>(i)].start_time_unix_nano(), i);
    }
    EXPECT_EQ(spans[0].name(), "xmtp.backend.v1.ConfigurationService/GetConfiguration");
  }
}

// Spans written as items elsewhere (the exporter's stages, WriteSpanItem) and appended in runs of
// every length from 1 to 40 spans, so the copy starts at every alignment and ends mid-line: the
// body is byte for byte the one Append builds span by span.
TEST(OtlpEncodingTest, EncodedItemsAppendedInRunsMatchSpanBySpan) {
  const OtlpFraming framing(ResourceAttributes{{"service.name", "t"}});
  EncodedSpans one_by_one(framing);
  EncodedSpans in_runs(framing);
  std::string items;
  size_t pending = 0;
  size_t run = 1;
  for (int i = 0; i < 900; ++i) {
    SpanData span;
    span.operation = static_cast<Operation>(i % 5);
    span.context.trace_id.fill(static_cast<uint8_t>(i + 1));
    span.context.span_id.fill(static_cast<uint8_t>(i + 2));
    span.start_unix_ns = 1'000'000 + static_cast<uint64_t>(i);
    span.end_unix_ns = span.start_unix_ns + 7;
    span.ints[static_cast<size_t>(IntAttribute::kRows)] = int64_t{1} << (i % 50);
    span.ints_set = i % 3 == 0 ? 0u : 1u << static_cast<unsigned>(IntAttribute::kRows);
    one_by_one.Append(span);
    const size_t at = items.size();
    const size_t bound = SpanItemBound(span);
    items.resize(at + bound);
    items.resize(at + WriteSpanItem(span, bound, items.data() + at));
    if (++pending == run) {
      in_runs.AppendEncoded(items, pending);
      items.clear();
      pending = 0;
      run = run % 40 + 1;
    }
  }
  in_runs.AppendEncoded(items, pending);
  EXPECT_EQ(in_runs.count(), one_by_one.count());
  EXPECT_EQ(in_runs.Frame(), one_by_one.Frame());
}

// WriteSpanItem writes a span's fields before their length: a span whose fields need a two- or
// three-byte length (a long tracestate, a very long API key name) is moved along after it. Each
// length class decodes with every optional field present (tracestate, parent, principal, error
// status), every integer size is patched into its attribute's lengths, and nothing is stored past
// the bound the caller reserved.
TEST(OtlpEncodingTest, ItemsOfEveryLengthClassDecodeWithinTheirBound) {
  const OtlpFraming framing(ResourceAttributes{{"service.name", "t"}});
  struct Case {
    size_t trace_state;  // characters after "k="
    size_t principal;
  };
  for (const Case& c : {Case{0, 0}, Case{0, 200}, Case{300, 0}, Case{500, 20000}}) {
    SCOPED_TRACE(testing::Message() << c.trace_state << " " << c.principal);
    SpanData span;
    span.operation = RequestOperation(Rpc::kPublish);
    span.kind = SpanKind::kServer;
    span.rpc = Rpc::kPublish;
    span.context.trace_id.fill(3);
    span.context.span_id.fill(4);
    span.parent_span_id.fill(5);
    span.error = true;
    if (c.trace_state > 0) {
      span.trace_state = "k=" + std::string(c.trace_state, 'v');
    }
    span.principal = std::string(c.principal, 'k');
    const int64_t values[kIntAttributeCount] = {1, 300, 70000, -5, 0, INT64_MAX};
    for (size_t i = 0; i < kIntAttributeCount; ++i) {
      span.ints[i] = values[i];
      span.ints_set |= 1u << i;
    }
    const size_t bound = SpanItemBound(span);
    std::string out(bound + 64, '\xee');
    const size_t bytes = WriteSpanItem(span, bound, out.data());
    EXPECT_LE(bytes, bound);
    EXPECT_EQ(out.substr(bound), std::string(64, '\xee'));

    EncodedSpans batch(framing);
    batch.AppendEncoded(std::string_view(out.data(), bytes), 1);
    otlp::collector::trace::v1::ExportTraceServiceRequest decoded;
    ASSERT_TRUE(decoded.ParseFromString(std::string(batch.Frame())));
    const auto& spans = decoded.resource_spans(0).scope_spans(0).spans();
    ASSERT_EQ(spans.size(), 1);
    EXPECT_EQ(spans[0].name(), "xmtp.backend.v1.PublishService/Publish");
    EXPECT_EQ(spans[0].kind(), otlp::trace::v1::Span::SPAN_KIND_SERVER);
    EXPECT_EQ(spans[0].trace_state(), span.trace_state);
    EXPECT_EQ(spans[0].parent_span_id(), std::string(8, '\x05'));
    EXPECT_EQ(spans[0].status().code(), otlp::trace::v1::Status::STATUS_CODE_ERROR);
    std::map<std::string, std::string> attrs;
    for (const auto& kv : spans[0].attributes()) {
      attrs[kv.key()] = kv.value().has_int_value() ? std::to_string(kv.value().int_value())
                                                   : kv.value().string_value();
    }
    for (size_t i = 0; i < kIntAttributeCount; ++i) {
      EXPECT_EQ(attrs[std::string(IntAttributeName(static_cast<IntAttribute>(i)))],
                std::to_string(values[i]));
    }
    EXPECT_EQ(attrs["rpc.system"], "grpc");
    EXPECT_EQ(attrs.count("auth.principal"), c.principal > 0 ? 1u : 0u);
    if (c.principal > 0) {
      EXPECT_EQ(attrs["auth.principal"], span.principal);
    }
  }
}

// verifies: OPS-019 — every operation of the span catalogue, as either kind, is exported under its
// own name: each name and kind is a precomputed snippet copied whole (the longest, a route table
// name of 67 bytes, near the snippet's size), and nothing is stored past the span's bound.
TEST(OtlpEncodingTest, EveryOperationIsExportedUnderItsNameAndKind) {
  const OtlpFraming framing(ResourceAttributes{{"service.name", "t"}});
  for (size_t i = 0; i < Vocabulary<Operation>::kCount; ++i) {
    const auto operation = static_cast<Operation>(i);
    for (const SpanKind kind : {SpanKind::kInternal, SpanKind::kServer}) {
      SCOPED_TRACE(testing::Message() << OperationName(operation) << " " << int(kind));
      SpanData span;
      span.operation = operation;
      span.kind = kind;
      span.context.trace_id.fill(1);
      span.context.span_id.fill(2);
      span.ints[static_cast<size_t>(IntAttribute::kRows)] = 7;
      span.ints_set = 1u << static_cast<unsigned>(IntAttribute::kRows);
      const size_t bound = SpanItemBound(span);
      std::string out(bound + 64, '\xee');
      const size_t bytes = WriteSpanItem(span, bound, out.data());
      EXPECT_EQ(out.substr(bound), std::string(64, '\xee'));

      EncodedSpans batch(framing);
      batch.AppendEncoded(std::string_view(out.data(), bytes), 1);
      otlp::collector::trace::v1::ExportTraceServiceRequest decoded;
      ASSERT_TRUE(decoded.ParseFromString(std::string(batch.Frame())));
      const auto& spans = decoded.resource_spans(0).scope_spans(0).spans();
      ASSERT_EQ(spans.size(), 1);
      EXPECT_EQ(spans[0].name(), OperationName(operation));
      EXPECT_EQ(static_cast<int>(spans[0].kind()), static_cast<int>(kind));
      ASSERT_EQ(spans[0].attributes_size(), 1);
      EXPECT_EQ(spans[0].attributes(0).key(), "xmtp.rows");
      EXPECT_EQ(spans[0].attributes(0).value().int_value(), 7);
    }
  }
}

// Log records (telemetry.otlp_logs) decode as an ExportLogsServiceRequest: the resource, time,
// severity, body, every value kind of attribute and the trace id of a completion line.
TEST(OtlpEncodingTest, LogRecordsDecodeAsAnExportLogsServiceRequest) {
  LogRecordData completion;
  completion.time_unix_ns = 1'700'000'000'123'456'789ULL;
  completion.level = LogLevel::kInfo;
  completion.message = "request completed";
  completion.fields = {{"method", std::string("/xmtp.backend.v1.QueryService/Query")},
                       {"duration_ms", 1.5},
                       {"response_size_bytes", uint64_t{300}},
                       {"count", int64_t{-2}},
                       {"trace_id", std::string("4bf92f3577b34da6a3ce929d0e0e4736")}};
  completion.trace_id = TraceIdFromHex("4bf92f3577b34da6a3ce929d0e0e4736");
  LogRecordData warning;
  warning.time_unix_ns = 5;
  warning.level = LogLevel::kWarn;
  warning.message = "database warning";
  const LogRecordData records[] = {completion, warning};

  const std::string body = EncodeExportLogsRequest(
      {{"service.name", "xmtp-backend"}, {"xmtp.backend.identifier", "deploy-a"}}, records);
  otlp::collector::logs::v1::ExportLogsServiceRequest decoded;
  ASSERT_TRUE(decoded.ParseFromString(body));
  ASSERT_EQ(decoded.resource_logs_size(), 1);
  const auto& rl = decoded.resource_logs(0);
  ASSERT_EQ(rl.resource().attributes_size(), 2);
  EXPECT_EQ(rl.resource().attributes(1).value().string_value(), "deploy-a");
  ASSERT_EQ(rl.scope_logs_size(), 1);
  EXPECT_EQ(rl.scope_logs(0).scope().name(), "xmtp-backend");
  ASSERT_EQ(rl.scope_logs(0).log_records_size(), 2);

  const auto& r = rl.scope_logs(0).log_records(0);
  EXPECT_EQ(r.time_unix_nano(), completion.time_unix_ns);
  EXPECT_EQ(r.observed_time_unix_nano(), completion.time_unix_ns);
  EXPECT_EQ(r.severity_number(), otlp::logs::v1::SEVERITY_NUMBER_INFO);
  EXPECT_EQ(r.severity_text(), "INFO");
  EXPECT_EQ(r.body().string_value(), "request completed");
  EXPECT_EQ(r.trace_id(),
            std::string("\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d\x0e\x0e\x47\x36", 16));
  ASSERT_EQ(r.attributes_size(), 5);
  EXPECT_EQ(r.attributes(0).key(), "method");
  EXPECT_EQ(r.attributes(0).value().string_value(), "/xmtp.backend.v1.QueryService/Query");
  EXPECT_EQ(r.attributes(1).value().double_value(), 1.5);
  EXPECT_EQ(r.attributes(2).value().int_value(), 300);
  EXPECT_EQ(r.attributes(3).value().int_value(), -2);
  EXPECT_EQ(r.attributes(4).value().string_value(), "4bf92f3577b34da6a3ce929d0e0e4736");

  const auto& w = rl.scope_logs(0).log_records(1);
  EXPECT_EQ(w.severity_number(), otlp::logs::v1::SEVERITY_NUMBER_WARN);
  EXPECT_EQ(w.severity_text(), "WARN");
  EXPECT_EQ(w.attributes_size(), 0);
  EXPECT_TRUE(w.trace_id().empty());
}

TEST(OtlpEndpointTest, AppendsTheTracesPath) {
  auto plain = ParseOtlpEndpoint("http://127.0.0.1:4318", OtlpProtocol::kHttpProtobuf);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->host, "127.0.0.1");
  EXPECT_EQ(plain->port, "4318");
  EXPECT_EQ(plain->path, "/v1/traces");
  EXPECT_EQ(plain->logs_path, "/v1/logs");
  auto tls = ParseOtlpEndpoint("HTTPS://collector.example/otlp/", OtlpProtocol::kHttpProtobuf);
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->port, "443");
  EXPECT_EQ(tls->path, "/otlp/v1/traces");
  EXPECT_EQ(tls->logs_path, "/otlp/v1/logs");
  auto full = ParseOtlpEndpoint("http://[::1]:9/v1/traces", OtlpProtocol::kHttpProtobuf);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->host, "::1");
  EXPECT_EQ(full->path, "/v1/traces");
  EXPECT_EQ(full->logs_path, "/v1/logs");  // a traces URL names the base of both
  EXPECT_FALSE(ParseOtlpEndpoint("ftp://x").ok());
  EXPECT_FALSE(ParseOtlpEndpoint("http://:80").ok());
}

// verifies: OPS-015 — a batch to an unreachable collector is counted, and Submit never waits.
TEST(OtlpExporterTest, FailedBatchesAreCountedAndShutdownIsBounded) {
  Metrics metrics("test");
  // Port 9 on 127.0.0.1 (discard) is closed on the test machine: the connect is refused.
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = "http://127.0.0.1:9",
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 4,
                                               .max_batch = 2,
                                               .interval = std::chrono::milliseconds(10),
                                               .request_timeout = std::chrono::milliseconds(500)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  for (int i = 0; i < 2; ++i) {
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  const auto start = std::chrono::steady_clock::now();
  (*exporter)->Shutdown(start + std::chrono::seconds(2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_NE(metrics.Exposition().find("xmtp_telemetry_export_failures_total "), std::string::npos);
  // A full queue drops instead of waiting.
  for (int i = 0; i < 10; ++i) {
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  EXPECT_GE((*exporter)->dropped(), 10u);
}

// verifies: OPS-015 — a collector that accepts and never answers costs each batch its request
// timeout, counts it failed, and leaves the exporter able to post the next batch (the abandoned
// exchange is dropped with its connection).
TEST(OtlpExporterTest, ACollectorThatNeverAnswersTimesOutEachBatch) {
  // Listening without accepting: the kernel completes the handshake, nobody reads or answers.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::listen(listener, 8), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string endpoint = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));

  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = endpoint,
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 8,
                                               .max_batch = 1,
                                               .interval = std::chrono::milliseconds(10),
                                               .request_timeout = std::chrono::milliseconds(200)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  auto failures = [&] {
    const std::string text = metrics.Exposition();
    const std::string_view name = "\nxmtp_telemetry_export_failures_total ";
    const size_t at = text.find(name);
    return at == std::string::npos ? 0 : std::stoi(text.substr(at + name.size()));
  };
  tracer.Start(Operation::kTailerPoll, {}).End();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (failures() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(failures(), 1);
  tracer.Start(Operation::kTailerPoll, {}).End();  // the next batch: a new connection, again
  while (failures() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(failures(), 2);
  const auto start = std::chrono::steady_clock::now();
  (*exporter)->Shutdown(start + std::chrono::seconds(2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ((*exporter)->exported_batches(), 0u);
  ::close(listener);
}

}  // namespace
}  // namespace xb::telemetry

namespace xb::telemetry {
namespace {

// A collector for the exporter tests: accepts one connection at a time on 127.0.0.1, reads each
// HTTP/1.1 POST (headers, then Content-Length bytes), answers 200, and records how many spans
// each body held. Stops with the test.
class CountingCollector {
 public:
  CountingCollector() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(listener_, 4), 0);
    socklen_t length = sizeof(address);
    EXPECT_EQ(::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length), 0);
    endpoint_ = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
    thread_ = std::thread([this] { Serve(); });
  }
  ~CountingCollector() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    {
      std::lock_guard lock(mu_);
      if (connection_ >= 0) {
        ::shutdown(connection_, SHUT_RDWR);
      }
    }
    thread_.join();
  }

  const std::string& endpoint() const { return endpoint_; }
  // Spans per request received so far, in arrival order.
  std::vector<int> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // Connections accepted so far.
  int connections() const {
    std::lock_guard lock(mu_);
    return accepted_;
  }
  // The collector reads its next request whole, then closes the connection without answering
  // (or recording it): a kept connection lost between a request and its answer.
  void CloseInsteadOfNextAnswer() { close_instead_of_answer_ = true; }
  // Waits (up to 10 s) until `n` requests arrived.
  bool WaitForRequests(size_t n) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (requests().size() >= n) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  void Serve() {
    while (true) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) {
        return;
      }
      {
        std::lock_guard lock(mu_);
        connection_ = fd;
        ++accepted_;
      }
      std::string buffer;
      char chunk[65536];
      while (true) {
        const size_t end = buffer.find("\r\n\r\n");
        if (end != std::string::npos) {
          const size_t at = buffer.find("Content-Length: ");
          const size_t body =
              at == std::string::npos ? 0 : std::stoul(buffer.substr(at + 16, end - at - 16));
          if (buffer.size() >= end + 4 + body) {
            if (close_instead_of_answer_.exchange(false)) {
              break;
            }
            otlp::collector::trace::v1::ExportTraceServiceRequest decoded;
            const bool parsed = decoded.ParseFromString(buffer.substr(end + 4, body));
            {
              std::lock_guard lock(mu_);
              requests_.push_back(parsed && decoded.resource_spans_size() == 1
                                      ? WholeSpans(decoded.resource_spans(0).scope_spans(0))
                                      : -1);
            }
            buffer.erase(0, end + 4 + body);
            const std::string_view reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
            if (::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0) {
              break;
            }
            continue;
          }
        }
        const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n <= 0) {
          break;
        }
        buffer.append(chunk, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mu_);
        connection_ = -1;
      }
      ::close(fd);
    }
  }

  // The number of spans, or -1 when one is not as every test span is (a name, both ids).
  static int WholeSpans(const otlp::trace::v1::ScopeSpans& scope) {
    for (const auto& span : scope.spans()) {
      if (span.name().empty() || span.trace_id().size() != 16 || span.span_id().size() != 8) {
        return -1;
      }
    }
    return scope.spans_size();
  }

  int listener_ = -1;
  std::string endpoint_;
  mutable std::mutex mu_;
  std::vector<int> requests_;  // guarded by mu_
  int connection_ = -1;        // guarded by mu_
  int accepted_ = 0;           // guarded by mu_
  std::atomic<bool> close_instead_of_answer_{false};
  std::thread thread_;
};

// A full batch goes at once, without the partial one being filled behind it; the partial one
// goes after its interval; spans still queued at shutdown are flushed; a full queue drops.
TEST(OtlpExporterTest, FullBatchesGoAtOncePartialOnesAfterTheirInterval) {
  CountingCollector collector;
  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 12,
                                               .max_batch = 4,
                                               .interval = std::chrono::milliseconds(1000),
                                               .request_timeout = std::chrono::seconds(3)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) {  // one full batch of 4, then one span in the next
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  // Behaviour, not speed: the margins (700 ms either side of "at once" and "after 1 s") are wide
  // enough for a sanitizer build on a busy machine.
  ASSERT_TRUE(collector.WaitForRequests(1));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(700));
  ASSERT_TRUE(collector.WaitForRequests(2));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(700));
  EXPECT_EQ(collector.requests(), (std::vector<int>{4, 1}));

  // A partial batch at shutdown is flushed.
  for (int i = 0; i < 3; ++i) {
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  (*exporter)->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  EXPECT_EQ(collector.requests(), (std::vector<int>{4, 1, 3}));
  EXPECT_EQ((*exporter)->exported_batches(), 3u);
  EXPECT_EQ((*exporter)->dropped(), 0u);
}

// An exporter that sends every span as a batch of its own to a CountingCollector, and a tracer
// that ends spans into it.
class OneSpanBatchesTest : public testing::Test {
 protected:
  // Starts the exporter, then exports one span and waits until the collector has its request.
  void StartAndExportOne(std::chrono::milliseconds interval) {
    auto exporter =
        OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                                 .protocol = OtlpProtocol::kHttpProtobuf,
                                                 .resource = {{"service.name", "t"}},
                                                 .max_queue = 8,
                                                 .max_batch = 1,
                                                 .interval = interval,
                                                 .request_timeout = std::chrono::seconds(3)},
                             metrics);
    ASSERT_TRUE(exporter.ok());
    this->exporter = std::move(exporter).value();
    this->exporter->Start();
    tracer.emplace(metrics, TracerOptions{.sample_ratio = 1.0, .sink = this->exporter.get()});
    ExportOne();
    ASSERT_TRUE(collector.WaitForRequests(1));
  }
  void ExportOne() { tracer->Start(Operation::kTailerPoll, {}).End(); }
  bool AnyExportFailed() const {
    return metrics.Exposition().find("xmtp_telemetry_export_failures_total ") != std::string::npos;
  }

  CountingCollector collector;
  Metrics metrics{"test"};
  std::unique_ptr<OtlpExporter> exporter;
  std::optional<Tracer> tracer;
};

// A batch's answer is read with the next batch, or when the exporter next wakes with nothing to
// send: with no batch behind it, the last one still counts as exported within about an interval,
// without a shutdown.
TEST_F(OneSpanBatchesTest, TheLastBatchsAnswerIsReadWithinAnInterval) {
  ASSERT_NO_FATAL_FAILURE(StartAndExportOne(std::chrono::milliseconds(100)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exporter->exported_batches() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(exporter->exported_batches(), 1u);
  exporter->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  EXPECT_EQ(collector.requests(), (std::vector<int>{1}));
  EXPECT_FALSE(AnyExportFailed());
}

// verifies: OPS-015 — a batch written over a kept connection that the collector closed before
// answering is not lost and not counted failed: it goes once more, on a new connection.
TEST_F(OneSpanBatchesTest, ABatchUnansweredOnAKeptConnectionGoesAgainOnANewOne) {
  ASSERT_NO_FATAL_FAILURE(StartAndExportOne(std::chrono::seconds(60)));
  collector.CloseInsteadOfNextAnswer();
  // Written whole on the kept connection; its answer, read at shutdown, never comes.
  ExportOne();
  exporter->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  EXPECT_EQ(collector.requests(), (std::vector<int>{1, 1}));
  EXPECT_EQ(collector.connections(), 2);
  EXPECT_EQ(exporter->exported_batches(), 2u);
  EXPECT_FALSE(AnyExportFailed());
}

// verifies: OPS-015 — spans beyond max_queue that the exporter has not taken yet are dropped
// and counted, never waited for; the ones kept are exported whole.
TEST(OtlpExporterTest, AFullQueueDropsAndCounts) {
  CountingCollector collector;
  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 6,
                                               .max_batch = 4,
                                               .interval = std::chrono::seconds(60),
                                               .request_timeout = std::chrono::seconds(3)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  // Not started: nothing is taken, so the queue fills.
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  for (int i = 0; i < 10; ++i) {
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  EXPECT_EQ((*exporter)->dropped(), 4u);
  (*exporter)->Start();
  (*exporter)->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  EXPECT_EQ(collector.requests(), (std::vector<int>{4, 2}));
}

// verifies: OPS-015 — spans staged on many threads at once all reach the collector, in batches
// no larger than max_batch, with none dropped: the stages' moves and the interval sweep (which
// takes what threads that have stopped ending spans still hold) lose and repeat nothing.
TEST(OtlpExporterTest, SpansStagedOnManyThreadsAllArrive) {
  constexpr int kThreads = 4;
  constexpr int kSpansPerThread = 5000;
  constexpr int kBatch = 512;
  CountingCollector collector;
  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = size_t{1} << 20,
                                               .max_batch = kBatch,
                                               .interval = std::chrono::milliseconds(50),
                                               .request_timeout = std::chrono::seconds(10)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tracer] {
      for (int i = 0; i < kSpansPerThread; ++i) {
        Span span = tracer.Start(Operation::kStreamFetch, {});
        span.Set(IntAttribute::kRows, i);
        span.End();
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  // Whatever the finished threads left staged goes with the next sweep, before shutdown.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int received = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    received = 0;
    for (int n : collector.requests()) {
      received += n;
    }
    if (received >= kThreads * kSpansPerThread) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(received, kThreads * kSpansPerThread);
  (*exporter)->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  int total = 0;
  for (int n : collector.requests()) {
    EXPECT_GE(n, 1);  // -1: a span did not decode whole
    EXPECT_LE(n, kBatch);
    total += n;
  }
  EXPECT_EQ(total, kThreads * kSpansPerThread);
  EXPECT_EQ((*exporter)->dropped(), 0u);
}

// A thread that ends a few spans and then none for a while (a quiet tailer, an idle pool thread)
// does not keep them: the exporter's sweep sends them after its interval, the thread still alive.
TEST(OtlpExporterTest, AQuietThreadsStagedSpansGoAfterTheInterval) {
  CountingCollector collector;
  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 1000,
                                               .max_batch = 1000,
                                               .interval = std::chrono::milliseconds(200),
                                               .request_timeout = std::chrono::seconds(3)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::thread quiet([&] {
    for (int i = 0; i < 10; ++i) {
      tracer.Start(Operation::kTailerPoll, {}).End();
    }
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return done; });
  });
  EXPECT_TRUE(collector.WaitForRequests(1));
  EXPECT_EQ(collector.requests(), (std::vector<int>{10}));
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_all();
  quiet.join();
  (*exporter)->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  EXPECT_EQ((*exporter)->dropped(), 0u);
}

// A span larger than a thread's stage buffer (a long API key name as auth.principal) moves the
// stage and grows it: the spans before, the large one and the ones after all arrive whole.
TEST(OtlpExporterTest, ASpanLargerThanTheStageArrivesWhole) {
  CountingCollector collector;
  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 100,
                                               .max_batch = 100,
                                               .interval = std::chrono::seconds(60),
                                               .request_timeout = std::chrono::seconds(3)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  tracer.Start(Operation::kTailerPoll, {}).End();
  {
    Span large = tracer.Start(Operation::kTailerPoll, {});
    large.SetPrincipal(std::string(OtlpExporter::kStageBytes + 1000, 'k'));
  }
  tracer.Start(Operation::kTailerPoll, {}).End();
  (*exporter)->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  EXPECT_EQ(collector.requests(), (std::vector<int>{3}));
  EXPECT_EQ((*exporter)->dropped(), 0u);
}

// Bodies larger than the splice pipe go in several rounds (spliced_send.h), and a batch's buffer
// is written again only once its exchange is over: every span of every batch arrives whole.
TEST(OtlpExporterTest, BodiesLargerThanThePipeArriveWhole) {
  constexpr size_t kBatch = 20000;  // about 1.4 MB of tailer.poll spans; the pipe holds 1 MiB
  CountingCollector collector;
  Metrics metrics("test");
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = collector.endpoint(),
                                               .protocol = OtlpProtocol::kHttpProtobuf,
                                               .resource = {{"service.name", "t"}},
                                               .max_queue = 3 * kBatch,
                                               .max_batch = kBatch,
                                               .interval = std::chrono::seconds(60),
                                               .request_timeout = std::chrono::seconds(10)},
                           metrics);
  ASSERT_TRUE(exporter.ok());
  (*exporter)->Start();
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter->get()});
  for (size_t i = 0; i < 5 * kBatch; ++i) {
    Span span = tracer.Start(Operation::kTailerPoll, {});
    span.Set(IntAttribute::kRows, static_cast<int64_t>(i));
    span.End();
    if (i % kBatch == kBatch - 1) {
      ASSERT_TRUE(collector.WaitForRequests(i / kBatch + 1));  // the queue holds three
    }
  }
  (*exporter)->Shutdown(std::chrono::steady_clock::now() + std::chrono::seconds(10));
  const int n = static_cast<int>(kBatch);
  EXPECT_EQ(collector.requests(), (std::vector<int>{n, n, n, n, n}));
  EXPECT_EQ((*exporter)->dropped(), 0u);
}

}  // namespace
}  // namespace xb::telemetry
