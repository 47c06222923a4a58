// OTLP over gRPC: the request framing, the verdict on an answer (trailers, trailers-only,
// statuses), the endpoint rule, and the exporter against real HTTP/2 servers on 127.0.0.1
// (net/testing/loopback_servers.h): h2c and h2 over TLS, grpc-status 0 and UNAVAILABLE, and a
// collector that accepts and never answers.
#include "telemetry/otlp_grpc.h"

#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/testing/loopback_servers.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "telemetry/otlp_exporter.h"
#include "telemetry/tracer.h"

namespace xb::telemetry {
namespace {

namespace otlp = opentelemetry::proto;
using Clock = std::chrono::steady_clock;
using net::testing::LoopbackServer;
using net::testing::ScriptedReply;
using net::testing::ServedRequest;

TEST(GrpcFraming, RequestBodyIsTheMessageBehindItsPrefix) {
  EXPECT_EQ(GrpcRequestBody(""), std::string("\0\0\0\0\0", 5));
  const std::string message(70000, 'm');
  const std::string body = GrpcRequestBody(message);
  ASSERT_EQ(body.size(), 5 + message.size());
  EXPECT_EQ(body.substr(0, 5), std::string("\x00\x00\x01\x11\x70", 5));  // 0x011170 = 70000
  EXPECT_EQ(body.substr(5), message);
}

net::HttpResponse Answer(unsigned status, std::vector<net::Header> headers,
                         std::vector<net::Header> trailers) {
  return net::HttpResponse{
      .status = status, .headers = std::move(headers), .trailers = std::move(trailers)};
}

TEST(GrpcFraming, VerdictReadsTrailersOrATrailersOnlyHead) {
  const net::Header grpc{"content-type", "application/grpc"};
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {grpc}, {{"grpc-status", "0"}})), GrpcVerdict::kOk);
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {{"content-type", "application/grpc+proto"}},
                                   {{"grpc-message", ""}, {"grpc-status", "0"}})),
            GrpcVerdict::kOk);
  // Trailers-only (an error, usually): the status is in the one header section.
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {grpc, {"grpc-status", "0"}}, {})), GrpcVerdict::kOk);
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {grpc, {"grpc-status", "14"}}, {})),
            GrpcVerdict::kErrorStatus);
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {grpc}, {{"grpc-status", "14"}})),
            GrpcVerdict::kErrorStatus);
  // A status in the head does not stand for trailers that came without one.
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {grpc, {"grpc-status", "0"}}, {{"grpc-message", "x"}})),
            GrpcVerdict::kNoStatus);
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {grpc}, {})), GrpcVerdict::kNoStatus);
  EXPECT_EQ(
      JudgeGrpcAnswer(Answer(200, {{"content-type", "application/grpcx"}}, {{"grpc-status", "0"}})),
      GrpcVerdict::kNotGrpc);
  EXPECT_EQ(JudgeGrpcAnswer(Answer(200, {}, {{"grpc-status", "0"}})), GrpcVerdict::kNotGrpc);
  EXPECT_EQ(JudgeGrpcAnswer(Answer(503, {grpc}, {{"grpc-status", "0"}})), GrpcVerdict::kHttpStatus);
}

TEST(GrpcFraming, EndpointIsAnOriginAndTheServiceThePath) {
  auto plain = ParseOtlpEndpoint("http://127.0.0.1:4317");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->grpc);
  EXPECT_EQ(plain->origin, "http://127.0.0.1:4317");
  EXPECT_EQ(plain->path, "/opentelemetry.proto.collector.trace.v1.TraceService/Export");
  EXPECT_EQ(plain->logs_path, "/opentelemetry.proto.collector.logs.v1.LogsService/Export");
  auto tls = ParseOtlpEndpoint("HTTPS://user@[::1]/");
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->origin, "https://[::1]");  // userinfo is not sent
  EXPECT_FALSE(ParseOtlpEndpoint("http://collector:4317/v1/traces").ok());
  EXPECT_FALSE(ParseOtlpEndpoint("http://collector:4317?a=b").ok());
  EXPECT_TRUE(
      ParseOtlpEndpoint("http://collector:4317/v1/traces", OtlpProtocol::kHttpProtobuf).ok());
}

// A gRPC collector on 127.0.0.1 (its own thread): checks each call as a gRPC client must make it,
// decodes it, and answers `grpc_status` in the trailers.
class GrpcCollector {
 public:
  explicit GrpcCollector(std::string grpc_status, bool tls = false) : status_(grpc_status) {
    if (tls) {
      pki_ = net::testing::MakeTestPki();
    }
    server_ = std::make_unique<LoopbackServer>(
        io_, LoopbackServer::Protocol::kHttp2, tls ? net::testing::ServerTls(*pki_, "h2") : nullptr,
        [this](const ServedRequest& request) { return Serve(request); });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~GrpcCollector() {
    io_.stop();
    thread_.join();
  }
  std::string endpoint(const char* scheme = "http", const char* host = "127.0.0.1") const {
    return std::string(scheme) + "://" + host + ":" + std::to_string(server_->port());
  }
  const std::string& ca_file() const { return pki_->ca_file; }
  int accepted() const { return server_->accepted(); }  // read after the exporter stopped
  // Spans and log records received in well-formed calls, and calls that were not.
  int spans() {
    std::lock_guard lock(mu_);
    return spans_;
  }
  int records() {
    std::lock_guard lock(mu_);
    return records_;
  }
  int malformed() {
    std::lock_guard lock(mu_);
    return malformed_;
  }

 private:
  ScriptedReply Serve(const ServedRequest& request) {
    const bool framed =
        request.method == "POST" && request.body.size() >= 5 && request.body[0] == '\0' &&
        request.Header("content-type") == "application/grpc" &&
        request.Header("te") == "trailers" && !request.Header("grpc-timeout").empty();
    const std::string message = framed ? request.body.substr(5) : std::string();
    otlp::collector::trace::v1::ExportTraceServiceRequest traces;
    otlp::collector::logs::v1::ExportLogsServiceRequest logs;
    std::lock_guard lock(mu_);
    if (framed && request.path == std::string(kGrpcTraceExportPath) &&
        traces.ParseFromString(message)) {
      spans_ += traces.resource_spans(0).scope_spans(0).spans_size();
    } else if (framed && request.path == std::string(kGrpcLogsExportPath) &&
               logs.ParseFromString(message)) {
      records_ += logs.resource_logs(0).scope_logs(0).log_records_size();
    } else {
      ++malformed_;
    }
    return ScriptedReply{.headers = {{"content-type", "application/grpc"}},
                         .body = std::string("\0\0\0\0\0", 5),  // an empty response message
                         .trailers = {{"grpc-status", status_}}};
  }

  const std::string status_;
  boost::asio::io_context io_;
  std::unique_ptr<net::testing::TestPki> pki_;
  std::unique_ptr<LoopbackServer> server_;
  std::thread thread_;
  std::mutex mu_;
  int spans_ = 0;  // guarded by mu_
  int records_ = 0;
  int malformed_ = 0;
};

std::unique_ptr<OtlpExporter> GrpcExporter(const std::string& endpoint, Metrics& metrics,
                                           size_t max_batch = 4) {
  auto exporter =
      OtlpExporter::Create(OtlpExporterOptions{.endpoint = endpoint,
                                               .resource = {{"service.name", "t"}},
                                               .max_batch = max_batch,
                                               .interval = std::chrono::milliseconds(50),
                                               .request_timeout = std::chrono::milliseconds(1500)},
                           metrics);
  EXPECT_TRUE(exporter.ok());
  (*exporter)->Start();
  return std::move(exporter).value();
}

bool CountsFailures(const Metrics& metrics) {
  return metrics.Exposition().find("xmtp_telemetry_export_failures_total ") != std::string::npos;
}

// Spans and log records arrive as well-formed unary calls over one kept h2c connection.
TEST(OtlpGrpcExporterTest, SpansAndRecordsArriveOverOneH2cConnection) {
  GrpcCollector collector("0");
  Metrics metrics("test");
  auto exporter = GrpcExporter(collector.endpoint(), metrics);
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter.get()});
  for (int i = 0; i < 12; ++i) {  // three full batches
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  LogRecordData record;
  record.time_unix_ns = 1;
  record.message = "hello";
  exporter->SubmitLog(std::move(record));
  exporter->Shutdown(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(collector.spans(), 12);
  EXPECT_EQ(collector.records(), 1);
  EXPECT_EQ(collector.malformed(), 0);
  EXPECT_GE(exporter->exported_batches(), 4u);
  EXPECT_EQ(collector.accepted(), 1);
  EXPECT_FALSE(CountsFailures(metrics));
}

// https:// is h2 chosen by ALPN, trusting the system store (SSL_CERT_FILE here: the test CA).
TEST(OtlpGrpcExporterTest, TlsEndpointIsH2WithTheSystemTrustStore) {
  GrpcCollector collector("0", /*tls=*/true);
  ASSERT_EQ(::setenv("SSL_CERT_FILE", collector.ca_file().c_str(), 1), 0);
  Metrics metrics("test");
  auto exporter = GrpcExporter(collector.endpoint("https", "localhost"), metrics);
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter.get()});
  for (int i = 0; i < 4; ++i) {
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  exporter->Shutdown(Clock::now() + std::chrono::seconds(5));
  ::unsetenv("SSL_CERT_FILE");
  EXPECT_EQ(collector.spans(), 4);
  EXPECT_FALSE(CountsFailures(metrics));
}

// verifies: OPS-015 — a collector answering grpc-status UNAVAILABLE counts every batch failed.
TEST(OtlpGrpcExporterTest, ErrorStatusCountsAFailedBatch) {
  GrpcCollector collector("14");
  Metrics metrics("test");
  auto exporter = GrpcExporter(collector.endpoint(), metrics);
  Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter.get()});
  for (int i = 0; i < 4; ++i) {
    tracer.Start(Operation::kTailerPoll, {}).End();
  }
  exporter->Shutdown(Clock::now() + std::chrono::seconds(5));
  EXPECT_EQ(collector.spans(), 4);  // received, and refused
  EXPECT_EQ(exporter->exported_batches(), 0u);
  EXPECT_TRUE(CountsFailures(metrics));
}

// verifies: OPS-015 — unreachable, or accepting and never answering: each batch fails within
// its request timeout, and shutdown stays bounded.
TEST(OtlpGrpcExporterTest, UnreachableOrSilentCollectorFailsWithinTheTimeout) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const std::string silent_endpoint =
      "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  for (const std::string& endpoint : {std::string("http://127.0.0.1:9"), silent_endpoint}) {
    Metrics metrics("test");
    auto exporter = GrpcExporter(endpoint, metrics, /*max_batch=*/1);
    Tracer tracer(metrics, TracerOptions{.sample_ratio = 1.0, .sink = exporter.get()});
    const auto start = Clock::now();
    tracer.Start(Operation::kTailerPoll, {}).End();
    while (!CountsFailures(metrics) && Clock::now() - start < std::chrono::seconds(5)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(CountsFailures(metrics)) << endpoint;
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2500)) << endpoint;
    const auto stopping = Clock::now();
    exporter->Shutdown(stopping + std::chrono::seconds(1));
    EXPECT_LT(Clock::now() - stopping, std::chrono::milliseconds(1800)) << endpoint;
  }
}

}  // namespace
}  // namespace xb::telemetry
