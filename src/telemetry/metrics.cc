#include "telemetry/metrics.h"

#include <utility>

#include "base/check.h"

namespace xb::telemetry {
namespace {

// The metric catalogue of OPS section 5, in its order: each family's name, help (its Meaning)
// and presence, declared once. Its type and label vocabulary are the member that binds the row
// (metrics.h). implements: OPS-016, OPS-017
//
// Presence choices:
// - kFailureOnly ("absent until its first event"): a family whose every event is a failure or an
//   anomaly: export failures, released open transactions, database errors, publish rejections and
//   auth rejections. After the first event every series of its vocabulary is shown.
// - kWhenRecorded: the RPC-labelled request families (16 routes x 17 codes would be noise) and
//   the operation histogram (35 spans x 2 statuses, 14 samples each). Their # HELP / # TYPE lines
//   are always present, so every family is described (OPS-016).
// - kAlways: everything else. Each has a small vocabulary (at most 18 series), so dashboards see
//   zeros rather than gaps; a failure-and-success family (tailer polls, boundary advances, JWKS
//   refreshes, push deliveries) is not failure-only.

// Request families: a request is counted when it reaches the backend as a gRPC request, before
// authentication, and completed when its response body ends, fails or is cancelled.
constexpr FamilySpec kStarted{
    "grpc_server_started_total",
    "gRPC requests other than health requests that reached the backend, before authentication.",
    Presence::kWhenRecorded};
constexpr FamilySpec kHandled{
    "grpc_server_handled_total",
    "Counted requests whose response body ended, failed or was cancelled, by gRPC status.",
    Presence::kWhenRecorded};
constexpr FamilySpec kHandlingSeconds{
    "grpc_server_handling_seconds",
    "Time from a counted request's arrival to its response body completion; a stream's whole "
    "lifetime.",
    Presence::kWhenRecorded};
constexpr FamilySpec kInFlight{"grpc_server_in_flight",
                               "Counted requests whose response body has not completed.",
                               Presence::kWhenRecorded};
constexpr FamilySpec kRequestBytes{
    "grpc_server_request_bytes_total",
    "Request body bytes consumed, including gRPC framing, excluding HTTP headers and trailers.",
    Presence::kWhenRecorded};
constexpr FamilySpec kResponseBytes{"grpc_server_response_bytes_total",
                                    "Response body bytes emitted. Emission is not receipt.",
                                    Presence::kWhenRecorded};
constexpr FamilySpec kOperationDuration{
    "xmtp_operation_duration_seconds",
    "Duration of each operation span from creation to close; error when the span recorded an "
    "error.",
    Presence::kWhenRecorded};
constexpr FamilySpec kExportFailures{"xmtp_telemetry_export_failures_total",
                                     "Export batches that failed. Not a count of lost spans.",
                                     Presence::kFailureOnly};
constexpr FamilySpec kDbReleasedOpenTransactions{
    "xmtp_db_released_open_transactions_total",
    "Transactions found open and rolled back when a connection returned to the pool.",
    Presence::kFailureOnly};
constexpr FamilySpec kDbErrors{"xmtp_db_errors_total",
                               "Database errors that were mapped to a gRPC status.",
                               Presence::kFailureOnly};
constexpr FamilySpec kPublishEnvelopes{
    "xmtp_publish_envelopes_total",
    "Every position of a decoded publish, counted once by its response origin.", Presence::kAlways};
constexpr FamilySpec kPublishRejections{
    "xmtp_publish_rejections_total",
    "Publishes rejected by validation, by the PublishError.reason returned.",
    Presence::kFailureOnly};
constexpr FamilySpec kScwVerifications{
    "xmtp_scw_verifications_total",
    "Smart contract wallet verifications, including ones answered from the cache.",
    Presence::kAlways};
constexpr FamilySpec kStreamSessions{"xmtp_stream_sessions", "Registered stream sessions.",
                                     Presence::kAlways};
constexpr FamilySpec kStreamTopicsRegistered{"xmtp_stream_topics_registered",
                                             "Registered topic interests across all sessions.",
                                             Presence::kAlways};
constexpr FamilySpec kStreamFramesSent{"xmtp_stream_frames_sent_total",
                                       "Frames admitted to a session's outbound queue.",
                                       Presence::kAlways};
constexpr FamilySpec kStreamFramesReceived{
    "xmtp_stream_frames_received_total", "Frames received from a client on a bidirectional stream.",
    Presence::kAlways};
constexpr FamilySpec kStreamEnvelopesSent{
    "xmtp_stream_envelopes_sent_total",
    "Envelopes admitted to a session's outbound queue by delivery phase. Admission is not "
    "receipt.",
    Presence::kAlways};
constexpr FamilySpec kStreamUpdates{"xmtp_stream_updates_total",
                                    "Stream interest updates by result.", Presence::kAlways};
constexpr FamilySpec kStreamEnded{"xmtp_stream_ended_total",
                                  "Registered sessions that ended, by reason.", Presence::kAlways};
constexpr FamilySpec kStreamOutboundWait{
    "xmtp_stream_outbound_wait_seconds",
    "Time a session waited for outbound capacity. Recorded only when it waited.",
    Presence::kAlways};
constexpr FamilySpec kStreamFetchWait{
    "xmtp_stream_fetch_wait_seconds",
    "Time a session waited for a fetch permit, including a wait ended by cancellation.",
    Presence::kAlways};
constexpr FamilySpec kTailerPolls{"xmtp_tailer_polls_total", "Read-database polls by result.",
                                  Presence::kAlways};
constexpr FamilySpec kTailerRows{
    "xmtp_tailer_rows_total",
    "Rows read by the forward scan and by gap probes. Not unique delivered rows.",
    Presence::kAlways};
constexpr FamilySpec kTailerGapRanges{
    "xmtp_tailer_gap_ranges",
    "Unresolved sequence id ranges. A count of ranges, not of missing ids.", Presence::kAlways};
constexpr FamilySpec kTailerRestarts{
    "xmtp_tailer_restarts_total",
    "Stream recovery generations started, including the one at startup.", Presence::kAlways};
constexpr FamilySpec kTailerReady{"xmtp_tailer_ready",
                                  "1 exactly while the backend admits streams.", Presence::kAlways};
constexpr FamilySpec kBoundaryAdvances{"xmtp_boundary_advances_total",
                                       "Allocation boundary advance attempts by result.",
                                       Presence::kAlways};
constexpr FamilySpec kBackendReady{"xmtp_backend_ready", "1 exactly while health reports SERVING.",
                                   Presence::kAlways};
constexpr FamilySpec kAuthRejections{"xmtp_auth_rejections_total",
                                     "Requests rejected by authentication, by reason.",
                                     Presence::kFailureOnly};
constexpr FamilySpec kAuthJwksRefresh{"xmtp_auth_jwks_refresh_total",
                                      "JWKS refresh attempts, by the fetch's own result.",
                                      Presence::kAlways};
constexpr FamilySpec kAuthKeys{"xmtp_auth_keys", "Keys in the key set.", Presence::kAlways};
constexpr FamilySpec kPushRecipients{"xmtp_push_recipients_total", "Push recipient changes.",
                                     Presence::kAlways};
constexpr FamilySpec kPushDeliveries{"xmtp_push_deliveries_total",
                                     "Completed push delivery attempts.", Presence::kAlways};
constexpr FamilySpec kPushDispatcher{"xmtp_push_dispatcher",
                                     "1 while this instance holds the push dispatcher lock.",
                                     Presence::kAlways};
constexpr FamilySpec kPushSubscriptions{"xmtp_push_subscriptions_total",
                                        "Push subscription topic changes.", Presence::kAlways};
constexpr FamilySpec kBackendInfo{
    "xmtp_backend_info", "Always 1, with the build version as its label.", Presence::kAlways};

// Extension families (ours, not in the OPS catalogue; docs/telemetry.md), after the catalogue.
constexpr FamilySpec kNetAcceptFailures{
    "xmtp_net_accept_failures_total",
    "Failed accepts on the gRPC port for want of descriptors or memory; each is followed by a "
    "backoff.",
    Presence::kFailureOnly};
constexpr FamilySpec kNetConnections{
    "xmtp_net_connections", "Open client connections on the gRPC port.", Presence::kAlways};
constexpr FamilySpec kNetConnectionsClosed{
    "xmtp_net_connections_closed_total",
    "Connections the server refused or closed under its connection limits, by reason.",
    Presence::kAlways};
// Extension families (docs/telemetry.md): ours, not in the OPS catalogue, named xmtp_*, with
// labels from vocabulary.h. Both count anomalies only, so both are failure-only.
constexpr FamilySpec kDbFailures{
    "xmtp_db_failures_total",
    "Store errors that failed a request UNAVAILABLE or INTERNAL, by the cause class the engine "
    "reported.",
    Presence::kFailureOnly};
constexpr FamilySpec kLogLinesSuppressed{
    "xmtp_log_lines_suppressed_total",
    "Log lines not written because their kind's budget per interval was spent; each is counted "
    "in a summary line instead.",
    Presence::kFailureOnly};

// Issue 35: the pruning pass (docs/telemetry.md, Extension metrics). Always present.
constexpr FamilySpec kPruneEnvelopes{
    "xmtp_ext_prune_envelopes_total",
    "Envelopes the pruning pass deleted (retention.prune; never an exempt envelope).",
    Presence::kAlways};
constexpr FamilySpec kPrunePassSeconds{
    "xmtp_ext_prune_pass_seconds",
    "Duration of each pruning pass, from its first batch to its last, in seconds.",
    Presence::kAlways};

bool IsHealth(Rpc rpc) { return RouteOf(rpc).is_health; }

}  // namespace

DbMetrics::DbMetrics()
    : released_open_transactions(kDbReleasedOpenTransactions),
      errors(kDbErrors),
      failures(kDbFailures) {}

LogMetrics::LogMetrics() : suppressed(kLogLinesSuppressed) {}

PruneMetrics::PruneMetrics() : envelopes(kPruneEnvelopes), pass_seconds(kPrunePassSeconds) {}

ApiMetrics::ApiMetrics()
    : publish_envelopes(kPublishEnvelopes),
      publish_rejections(kPublishRejections),
      scw_verifications(kScwVerifications) {}

StreamMetrics::StreamMetrics()
    : sessions(kStreamSessions),
      topics_registered(kStreamTopicsRegistered),
      frames_sent(kStreamFramesSent),
      frames_received(kStreamFramesReceived),
      envelopes_sent(kStreamEnvelopesSent),
      updates(kStreamUpdates),
      ended(kStreamEnded),
      outbound_wait_seconds(kStreamOutboundWait),
      fetch_wait_seconds(kStreamFetchWait) {}

TailerMetrics::TailerMetrics()
    : polls(kTailerPolls),
      rows(kTailerRows),
      gap_ranges(kTailerGapRanges),
      restarts(kTailerRestarts),
      ready(kTailerReady),
      boundary_advances(kBoundaryAdvances) {}

AuthMetrics::AuthMetrics()
    : rejections(kAuthRejections), jwks_refreshes(kAuthJwksRefresh), keys(kAuthKeys) {}

NetMetrics::NetMetrics()
    : accept_failures(kNetAcceptFailures),
      connections(kNetConnections),
      connections_closed(kNetConnectionsClosed) {}

PushMetrics::PushMetrics()
    : recipients(kPushRecipients),
      deliveries(kPushDeliveries),
      dispatcher(kPushDispatcher),
      subscriptions(kPushSubscriptions) {}

Metrics::Metrics(std::string version)
    : started_(kStarted),
      handled_(kHandled),
      handling_seconds_(kHandlingSeconds),
      in_flight_(kInFlight),
      request_bytes_(kRequestBytes),
      response_bytes_(kResponseBytes),
      operation_duration_(kOperationDuration),
      export_failures_(kExportFailures),
      backend_ready_(kBackendReady),
      backend_info_(kBackendInfo, std::move(version)),
      families_{&started_,
                &handled_,
                &handling_seconds_,
                &in_flight_,
                &request_bytes_,
                &response_bytes_,
                &operation_duration_,
                &export_failures_,
                &db_.released_open_transactions,
                &db_.errors,
                &api_.publish_envelopes,
                &api_.publish_rejections,
                &api_.scw_verifications,
                &stream_.sessions,
                &stream_.topics_registered,
                &stream_.frames_sent,
                &stream_.frames_received,
                &stream_.envelopes_sent,
                &stream_.updates,
                &stream_.ended,
                &stream_.outbound_wait_seconds,
                &stream_.fetch_wait_seconds,
                &tailer_.polls,
                &tailer_.rows,
                &tailer_.gap_ranges,
                &tailer_.restarts,
                &tailer_.ready,
                &tailer_.boundary_advances,
                &backend_ready_,
                &auth_.rejections,
                &auth_.jwks_refreshes,
                &auth_.keys,
                &push_.recipients,
                &push_.deliveries,
                &push_.dispatcher,
                &push_.subscriptions,
                &backend_info_,
                &net_.accept_failures,
                &net_.connections,
                &net_.connections_closed,
                &db_.failures,
                &log_.suppressed,
                &prune_.envelopes,
                &prune_.pass_seconds} {
  for (const Family* family : families_) {
    XB_CHECK(family != nullptr);  // every catalogue row is listed once
  }
  backend_ready_.Set(0);
}

void Metrics::RequestStarted(Rpc rpc) {
  if (IsHealth(rpc)) {
    return;  // OPS section 5: health requests are not counted
  }
  started_.Inc(rpc);
  in_flight_.Inc(rpc);
  // Show the byte series from the first request on, even for a request whose body is never read
  // (an auth rejection), so per-route byte rates have no gaps.
  request_bytes_.Add(rpc, 0);
  response_bytes_.Add(rpc, 0);
}

void Metrics::RequestHandled(Rpc rpc, StatusCode code, double seconds) {
  if (IsHealth(rpc)) {
    return;
  }
  handled_.Inc(rpc, code);
  handling_seconds_.Observe(rpc, code, seconds);
  in_flight_.Dec(rpc);
}

void Metrics::RequestBytes(Rpc rpc, uint64_t n) {
  if (!IsHealth(rpc)) {
    request_bytes_.Add(rpc, n);
  }
}

void Metrics::ResponseBytes(Rpc rpc, uint64_t n) {
  if (!IsHealth(rpc)) {
    response_bytes_.Add(rpc, n);
  }
}

void Metrics::SetReady(bool ready) { backend_ready_.Set(ready ? 1 : 0); }

void Metrics::ObserveOperation(Operation op, bool error, double seconds) {
  if (!IsCatalogueOperation(op)) {
    return;  // an extension span has no label value in the catalogue (OPS-017)
  }
  operation_duration_.Observe(op, error ? OperationStatus::kError : OperationStatus::kOk, seconds);
}

void Metrics::ExportFailure() { export_failures_.Inc(); }

std::string Metrics::Exposition() const {
  std::string out;
  out.reserve(16 * 1024);
  for (const Family* family : families_) {
    family->AppendExposition(&out);
  }
  return out;
}

}  // namespace xb::telemetry
