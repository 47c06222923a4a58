// Metrics: the in-process registry of the OPS section 5 metric catalogue and its text exposition.
//
// Every family of the catalogue is a member here, declared once: its name, help and presence in
// metrics.cc, its type as the member's class and its labels as that class's template arguments
// (vocabulary.h). A label value outside the catalogue therefore does not compile (OPS-017).
//
// Thread-safety: every method may be called from any thread concurrently. Recording is lock-free
// (relaxed atomics) and never allocates; Exposition() takes no lock either. One Metrics lives for
// the whole process and outlives everything that records into it or serves it. Nothing suspends.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "telemetry/metric_family.h"
#include "telemetry/route.h"
#include "telemetry/vocabulary.h"

namespace xb::telemetry {

// The Content-Type of Exposition() (text format 0.0.4).
inline constexpr std::string_view kExpositionContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Families recorded by store/ (both engines) and api/. All count only failures, so all are absent
// from the exposition until their first event.
struct DbMetrics {
  DbMetrics();
  CounterFamily<> released_open_transactions;  // xmtp_db_released_open_transactions_total
  CounterFamily<DbErrorKind> errors;           // xmtp_db_errors_total
  CounterFamily<DbFailureCause> failures;      // xmtp_db_failures_total (extension)
};

// Families of the logs themselves (extension). Absent until their first event.
struct LogMetrics {
  LogMetrics();
  CounterFamily<SuppressedLine> suppressed;  // xmtp_log_lines_suppressed_total
};

// Families recorded by api/ (publish and identity services).
struct ApiMetrics {
  ApiMetrics();
  CounterFamily<PublishOutcome> publish_envelopes;           // xmtp_publish_envelopes_total
  CounterFamily<PublishRejectionReason> publish_rejections;  // xmtp_publish_rejections_total
  CounterFamily<ScwResult> scw_verifications;                // xmtp_scw_verifications_total
};

// Families recorded by fanout/ sessions.
struct StreamMetrics {
  StreamMetrics();
  GaugeFamily<StreamKind> sessions;              // xmtp_stream_sessions
  GaugeFamily<> topics_registered;               // xmtp_stream_topics_registered
  CounterFamily<FrameSent> frames_sent;          // xmtp_stream_frames_sent_total
  CounterFamily<FrameReceived> frames_received;  // xmtp_stream_frames_received_total
  CounterFamily<DeliveryPhase> envelopes_sent;   // xmtp_stream_envelopes_sent_total
  CounterFamily<UpdateOutcome> updates;          // xmtp_stream_updates_total
  CounterFamily<StreamEndReason> ended;          // xmtp_stream_ended_total
  HistogramFamily<> outbound_wait_seconds;       // xmtp_stream_outbound_wait_seconds
  HistogramFamily<> fetch_wait_seconds;          // xmtp_stream_fetch_wait_seconds
};

// Families recorded by the fanout/ tailer and the store's boundary task.
struct TailerMetrics {
  TailerMetrics();
  CounterFamily<TailerPollResult> polls;            // xmtp_tailer_polls_total
  CounterFamily<TailerRowSource> rows;              // xmtp_tailer_rows_total
  GaugeFamily<> gap_ranges;                         // xmtp_tailer_gap_ranges
  CounterFamily<> restarts;                         // xmtp_tailer_restarts_total
  GaugeFamily<> ready;                              // xmtp_tailer_ready (0 or 1)
  CounterFamily<BoundaryResult> boundary_advances;  // xmtp_boundary_advances_total
};

// Families recorded by auth/.
struct AuthMetrics {
  AuthMetrics();
  CounterFamily<AuthRejectionReason> rejections;    // xmtp_auth_rejections_total
  CounterFamily<JwksRefreshResult> jwks_refreshes;  // xmtp_auth_jwks_refresh_total
  GaugeFamily<> keys;                               // xmtp_auth_keys
};

// Extension families (ours, not in the OPS catalogue) recorded for net/'s connection limits
// (server/net_observer.h). Exposed after the catalogue, in this order.
struct NetMetrics {
  NetMetrics();
  CounterFamily<AcceptFailureReason> accept_failures;       // xmtp_net_accept_failures_total
  GaugeFamily<> connections;                                // xmtp_net_connections
  CounterFamily<ConnectionCloseReason> connections_closed;  // xmtp_net_connections_closed_total
};

// Families recorded by push/.
struct PushMetrics {
  PushMetrics();
  CounterFamily<PushRecipientAction> recipients;        // xmtp_push_recipients_total
  CounterFamily<PushChannel, PushOutcome> deliveries;   // xmtp_push_deliveries_total
  GaugeFamily<> dispatcher;                             // xmtp_push_dispatcher (0 or 1)
  CounterFamily<PushSubscriptionAction> subscriptions;  // xmtp_push_subscriptions_total
};

// Extension families (ours, issue 35) recorded by the pruning pass (server/prune_pass.h). The
// `xmtp_ext_` prefix keeps them apart from every catalogue family. No labels.
struct PruneMetrics {
  PruneMetrics();
  CounterFamily<> envelopes;       // xmtp_ext_prune_envelopes_total
  HistogramFamily<> pass_seconds;  // xmtp_ext_prune_pass_seconds
};

class Metrics {
 public:
  // Sets xmtp_backend_info{version} = 1 and xmtp_backend_ready = 0. `version` is the build
  // version (never request data).
  explicit Metrics(std::string version);
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // Request families (grpc_server_*), measured at the transport (OPS section 5). The caller calls
  // these only for non-health requests; for a health route they do nothing, so a health request
  // can never be counted. Each counted request gets exactly one RequestStarted and, when its
  // response body ends, fails or is cancelled, exactly one RequestHandled.
  void RequestStarted(Rpc rpc);                                   // started_total++, in_flight++
  void RequestHandled(Rpc rpc, StatusCode code, double seconds);  // handled, handling, in_flight--
  void RequestBytes(Rpc rpc, uint64_t n);   // grpc_server_request_bytes_total += n
  void ResponseBytes(Rpc rpc, uint64_t n);  // grpc_server_response_bytes_total += n

  void SetReady(bool ready);  // xmtp_backend_ready, in the same step as the health status
  // xmtp_operation_duration_seconds{operation, status}; status is error when `error`.
  void ObserveOperation(Operation op, bool error, double seconds);
  void ExportFailure();  // xmtp_telemetry_export_failures_total

  // The other families, grouped by the module that records them; use the typed members, e.g.
  // metrics.stream().ended.Inc(StreamEndReason::kClient).
  DbMetrics& db() { return db_; }
  ApiMetrics& api() { return api_; }
  StreamMetrics& stream() { return stream_; }
  TailerMetrics& tailer() { return tailer_; }
  AuthMetrics& auth() { return auth_; }
  PushMetrics& push() { return push_; }
  NetMetrics& net() { return net_; }
  LogMetrics& log() { return log_; }
  PruneMetrics& prune() { return prune_; }
  const DbMetrics& db() const { return db_; }
  const ApiMetrics& api() const { return api_; }
  const StreamMetrics& stream() const { return stream_; }
  const TailerMetrics& tailer() const { return tailer_; }
  const AuthMetrics& auth() const { return auth_; }
  const PushMetrics& push() const { return push_; }
  const NetMetrics& net() const { return net_; }
  const LogMetrics& log() const { return log_; }
  const PruneMetrics& prune() const { return prune_; }

  // Every family in catalogue order, then the extension families (docs/telemetry.md), Prometheus
  // text format 0.0.4 (kExpositionContentType). implements: OPS-016
  std::string Exposition() const;

  // The catalogue size and the extension families after it; a test checks each name appears.
  static constexpr size_t kFamilyCount = 37;
  // Families of ours beyond the catalogue, listed after it (docs/telemetry.md).
  static constexpr size_t kExtensionFamilyCount = 7;

 private:
  CounterFamily<Rpc> started_;
  CounterFamily<Rpc, StatusCode> handled_;
  HistogramFamily<Rpc, StatusCode> handling_seconds_;
  GaugeFamily<Rpc> in_flight_;
  CounterFamily<Rpc> request_bytes_;
  CounterFamily<Rpc> response_bytes_;
  HistogramFamily<Operation, OperationStatus> operation_duration_;
  CounterFamily<> export_failures_;
  DbMetrics db_;
  ApiMetrics api_;
  StreamMetrics stream_;
  TailerMetrics tailer_;
  GaugeFamily<> backend_ready_;
  AuthMetrics auth_;
  PushMetrics push_;
  InfoFamily backend_info_;
  NetMetrics net_;
  LogMetrics log_;
  PruneMetrics prune_;

  // Const after construction: every family above, in catalogue order, then the extensions.
  std::array<const Family*, kFamilyCount + kExtensionFamilyCount> families_;
};

}  // namespace xb::telemetry
