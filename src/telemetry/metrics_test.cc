#include "telemetry/metrics.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace xb::telemetry {
namespace {

// The OPS section 5 metric catalogue, copied from the spec, with the Prometheus type and whether
// this implementation treats the family as failure-only.
struct CatalogueRow {
  std::string_view name;
  std::string_view type;
  bool failure_only;
};
constexpr CatalogueRow kCatalogue[] = {
    {"grpc_server_started_total", "counter", false},
    {"grpc_server_handled_total", "counter", false},
    {"grpc_server_handling_seconds", "histogram", false},
    {"grpc_server_in_flight", "gauge", false},
    {"grpc_server_request_bytes_total", "counter", false},
    {"grpc_server_response_bytes_total", "counter", false},
    {"xmtp_operation_duration_seconds", "histogram", false},
    {"xmtp_telemetry_export_failures_total", "counter", true},
    {"xmtp_db_released_open_transactions_total", "counter", true},
    {"xmtp_db_errors_total", "counter", true},
    {"xmtp_publish_envelopes_total", "counter", false},
    {"xmtp_publish_rejections_total", "counter", true},
    {"xmtp_scw_verifications_total", "counter", false},
    {"xmtp_stream_sessions", "gauge", false},
    {"xmtp_stream_topics_registered", "gauge", false},
    {"xmtp_stream_frames_sent_total", "counter", false},
    {"xmtp_stream_frames_received_total", "counter", false},
    {"xmtp_stream_envelopes_sent_total", "counter", false},
    {"xmtp_stream_updates_total", "counter", false},
    {"xmtp_stream_ended_total", "counter", false},
    {"xmtp_stream_outbound_wait_seconds", "histogram", false},
    {"xmtp_stream_fetch_wait_seconds", "histogram", false},
    {"xmtp_tailer_polls_total", "counter", false},
    {"xmtp_tailer_rows_total", "counter", false},
    {"xmtp_tailer_gap_ranges", "gauge", false},
    {"xmtp_tailer_restarts_total", "counter", false},
    {"xmtp_tailer_ready", "gauge", false},
    {"xmtp_boundary_advances_total", "counter", false},
    {"xmtp_backend_ready", "gauge", false},
    {"xmtp_auth_rejections_total", "counter", true},
    {"xmtp_auth_jwks_refresh_total", "counter", false},
    {"xmtp_auth_keys", "gauge", false},
    {"xmtp_push_recipients_total", "counter", false},
    {"xmtp_push_deliveries_total", "counter", false},
    {"xmtp_push_dispatcher", "gauge", false},
    {"xmtp_push_subscriptions_total", "counter", false},
    {"xmtp_backend_info", "gauge", false},
};
static_assert(std::size(kCatalogue) == Metrics::kFamilyCount);

// Our extension families (docs/telemetry.md), exposed after the catalogue in this order.
constexpr CatalogueRow kExtensions[] = {
    {"xmtp_net_accept_failures_total", "counter", true},
    {"xmtp_net_connections", "gauge", false},
    {"xmtp_net_connections_closed_total", "counter", false},
    {"xmtp_db_failures_total", "counter", true},
    {"xmtp_log_lines_suppressed_total", "counter", true},
    {"xmtp_ext_prune_envelopes_total", "counter", false},
    {"xmtp_ext_prune_pass_seconds", "histogram", false},
};
static_assert(std::size(kExtensions) == Metrics::kExtensionFamilyCount);

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

bool HasLine(const std::string& text, std::string_view line) {
  for (const std::string& l : Lines(text)) {
    if (l == line) {
      return true;
    }
  }
  return false;
}

bool Mentions(const std::string& text, std::string_view name) {
  return text.find("# TYPE " + std::string(name) + " ") != std::string::npos;
}

void RecordEveryFailureOnlyFamily(Metrics& m) {
  m.ExportFailure();
  m.db().released_open_transactions.Inc();
  m.db().errors.Inc(DbErrorKind::kTimeout);
  m.api().publish_rejections.Inc(PublishRejectionReason::kHandleTaken);
  m.auth().rejections.Inc(AuthRejectionReason::kNotYetValid);
  m.net().accept_failures.Inc(AcceptFailureReason::kDescriptors);
  m.db().failures.Inc(DbFailureCause::kDiskFull);
  m.log().suppressed.Inc(SuppressedLine::kStoreFailed);
}

constexpr std::string_view kPublishLabels =
    R"(grpc_service="xmtp.backend.v1.PublishService",grpc_method="Publish",grpc_type="unary")";

// verifies: OPS-016
TEST(MetricsTest, EveryNonFailureFamilyIsDescribedFromTheStart) {
  const Metrics m("1.2.3");
  const std::string text = m.Exposition();
  for (const CatalogueRow& row : kCatalogue) {
    const std::string help = "# HELP " + std::string(row.name) + " ";
    const std::string type = "# TYPE " + std::string(row.name) + " " + std::string(row.type);
    if (row.failure_only) {
      EXPECT_EQ(text.find(std::string(row.name)), std::string::npos) << row.name;
    } else {
      EXPECT_NE(text.find(help), std::string::npos) << row.name;
      EXPECT_TRUE(HasLine(text, type)) << type;
    }
  }
}

// verifies: OPS-016
TEST(MetricsTest, FailureOnlyFamiliesAppearAfterTheirFirstEvent) {
  Metrics m("1.2.3");
  EXPECT_FALSE(Mentions(m.Exposition(), "xmtp_db_errors_total"));
  m.db().errors.Inc(DbErrorKind::kConnection);
  std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(text, "# TYPE xmtp_db_errors_total counter"));
  // Once present, every kind is shown so rates have no gaps.
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_errors_total{kind="timeout"} 0)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_errors_total{kind="invariant"} 0)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_errors_total{kind="connection"} 1)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_errors_total{kind="other"} 0)"));
  // The other failure-only families are still absent.
  EXPECT_FALSE(Mentions(text, "xmtp_telemetry_export_failures_total"));
  EXPECT_FALSE(Mentions(text, "xmtp_auth_rejections_total"));

  RecordEveryFailureOnlyFamily(m);
  text = m.Exposition();
  for (const CatalogueRow& row : kCatalogue) {
    EXPECT_TRUE(HasLine(text, "# TYPE " + std::string(row.name) + " " + std::string(row.type)))
        << row.name;
  }
  EXPECT_TRUE(HasLine(text, "xmtp_telemetry_export_failures_total 1"));
  EXPECT_TRUE(HasLine(text, "xmtp_db_released_open_transactions_total 1"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_publish_rejections_total{reason="REASON_HANDLE_TAKEN"} 1)"));
  EXPECT_TRUE(
      HasLine(text, R"(xmtp_publish_rejections_total{reason="REASON_MALFORMED_PAYLOAD"} 0)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_auth_rejections_total{reason="not_yet_valid"} 1)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_auth_rejections_total{reason="unsupported_alg"} 0)"));
}

// The connection-limit extension families: the gauge and the closed counter from the start with
// every reason at zero, the accept failures only after their first event (issue 28).
TEST(MetricsTest, NetExtensionFamilies) {
  Metrics m("v");
  std::string text = m.Exposition();
  EXPECT_FALSE(Mentions(text, "xmtp_net_accept_failures_total"));
  EXPECT_TRUE(HasLine(text, "xmtp_net_connections 0"));
  for (std::string_view reason : {"refused", "handshake_timeout", "header_read_timeout",
                                  "idle_timeout", "control_frame_flood", "bad_proxy_header"}) {
    EXPECT_TRUE(HasLine(
        text, "xmtp_net_connections_closed_total{reason=\"" + std::string(reason) + "\"} 0"))
        << reason;
  }
  m.net().connections.Inc();
  m.net().connections_closed.Inc(ConnectionCloseReason::kControlFrameFlood);
  m.net().accept_failures.Inc(AcceptFailureReason::kMemory);
  text = m.Exposition();
  EXPECT_TRUE(HasLine(text, "xmtp_net_connections 1"));
  EXPECT_TRUE(
      HasLine(text, R"(xmtp_net_connections_closed_total{reason="control_frame_flood"} 1)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_net_accept_failures_total{reason="memory"} 1)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_net_accept_failures_total{reason="descriptors"} 0)"));
}

TEST(MetricsTest, FamiliesAppearOnceInCatalogueOrder) {
  Metrics m("v");
  RecordEveryFailureOnlyFamily(m);
  std::vector<std::string> types;
  std::set<std::string> seen;
  for (const std::string& line : Lines(m.Exposition())) {
    if (line.starts_with("# TYPE ")) {
      const std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(seen.insert(name).second) << name;
      types.push_back(name);
    }
  }
  ASSERT_EQ(types.size(), std::size(kCatalogue) + std::size(kExtensions));
  for (size_t i = 0; i < types.size(); ++i) {
    EXPECT_EQ(types[i], i < std::size(kCatalogue) ? kCatalogue[i].name
                                                  : kExtensions[i - std::size(kCatalogue)].name);
  }
}

// Extension families (docs/telemetry.md): failure-only, listed after the whole catalogue, with
// every word of their vocabulary once recorded.
TEST(MetricsTest, ExtensionFamiliesFollowTheCatalogue) {
  Metrics m("v");
  EXPECT_FALSE(Mentions(m.Exposition(), "xmtp_db_failures_total"));
  EXPECT_FALSE(Mentions(m.Exposition(), "xmtp_log_lines_suppressed_total"));
  RecordEveryFailureOnlyFamily(m);
  m.log().suppressed.Inc(SuppressedLine::kRequestCompleted);
  m.log().suppressed.Inc(SuppressedLine::kRequestCompleted);
  const std::string text = m.Exposition();
  std::vector<std::string> types;
  for (const std::string& line : Lines(text)) {
    if (line.starts_with("# TYPE ")) {
      types.push_back(line);
    }
  }
  ASSERT_EQ(types.size(), Metrics::kFamilyCount + Metrics::kExtensionFamilyCount);
  EXPECT_EQ(types[Metrics::kFamilyCount + 3], "# TYPE xmtp_db_failures_total counter");
  EXPECT_EQ(types[Metrics::kFamilyCount + 4], "# TYPE xmtp_log_lines_suppressed_total counter");
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_failures_total{cause="disk_full"} 1)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_db_failures_total{cause="other"} 0)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_log_lines_suppressed_total{line="request_completed"} 2)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_log_lines_suppressed_total{line="store_failed"} 1)"));
}

// Issue 35: the pruning pass's families carry no label and are present from the start.
TEST(MetricsTest, PruneExtensionFamilies) {
  Metrics m("v");
  EXPECT_TRUE(HasLine(m.Exposition(), "xmtp_ext_prune_envelopes_total 0"));
  m.prune().envelopes.Add(42);
  m.prune().pass_seconds.Observe(0.25);
  const std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(text, "xmtp_ext_prune_envelopes_total 42"));
  EXPECT_TRUE(HasLine(text, "xmtp_ext_prune_pass_seconds_count 1"));
  EXPECT_TRUE(HasLine(text, "xmtp_ext_prune_pass_seconds_sum 0.25"));
}

TEST(MetricsTest, InfoAndReadyGauges) {
  Metrics m("0.1.0");
  std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(text, R"(xmtp_backend_info{version="0.1.0"} 1)"));
  EXPECT_TRUE(HasLine(text, "xmtp_backend_ready 0"));
  m.SetReady(true);
  EXPECT_TRUE(HasLine(m.Exposition(), "xmtp_backend_ready 1"));
  m.SetReady(false);
  EXPECT_TRUE(HasLine(m.Exposition(), "xmtp_backend_ready 0"));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  const Metrics m("a\"b\\c\nd");
  EXPECT_TRUE(HasLine(m.Exposition(), R"(xmtp_backend_info{version="a\"b\\c\nd"} 1)"));
}

TEST(MetricsTest, HelpTextIsEscaped) {
  static constexpr FamilySpec kSpec{"test_total", "back\\slash\nnew line", Presence::kAlways};
  CounterFamily<> family(kSpec);
  std::string out;
  family.AppendExposition(&out);
  EXPECT_EQ(out,
            "# HELP test_total back\\\\slash\\nnew line\n# TYPE test_total counter\n"
            "test_total 0\n");
}

TEST(MetricsTest, RequestFamiliesShowOnlyRoutesThatSawARequest) {
  Metrics m("v");
  std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(text, "# TYPE grpc_server_started_total counter"));
  EXPECT_EQ(text.find("grpc_server_started_total{"), std::string::npos);

  m.RequestStarted(Rpc::kPublish);
  m.RequestBytes(Rpc::kPublish, 120);
  text = m.Exposition();
  const std::string l(kPublishLabels);
  EXPECT_TRUE(HasLine(text, "grpc_server_started_total{" + l + "} 1"));
  EXPECT_TRUE(HasLine(text, "grpc_server_in_flight{" + l + "} 1"));
  EXPECT_TRUE(HasLine(text, "grpc_server_request_bytes_total{" + l + "} 120"));
  EXPECT_TRUE(HasLine(text, "grpc_server_response_bytes_total{" + l + "} 0"));
  EXPECT_EQ(text.find("grpc_server_handled_total{"), std::string::npos);
  EXPECT_EQ(text.find("QueryService"), std::string::npos);

  m.ResponseBytes(Rpc::kPublish, 45);
  m.RequestHandled(Rpc::kPublish, StatusCode::kInvalidArgument, 0.03);
  text = m.Exposition();
  const std::string lc = l + R"(,grpc_code="InvalidArgument")";
  EXPECT_TRUE(HasLine(text, "grpc_server_handled_total{" + lc + "} 1"));
  EXPECT_TRUE(HasLine(text, "grpc_server_in_flight{" + l + "} 0"));
  EXPECT_TRUE(HasLine(text, "grpc_server_response_bytes_total{" + l + "} 45"));
  // Histogram: cumulative buckets, +Inf == _count, _sum in seconds.
  const std::pair<std::string_view, int> kBuckets[] = {
      {"0.005", 0}, {"0.01", 0}, {"0.025", 0}, {"0.05", 1}, {"0.1", 1}, {"0.25", 1},
      {"0.5", 1},   {"1", 1},    {"2.5", 1},   {"5", 1},    {"10", 1},  {"+Inf", 1}};
  for (const auto& [le, count] : kBuckets) {
    const std::string line = "grpc_server_handling_seconds_bucket{" + lc + ",le=\"" +
                             std::string(le) + "\"} " + std::to_string(count);
    EXPECT_TRUE(HasLine(text, line)) << line;
  }
  EXPECT_TRUE(HasLine(text, "grpc_server_handling_seconds_sum{" + lc + "} 0.03"));
  EXPECT_TRUE(HasLine(text, "grpc_server_handling_seconds_count{" + lc + "} 1"));
}

TEST(MetricsTest, HealthRequestsAreNotCounted) {
  Metrics m("v");
  m.RequestStarted(Rpc::kHealthCheck);
  m.RequestBytes(Rpc::kHealthWatch, 5);
  m.RequestHandled(Rpc::kHealthCheck, StatusCode::kOk, 0.001);
  EXPECT_EQ(m.Exposition().find("grpc.health.v1.Health"), std::string::npos);
}

TEST(MetricsTest, UnknownPathsCarryUnknownLabels) {
  Metrics m("v");
  const Route& route = LookupRoute("/xmtp.backend.v1.QueryService/Get");
  m.RequestStarted(route.rpc);
  m.RequestHandled(route.rpc, StatusCode::kUnimplemented, 0.0001);
  const std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(
      text,
      R"(grpc_server_handled_total{grpc_service="unknown",grpc_method="unknown",grpc_type="unary",grpc_code="Unimplemented"} 1)"));
  EXPECT_EQ(text.find("Get\""), std::string::npos);
}

TEST(MetricsTest, BucketBoundsAreInclusiveAndOutOfRangeValuesAreSafe) {
  Metrics m("v");
  auto& wait = m.stream().fetch_wait_seconds;
  wait.Observe(0.1);                                       // exactly a bound: counted in le="0.1"
  wait.Observe(11);                                        // above every bound: only +Inf
  wait.Observe(-1);                                        // clock skew: 0
  wait.Observe(std::numeric_limits<double>::quiet_NaN());  // 0
  const std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_fetch_wait_seconds_bucket{le="0.005"} 2)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_fetch_wait_seconds_bucket{le="0.05"} 2)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_fetch_wait_seconds_bucket{le="0.1"} 3)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_fetch_wait_seconds_bucket{le="10"} 3)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_fetch_wait_seconds_bucket{le="+Inf"} 4)"));
  EXPECT_TRUE(HasLine(text, "xmtp_stream_fetch_wait_seconds_sum 11.1"));
  EXPECT_TRUE(HasLine(text, "xmtp_stream_fetch_wait_seconds_count 4"));
  // The untouched histogram is shown with zeros.
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_outbound_wait_seconds_bucket{le="+Inf"} 0)"));
  EXPECT_TRUE(HasLine(text, "xmtp_stream_outbound_wait_seconds_count 0"));
}

TEST(MetricsTest, SmallVocabulariesShowZeroSeries) {
  Metrics m("v");
  m.stream().ended.Inc(StreamEndReason::kBackpressure);
  m.push().deliveries.Inc(PushChannel::kFcm, PushOutcome::kMismatch);
  m.stream().sessions.Inc(StreamKind::kStatic);
  m.tailer().ready.Set(1);
  m.tailer().rows.Add(TailerRowSource::kGap, 7);
  const std::string text = m.Exposition();
  for (std::string_view reason : Vocabulary<StreamEndReason>::kWords) {
    const std::string line = "xmtp_stream_ended_total{reason=\"" + std::string(reason) + "\"} " +
                             (reason == "backpressure" ? "1" : "0");
    EXPECT_TRUE(HasLine(text, line)) << line;
  }
  size_t delivery_series = 0;
  for (const std::string& line : Lines(text)) {
    delivery_series += line.starts_with("xmtp_push_deliveries_total{") ? 1 : 0;
  }
  EXPECT_EQ(delivery_series, 18u);
  EXPECT_TRUE(HasLine(text, R"(xmtp_push_deliveries_total{channel="fcm",outcome="mismatch"} 1)"));
  EXPECT_TRUE(
      HasLine(text, R"(xmtp_push_deliveries_total{channel="http",outcome="suppressed"} 0)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_sessions{kind="bidi"} 0)"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_stream_sessions{kind="static"} 1)"));
  EXPECT_TRUE(HasLine(text, "xmtp_tailer_ready 1"));
  EXPECT_TRUE(HasLine(text, R"(xmtp_tailer_rows_total{source="gap"} 7)"));
  EXPECT_TRUE(HasLine(text, "xmtp_auth_keys 0"));
}

// verifies: OPS-019
TEST(MetricsTest, OperationDurationIsLabelledBySpanNameAndStatus) {
  Metrics m("v");
  EXPECT_TRUE(HasLine(m.Exposition(), "# TYPE xmtp_operation_duration_seconds histogram"));
  m.ObserveOperation(Operation::kRpcPublish, /*error=*/true, 0.2);
  m.ObserveOperation(RequestOperation(Rpc::kQuery), /*error=*/false, 0.004);
  const std::string text = m.Exposition();
  EXPECT_TRUE(HasLine(
      text, R"(xmtp_operation_duration_seconds_count{operation="rpc.publish",status="error"} 1)"));
  EXPECT_TRUE(HasLine(
      text,
      R"(xmtp_operation_duration_seconds_bucket{operation="xmtp.backend.v1.QueryService/Query",status="ok",le="0.005"} 1)"));
  EXPECT_EQ(text.find(R"(operation="rpc.publish",status="ok")"), std::string::npos);
}

// A family accepts only its own vocabulary: anything else does not compile.
template <typename F, typename... Args>
concept CanInc = requires(F& f, Args... args) {
  f.Inc(args...);
};

// verifies: OPS-017
TEST(MetricsTest, LabelValuesOutsideTheVocabularyDoNotCompile) {
  static_assert(CanInc<CounterFamily<StreamEndReason>, StreamEndReason>);
  static_assert(!CanInc<CounterFamily<StreamEndReason>, PushOutcome>);
  static_assert(!CanInc<CounterFamily<StreamEndReason>, int>);
  static_assert(!CanInc<CounterFamily<StreamEndReason>, const char*>);
  static_assert(!CanInc<CounterFamily<StreamEndReason>, std::string>);
  static_assert(!CanInc<CounterFamily<PushChannel, PushOutcome>, PushOutcome, PushChannel>);
  static_assert(!CanInc<CounterFamily<Rpc>, std::string_view>);
  SUCCEED();
}

TEST(MetricsTest, ConcurrentRecordingKeepsExactTotals) {
  Metrics m("v");
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) {
      (void)m.Exposition();  // scrapes race the recorders
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&m, t] {
      const Rpc rpc = t % 2 == 0 ? Rpc::kPublish : Rpc::kQuery;
      for (int i = 0; i < kPerThread; ++i) {
        m.RequestStarted(rpc);
        m.RequestBytes(rpc, 3);
        m.RequestHandled(rpc, StatusCode::kOk, 0.001);
        m.stream().frames_sent.Inc(FrameSent::kPing);
        m.ObserveOperation(Operation::kTailerPoll, /*error=*/false, 0.002);
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  done = true;
  scraper.join();

  constexpr int kTotal = kThreads * kPerThread;
  const std::string text = m.Exposition();
  const std::string l(kPublishLabels);
  EXPECT_TRUE(HasLine(text, "grpc_server_started_total{" + l + "} " + std::to_string(kTotal / 2)));
  EXPECT_TRUE(HasLine(text, "grpc_server_in_flight{" + l + "} 0"));
  EXPECT_TRUE(HasLine(
      text, "grpc_server_request_bytes_total{" + l + "} " + std::to_string(3 * kTotal / 2)));
  EXPECT_TRUE(HasLine(text, "grpc_server_handling_seconds_count{" + l + R"(,grpc_code="OK"} )" +
                                std::to_string(kTotal / 2)));
  EXPECT_EQ(m.stream().frames_sent.Value(FrameSent::kPing), static_cast<uint64_t>(kTotal));
  EXPECT_TRUE(
      HasLine(text, R"(xmtp_stream_frames_sent_total{frame="ping"} )" + std::to_string(kTotal)));
  EXPECT_TRUE(HasLine(
      text, R"(xmtp_operation_duration_seconds_count{operation="tailer.poll",status="ok"} )" +
                std::to_string(kTotal)));
}

// Runs `promtool check metrics` on `text`; returns its exit status and output.
std::pair<int, std::string> RunPromtool(const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto in = dir / ("xb_metrics_" + std::to_string(::getpid()) + ".prom");
  const auto out = dir / ("xb_metrics_" + std::to_string(::getpid()) + ".out");
  std::ofstream(in) << text;
  const std::string cmd =
      "/usr/bin/promtool check metrics < " + in.string() + " > " + out.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream result(out);
  std::stringstream output;
  output << result.rdbuf();
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output.str()};
}

// verifies: OPS-016
// verifies: OPS-017
TEST(MetricsTest, PromtoolAcceptsTheExposition) {
  if (!std::filesystem::exists("/usr/bin/promtool")) {
    GTEST_SKIP() << "promtool is not installed";
  }
  Metrics m("0.1.0");
  const auto [fresh_status, fresh_output] = RunPromtool(m.Exposition());
  EXPECT_EQ(fresh_status, 0) << fresh_output;

  // Every family visible, every kind of series present.
  RecordEveryFailureOnlyFamily(m);
  m.RequestStarted(Rpc::kSubscribe);
  m.RequestHandled(Rpc::kSubscribe, StatusCode::kCancelled, 42.5);
  m.ObserveOperation(Operation::kStreamFetch, /*error=*/false, 0.01);
  m.SetReady(true);
  const auto [status, output] = RunPromtool(m.Exposition());
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "") << output;
}

}  // namespace
}  // namespace xb::telemetry
