// OTLP over gRPC, the exporter's default protocol (CONF telemetry.otlp_endpoint: "OTLP (gRPC)
// export target"): unary calls to the collector's TraceService/Export and LogsService/Export, the
// request being the same ExportTraceServiceRequest (ExportLogsServiceRequest) bytes the OTLP/HTTP
// path posts, behind gRPC's 5-byte message prefix.
//
// Transport: the one outbound HTTP client (net/http_client), made http2_only: HTTP/2 with prior
// knowledge (h2c) for http://, h2 chosen by ALPN over TLS for https:// (system trust store, the
// peer's name checked). It keeps the connection from call to call and replaces one that closed.
// Nothing is copied from its HTTP/2 part; what this file adds is gRPC's framing and its verdict.
//
// Why a call is not left half-done between batches as the OTLP/HTTP path's answer is: a batch is
// about 800 KB and the collector's HTTP/2 flow-control window far smaller at first, so writing it
// takes the collector's WINDOW_UPDATEs; the exporter thread runs the client until the call ends.
//
// Threading: one thread at a time (the exporter's); nothing else runs the channel's io_context.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "net/http_client.h"

namespace xb::telemetry {

inline constexpr std::string_view kGrpcTraceExportPath =
    "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
inline constexpr std::string_view kGrpcLogsExportPath =
    "/opentelemetry.proto.collector.logs.v1.LogsService/Export";

// The body of a unary gRPC request carrying `message` (uncompressed): one flag byte 0, the 4-byte
// big-endian length, the message. (rpc/frame.h writes the same prefix for the server, but xb_rpc
// depends on telemetry, not the other way round.)
std::string GrpcRequestBody(std::string_view message);

// How a call ended, judged from its answer (gRPC over HTTP/2, "Responses").
enum class GrpcVerdict {
  kOk,           // :status 200, content-type application/grpc..., grpc-status 0
  kHttpStatus,   // :status is not 200
  kNotGrpc,      // no application/grpc content-type
  kNoStatus,     // no grpc-status in the trailers (nor in a trailers-only head)
  kErrorStatus,  // grpc-status other than 0 (UNAVAILABLE, ...)
};

// The verdict on a whole response: grpc-status is read from the trailers, or from the head when
// the answer is trailers-only (a HEADERS frame that ends the stream, as errors usually are).
GrpcVerdict JudgeGrpcAnswer(const net::HttpResponse& response);

class OtlpGrpcChannel {
 public:
  // `origin`: scheme://host[:port] of the endpoint (http: h2c, https: h2 over TLS).
  explicit OtlpGrpcChannel(std::string origin);
  ~OtlpGrpcChannel();
  OtlpGrpcChannel(const OtlpGrpcChannel&) = delete;
  OtlpGrpcChannel& operator=(const OtlpGrpcChannel&) = delete;

  // One unary call of `path` (kGrpcTraceExportPath, kGrpcLogsExportPath) with `message`; true
  // only when the collector answered grpc-status 0 before `deadline`. Every failure (resolve,
  // connect, TLS, GOAWAY, RST_STREAM, a non-200 status, a non-zero grpc-status, the deadline) is
  // false. Runs the client on the calling thread until the call ends.
  bool Call(std::string_view path, std::string_view message,
            std::chrono::steady_clock::time_point deadline);

  struct State;  // the io_context and the client (otlp_grpc.cc)

 private:
  const std::string origin_;
  std::unique_ptr<State> state_;  // made on the first call; dropped when a call overran
};

}  // namespace xb::telemetry
