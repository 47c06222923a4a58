#include "telemetry/logger.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace xb::telemetry {
namespace {

constexpr std::string_view kRequestId = "0f8fad5b-d9cb-469f-a165-70867728950e";
constexpr std::string_view kTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";

// Collects lines; a fixed clock at 2024-05-01T12:34:56.789Z.
struct Capture {
  std::vector<std::string> lines;

  LoggerOptions Options(LogLevel level, LogFormat format) {
    return LoggerOptions{
        .level = level,
        .format = format,
        .sink = [this](std::string_view line) { lines.emplace_back(line); },
        .clock =
            [] {
              return std::chrono::system_clock::time_point(std::chrono::seconds(1714566896) +
                                                           std::chrono::milliseconds(789));
            },
    };
  }
};

CompletionEvent PublishCompletion() {
  return CompletionEvent{
      .request_id = kRequestId,
      .identifier = "org.example.xmtp",
      .rpc = Rpc::kPublish,
      .duration_ms = 12.3456,
      .request_size_bytes = 120,
      .response_size_bytes = 45,
      .grpc_code = StatusCode::kOk,
      .trace_id = kTraceId,
  };
}

// verifies: OPS-018
TEST(LoggerTest, CompletionLineJson) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kJson));
  logger.Completion(PublishCompletion());
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(
      capture.lines[0],
      R"({"time":"2024-05-01T12:34:56.789Z","level":"info","msg":"request completed",)"
      R"("request_id":"0f8fad5b-d9cb-469f-a165-70867728950e","identifier":"org.example.xmtp",)"
      R"("method":"/xmtp.backend.v1.PublishService/Publish","duration_ms":12.346,)"
      R"("request_size_bytes":120,"response_size_bytes":45,"grpc_code":"OK",)"
      R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"})"
      "\n");
}

struct RecordCapture : LogRecordSink {
  std::vector<LogRecordData> records;
  void SubmitLog(LogRecordData&& record) override { records.push_back(std::move(record)); }
};

// CONF telemetry.otlp_logs: with a record sink, each written line is also handed over as a record
// of the same message and fields (values owned), and a filtered-out line is not; removing the
// sink stops it.
TEST(LoggerTest, RecordSinkGetsEveryWrittenLineAsARecord) {
  Capture capture;
  RecordCapture records;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kJson));
  logger.SetRecordSink(&records);
  {
    std::string identifier = "org.example.xmtp";
    CompletionEvent event = PublishCompletion();
    event.identifier = identifier;
    logger.Completion(event);
    identifier.assign(identifier.size(), 'x');  // the record keeps its own copy
  }
  logger.Debug("filtered out");
  logger.Warn("database warning", {Field::Count(3)});
  logger.SetRecordSink(nullptr);
  logger.Info("after");
  ASSERT_EQ(capture.lines.size(), 3u);
  ASSERT_EQ(records.records.size(), 2u);

  const LogRecordData& r = records.records[0];
  EXPECT_EQ(r.message, "request completed");
  EXPECT_EQ(r.level, LogLevel::kInfo);
  EXPECT_EQ(r.time_unix_ns, 1714566896789000000ULL);
  ASSERT_EQ(r.fields.size(), 8u);
  EXPECT_EQ(r.fields[1].first, "identifier");
  EXPECT_EQ(std::get<std::string>(r.fields[1].second), "org.example.xmtp");
  EXPECT_EQ(r.fields[3].first, "duration_ms");
  EXPECT_EQ(std::get<double>(r.fields[3].second), 12.346);
  EXPECT_EQ(std::get<uint64_t>(r.fields[4].second), 120u);
  EXPECT_EQ(ToHex(r.trace_id).view(), kTraceId);

  const LogRecordData& w = records.records[1];
  EXPECT_EQ(w.level, LogLevel::kWarn);
  ASSERT_EQ(w.fields.size(), 1u);
  EXPECT_EQ(w.fields[0].first, "count");
  EXPECT_TRUE(AllZero(w.trace_id));
}

// verifies: OPS-018
// verifies: OPS-014 (an unknown path is logged as "unknown", never as the path sent)
TEST(LoggerTest, CompletionLineTextForAnUnknownPathWithoutTraceContext) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kText));
  CompletionEvent event = PublishCompletion();
  event.rpc = LookupRoute("/xmtp.backend.v1.NoSuchService/Nothing").rpc;  // served_path empty
  event.grpc_code = StatusCode::kUnimplemented;
  event.trace_id = "";
  event.identifier = "deployment one";
  logger.Completion(event);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(capture.lines[0],
            "time=2024-05-01T12:34:56.789Z level=info msg=\"request completed\" "
            "request_id=0f8fad5b-d9cb-469f-a165-70867728950e identifier=\"deployment one\" "
            "method=unknown duration_ms=12.346 request_size_bytes=120 response_size_bytes=45 "
            "grpc_code=Unimplemented\n");
}

// verifies: OPS-018 (method is the request path: QueryService/Get, served but outside the route
// table, is logged under its handler's path)
TEST(LoggerTest, CompletionLineNamesTheServedPathOfARequestOutsideTheRouteTable) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kJson));
  CompletionEvent event = PublishCompletion();
  event.rpc = LookupRoute("/xmtp.backend.v1.QueryService/Get").rpc;
  ASSERT_EQ(event.rpc, Rpc::kUnknown);
  event.served_path = "/xmtp.backend.v1.QueryService/Get";
  logger.Completion(event);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_NE(capture.lines[0].find(R"("method":"/xmtp.backend.v1.QueryService/Get",)"),
            std::string::npos)
      << capture.lines[0];
}

// verifies: OPS-018 (a row of the route table is logged under its own path, whatever the event's
// served_path says)
TEST(LoggerTest, CompletionLineOfARouteTableRowIgnoresTheServedPath) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kText));
  CompletionEvent event = PublishCompletion();
  event.served_path = "/xmtp.backend.v1.QueryService/Get";
  logger.Completion(event);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_NE(capture.lines[0].find(" method=/xmtp.backend.v1.PublishService/Publish "),
            std::string::npos)
      << capture.lines[0];
}

TEST(LoggerTest, JsonEscapingAndInvalidUtf8) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kJson));
  // A configured identifier holding every character class that needs care.
  logger.Info("started", {Field::Identifier("q\"b\\n\nt\tc\x01 \xc3\xa9 bad\xff\xc0\xaf end"),
                          Field::DurationMs(std::numeric_limits<double>::infinity())});
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(capture.lines[0],
            R"({"time":"2024-05-01T12:34:56.789Z","level":"info","msg":"started",)"
            R"("identifier":"q\"b\\n\nt\tc\u0001 )"
            "\xc3\xa9 bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end"
            R"(","duration_ms":null})"
            "\n");
}

TEST(LoggerTest, TextQuotesOnlyWhenNeeded) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kInfo, LogFormat::kText));
  logger.Warn("metrics listener bound",
              {Field::Address("127.0.0.1:9464"), Field::Key("a=b"), Field::Host(""),
               Field::Count(3), Field::Error(InvalidArgument("request is malformed"))});
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(capture.lines[0],
            "time=2024-05-01T12:34:56.789Z level=warn msg=\"metrics listener bound\" "
            "address=127.0.0.1:9464 key=\"a=b\" host=\"\" count=3 "
            "error=\"InvalidArgument: request is malformed\"\n");
}

TEST(LoggerTest, IdsThatAreNotIdsAreNotLogged) {
  Capture capture;
  Logger logger(capture.Options(LogLevel::kDebug, LogFormat::kJson));
  logger.Debug("authentication rejected",
               {Field::RequestId("attacker chosen"), Field::Identifier("org.example.xmtp"),
                Field::Reason(AuthRejectionReason::kUnsupportedAlg),
                Field::TraceId("00000000000000000000000000000000")});
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_EQ(capture.lines[0],
            R"({"time":"2024-05-01T12:34:56.789Z","level":"debug","msg":"authentication rejected",)"
            R"("request_id":"invalid","identifier":"org.example.xmtp","reason":"unsupported_alg",)"
            R"("trace_id":"invalid"})"
            "\n");
}

TEST(LoggerTest, LevelFiltering) {
  Capture capture;
  Logger warn(capture.Options(LogLevel::kWarn, LogFormat::kText));
  warn.Info("dropped");
  warn.Debug("dropped");
  warn.Completion(PublishCompletion());
  warn.Error("kept");
  warn.Warn("kept");
  EXPECT_EQ(capture.lines.size(), 2u);
  EXPECT_FALSE(warn.Enabled(LogLevel::kInfo));
  EXPECT_TRUE(warn.Enabled(LogLevel::kError));

  Logger off(capture.Options(LogLevel::kOff, LogFormat::kText));
  off.Error("dropped");
  EXPECT_EQ(capture.lines.size(), 2u);

  Logger trace(capture.Options(LogLevel::kTrace, LogFormat::kText));
  trace.Trace("kept");
  EXPECT_EQ(capture.lines.size(), 3u);
}

// verifies: OPS-014 (no free-text message or field can be built from runtime data)
TEST(LoggerTest, OnlyAllowListedFieldsAndLiteralMessagesCompile) {
  static_assert(std::is_constructible_v<Literal, const char(&)[4]>);
  static_assert(!std::is_constructible_v<Literal, const char*>);
  static_assert(!std::is_constructible_v<Literal, std::string>);
  static_assert(!std::is_constructible_v<Literal, std::string_view>);
  static_assert(!std::is_constructible_v<Field, LogField, std::string_view>);
  static_assert(!std::is_constructible_v<Field, std::string_view, std::string_view>);
  static_assert(!std::is_constructible_v<Field, std::string_view>);
  EXPECT_EQ(LogFieldName(LogField::kRequestId), "request_id");
  EXPECT_EQ(LogFieldName(LogField::kResponseSizeBytes), "response_size_bytes");
  EXPECT_EQ(LogFieldName(LogField::kCount), "count");
}

TEST(LoggerTest, ConcurrentLinesDoNotInterleave) {
  std::vector<std::string> lines;
  std::mutex mu;  // the sink runs under the logger's mutex; this one only guards the vector
  Logger logger(LoggerOptions{
      .level = LogLevel::kInfo,
      .format = LogFormat::kJson,
      .sink =
          [&](std::string_view line) {
            std::lock_guard<std::mutex> lock(mu);
            lines.emplace_back(line);
          },
      .clock = {},  // the system clock
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&logger] {
      for (int i = 0; i < 1000; ++i) {
        logger.Completion(PublishCompletion());
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  ASSERT_EQ(lines.size(), 4000u);
  for (const std::string& line : lines) {
    ASSERT_TRUE(line.starts_with("{\"time\":\"") && line.ends_with("}\n")) << line;
  }
}

}  // namespace
}  // namespace xb::telemetry
