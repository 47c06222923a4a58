// OtlpExporter: the batch span exporter. Sampled spans are queued (bounded; a full queue drops
// the span and counts the drop) and one background thread exports them (otlp_encoding.h):
// - over gRPC by default (telemetry.otlp_protocol = "grpc"): unary TraceService/Export calls
//   through the shared outbound client, HTTP/2 (otlp_grpc.h);
// - over OTLP/HTTP protobuf with telemetry.otlp_protocol = "http/protobuf": POSTed to
//   <endpoint>/v1/traces with Boost.Beast over plain TCP or TLS, on a socket of its own.
//
// Why the OTLP/HTTP path does not use net/http_client: it keeps its own socket for two things the
// shared client does not do. Over plain TCP a batch is spliced into the socket from the encoder's
// pages (spliced_send.h; the copying write was the exporter thread's largest cost), which must hold
// the pages until the answer is read; and a span batch's answer is read only when the next batch is
// due (below). Its TLS context and peer-name check are net/tls_client's, as the client's are.
//
// implements: OPS-015 — export never blocks serving: Submit encodes the span into a small buffer
// of the calling thread's own (its stage: no lock, no locked instruction), and moves a stage into
// the batch being filled under the shared mutex once per kStageSpans spans; nothing allocates once
// the buffers have grown. A slow or unreachable collector delays only the export thread. Every
// batch that fails (connect, TLS, write, read, timeout, a non-2xx status; over gRPC also GOAWAY,
// RST_STREAM or a grpc-status other than 0) increments xmtp_telemetry_export_failures_total.
//
// Why stages: a batch is hundreds of kilobytes, written once per 4096 spans and read by the
// kernel and the collector in between, so writing each span straight into it missed the cache on
// most lines, and releasing the shared mutex then waited for those writes. A stage stays in its
// thread's cache, and a stage's spans reach the batch in one copy (docs/telemetry.md has the
// figures). A staged span waits at most about one interval: the exporter sweeps every stage's
// committed spans when its interval passes, and at shutdown.
//
// OTLP/HTTP: a span batch's answer is read when the next batch is due, when the exporter next wakes
// with nothing to send (within about an interval) or at shutdown, not as soon as it is written: the
// exporter wakes once per batch, and each wake-up switches a serving thread out of its core. A
// batch counts as exported or failed when its answer is read. A gRPC call is whole when it
// returns (otlp_grpc.h says why), and counts then.
//
// Lifetime: Create, then Start (the thread), then Shutdown once serving has stopped (flushes what
// is queued until its deadline, then stops the thread). The destructor shuts down with an
// immediate deadline if Shutdown was not called. Submit and dropped() may be called from any
// thread; Start and Shutdown from one thread (the server's). Nothing suspends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "telemetry/metrics.h"
#include "telemetry/otlp_encoding.h"
#include "telemetry/tracer.h"

namespace xb::telemetry {

class OtlpGrpcChannel;  // otlp_grpc.h

// telemetry.otlp_protocol.
enum class OtlpProtocol { kGrpc, kHttpProtobuf };

struct OtlpExporterOptions {
  // The resolved endpoint (telemetry.otlp_endpoint or OTEL_EXPORTER_OTLP_ENDPOINT): an http:// or
  // https:// URL with a host, already checked at startup (OPS-022). gRPC: its path is empty or
  // "/". OTLP/HTTP: spans go to its path plus /v1/traces, unless it already ends with /v1/traces.
  std::string endpoint;
  OtlpProtocol protocol = OtlpProtocol::kGrpc;
  ResourceAttributes resource;
  // Large batches: each request costs the exporter thread a wake-up, an HTTP exchange and
  // context switches on the serving cores. 4096 spans (about 800 KB) halved its CPU per span
  // against 512 (bench/telemetry.sh); the queue leaves room for four batches while one is sent.
  size_t max_queue = 16384;                         // spans waiting for export; more are dropped
  size_t max_batch = 4096;                          // spans per request
  std::chrono::milliseconds interval{1000};         // a partial batch waits at most this long
  std::chrono::milliseconds request_timeout{3000};  // per export request
};

class OtlpExporter final : public SpanSink, public LogRecordSink {
 public:
  // Fails INVALID_ARGUMENT when the endpoint is not an http(s) URL with a host, or has a path for
  // gRPC (the caller names the key, never the value).
  static Result<std::unique_ptr<OtlpExporter>> Create(OtlpExporterOptions options,
                                                      Metrics& metrics);
  ~OtlpExporter() override;

  void Start();
  // Exports what is queued until `deadline`, then stops the thread. What is left is dropped.
  void Shutdown(std::chrono::steady_clock::time_point deadline);

  void Submit(SpanData&& span) override;
  // Log records (telemetry.otlp_logs) go to LogsService/Export (gRPC) or <endpoint>/v1/logs in
  // batches of their own, over the same connection, with the same queue bound and failure
  // counting as spans.
  void SubmitLog(LogRecordData&& record) override;

  // Spans a thread stages before moving them into a batch (fewer when the batch has less room).
  static constexpr size_t kStageSpans = 64;
  static constexpr size_t kStageBytes = 32 << 10;  // a stage's buffer (grows for a huge span)

  uint64_t dropped() const;           // spans dropped because the queue was full or at shutdown
  uint64_t dropped_logs() const;      // log records dropped likewise
  uint64_t exported_batches() const;  // batches (of spans or of records) the collector accepted

  struct Session;  // the exporter thread's kept connection (otlp_exporter.cc)
  struct Stage;    // one thread's staged spans (otlp_exporter.cc)

  struct Target {
    bool tls = false;
    bool grpc = false;
    std::string host;
    std::string port;
    std::string origin;     // scheme://host[:port] (the gRPC channel's)
    std::string path;       // ends with /v1/traces, or the gRPC TraceService/Export path
    std::string logs_path;  // the same base, ending with /v1/logs, or LogsService/Export
  };

 private:
  OtlpExporter(OtlpExporterOptions options, Target target, Metrics& metrics);
  // What the exporter thread takes from the queues per wake-up (kept across them for capacity).
  struct Work {
    std::vector<std::unique_ptr<EncodedSpans>> batches;
    std::vector<LogRecordData> logs;
    bool stopping = false;
    std::chrono::steady_clock::time_point deadline;  // the shutdown deadline, when stopping
  };
  void Run();
  // Waits for work or the next sweep (sweeping the stages when due) and takes the full batches,
  // a partial batch when it has waited, and the queued log records. False when there is none.
  bool TakeWork(Work& work, std::chrono::steady_clock::time_point& next_sweep);
  // Writes each span batch (its answer is read later by Settle); the spans dropped for lack of
  // time.
  uint64_t SendSpanBatches(Work& work);
  // Posts the log records in batches, reading each answer; the records dropped for lack of time.
  uint64_t SendLogs(Work& work, ByteBuffer& log_body);
  // The calling thread's stage, made on its first span.
  Stage& ThisThreadStage();
  // The owner's move of its stage into batches (takes mu_), which empties the stage and grows
  // its buffer to at least `need` bytes. True when a batch filled.
  bool MoveStage(Stage& stage, size_t need);
  // Every thread's committed, unmoved spans into batches (the interval sweep, the shutdown flush).
  void SweepStages();
  // Spans [first, last) of `stage` into batches, within the queue's bound (mu_ held). True when a
  // batch filled.
  bool MoveSpans(const Stage& stage, size_t first, size_t last);
  // The end of the next request's time: its timeout, cut to the shutdown deadline when
  // stopping; nullopt when that leaves no time.
  std::optional<std::chrono::steady_clock::time_point> RequestDeadline(
      bool stopping, std::chrono::steady_clock::time_point deadline) const;
  // Posts one request body to `path` and counts it exported or failed (OPS-015).
  void Send(std::string_view body, const std::string& path,
            std::chrono::steady_clock::time_point until);
  // Counts one batch exported, or failed in xmtp_telemetry_export_failures_total.
  void CountBatch(bool exported);
  // Posts one body to `path`; true when the collector answered 2xx before `deadline`. With
  // `leave_answer`, true when the request was written: its answer is read later by Settle, and
  // `written_on_reused` tells whether it went over a connection kept from an earlier exchange.
  bool Post(std::string_view body, const std::string& path,
            std::chrono::steady_clock::time_point deadline, bool leave_answer = false,
            bool* written_on_reused = nullptr);
  // Reads the answer to the span batch written last (awaiting_), if any, and counts that batch
  // exported or failed (OPS-015); its buffer goes back to spare_. A kept connection that closed
  // before the answer gets the batch once more on a new one, as Post does.
  void Settle(bool stopping, std::chrono::steady_clock::time_point deadline);

  // Const after construction.
  const OtlpExporterOptions options_;
  const Target target_;
  Metrics& metrics_;
  const OtlpFraming framing_;
  const uint64_t id_;  // unique in the process: tells a thread's cached stage whose it is

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Spans are encoded as they are submitted, into batches of at most max_batch spans: `filling_`
  // takes them, a full one moves to `full_`. Sent batches wait in `spare_` with their capacity.
  std::unique_ptr<EncodedSpans> filling_;             // guarded by mu_; null: none yet
  std::vector<std::unique_ptr<EncodedSpans>> full_;   // guarded by mu_; oldest first
  std::vector<std::unique_ptr<EncodedSpans>> spare_;  // guarded by mu_
  // One per thread that has ended a sampled span, kept for the exporter's life (the server's
  // threads live as long as it does).
  std::vector<std::unique_ptr<Stage>> stages_;  // guarded by mu_
  // Spans in `filling_`, read without mu_ to size the stages (a stage fills the batch exactly).
  std::atomic<size_t> filling_count_{0};
  // Spans in batches not yet taken for sending: at most max_queue. Staged spans join it when they
  // move, and the ones past the bound are dropped then.
  std::atomic<size_t> queued_spans_{0};   // written under mu_; Submit reads it without
  bool closed_ = false;                   // guarded by mu_: the exporter thread has finished
  std::vector<LogRecordData> log_queue_;  // guarded by mu_; capacity max_queue
  std::atomic<bool> stopping_{false};     // written under mu_
  std::chrono::steady_clock::time_point deadline_;  // guarded by mu_; set with stopping_
  std::atomic<uint64_t> dropped_{0};
  uint64_t dropped_logs_ = 0;      // guarded by mu_
  uint64_t exported_batches_ = 0;  // guarded by mu_

  std::unique_ptr<Session> session_;       // exporter thread only (OTLP/HTTP)
  std::unique_ptr<OtlpGrpcChannel> grpc_;  // set for gRPC; used by the exporter thread only
  // The span batch written last whose answer is not read yet, and whether it went over a kept
  // connection. Exporter thread only.
  std::unique_ptr<EncodedSpans> awaiting_;
  bool awaiting_reused_ = false;

  std::thread thread_;
};

// Parses an OTLP endpoint into where to export; exposed for tests.
Result<OtlpExporter::Target> ParseOtlpEndpoint(std::string_view endpoint,
                                               OtlpProtocol protocol = OtlpProtocol::kGrpc);

}  // namespace xb::telemetry
