// The label vocabularies of the OPS section 5 metric catalogue, one enum per label, each declared
// once with its label name and its words. A metric family takes these enums as its label types
// (metric_family.h), so a label value outside the catalogue cannot be expressed (OPS-017), and no
// request data can become a label (OPS-014).
//
// Vocabulary<E> describes enum E as a label dimension. A word dimension has
//   kLabel  the label name,
//   kWords  the label values, indexed by the enumerator's value,
//   kLast   the last enumerator (checked against kWords at compile time by LabelSpace).
// Rpc (three labels from the route table), StatusCode (grpc_code) and Operation (span names) are
// computed dimensions: they give kCount and AppendLabels instead.
//
// All data is immutable; every function is thread-safe and never suspends.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "telemetry/route.h"

namespace xb::telemetry {

template <typename E>
struct Vocabulary;  // specialised below, only for catalogue vocabularies

// True for a dimension described by one label and a word list.
template <typename E>
concept WordDimension = requires {
  Vocabulary<E>::kLabel;
  Vocabulary<E>::kWords;
};

// Appends `name="value"` to a series' label list, preceded by a comma unless *labels is empty,
// escaping backslash, double quote and newline as the text format requires.
void AppendLabelPair(std::string_view name, std::string_view value, std::string* labels);

// The catalogue word of `value`. `value` must be a declared enumerator.
template <WordDimension E>
constexpr std::string_view Word(E value) {
  const auto index = static_cast<size_t>(value);
  XB_CHECK(index < Vocabulary<E>::kWords.size());
  return Vocabulary<E>::kWords[index];
}

// --- Computed dimensions -------------------------------------------------------------------------

// RPC: grpc_service, grpc_method, grpc_type of the route table row.
template <>
struct Vocabulary<Rpc> {
  static constexpr size_t kCount = kRpcCount;
  static void AppendLabels(size_t index, std::string* out);
};

// grpc_code: xb::StatusCodeName, UpperCamelCase OK through Unauthenticated (DECISIONS.md).
template <>
struct Vocabulary<StatusCode> {
  static constexpr size_t kCount = kStatusCodeCount;
  static void AppendLabels(size_t index, std::string* out);
};

// operation of xmtp_operation_duration_seconds: the span catalogue of OPS section 5 (OPS-019).
// The first kRpcCount values are the request spans, in Rpc order (see RequestOperation); the
// rest are the handler, publish, stream and verification spans. db.* spans other than
// db.commit_publish are diagnostic and deliberately absent.
enum class Operation : uint8_t {
  kRequestQuery,
  kRequestQueryNewest,
  kRequestPublish,
  kRequestSubscribe,
  kRequestSubscribeStatic,
  kRequestGetInboxIds,
  kRequestVerifySmartContractWalletSignatures,
  kRequestGetConfiguration,
  kRequestRegister,
  kRequestUnregister,
  kRequestUpdateSubscriptions,
  kRequestCreateUpload,
  kRequestV3GetInboxIds,
  kRequestV3VerifySmartContractWalletSignatures,
  kRequestV3PublishIdentityUpdate,
  kRequestV3SendGroupMessages,
  kRequestV3UploadKeyPackage,
  kRequestV3GetIdentityUpdates,
  kRequestV3SendWelcomeMessages,
  kRequestV3RegisterInstallation,
  kRequestV3FetchKeyPackages,
  kRequestV3RevokeInstallation,
  kRequestV3MlsGetIdentityUpdates,
  kRequestV3QueryGroupMessages,
  kRequestV3QueryWelcomeMessages,
  kRequestV3BatchPublishCommitLog,
  kRequestV3BatchQueryCommitLog,
  kRequestV3GetNewestGroupMessage,
  kRequestV3SubscribeGroupMessages,
  kRequestV3SubscribeWelcomeMessages,
  kRequestV3Subscribe,
  kRequestHealthCheck,
  kRequestHealthWatch,
  kRequestHealthList,
  kRequestUnknown,                          // "unknown/unknown"
  kRpcPublish,                              // rpc.publish
  kRpcQuery,                                // rpc.query
  kRpcQueryNewest,                          // rpc.query_newest
  kRpcGetInboxIds,                          // rpc.get_inbox_ids
  kRpcVerifySmartContractWalletSignatures,  // rpc.verify_smart_contract_wallet_signatures
  kRpcGetConfiguration,                     // rpc.get_configuration
  kRpcRegister,                             // rpc.register
  kRpcUnregister,                           // rpc.unregister
  kRpcUpdateSubscriptions,                  // rpc.update_subscriptions
  kRpcCreateUpload,                         // rpc.create_upload
  kPublishParsePublish,                     // publish.parse_publish
  kPublishValidatePublish,                  // publish.validate_publish
  kPublishLocks,                            // publish.locks
  kDbCommitPublish,                         // db.commit_publish
  kTailerBootstrap,                         // tailer.bootstrap
  kTailerPoll,                              // tailer.poll
  kStreamFetch,                             // stream.fetch
  kStreamUpdate,                            // stream.update
  kScwVerify,                               // scw.verify
  // Extension spans (ours, issue 35): exported like the others, but outside the catalogue's
  // operation vocabulary, so never a label of xmtp_operation_duration_seconds (OPS-017).
  kPrunePass,   // prune.pass
  kPruneBatch,  // prune.batch
};
static_assert(static_cast<size_t>(Operation::kRequestUnknown) + 1 == kRpcCount);

// The request span operation of a route table row.
constexpr Operation RequestOperation(Rpc rpc) { return static_cast<Operation>(rpc); }

// The handler span (rpc.*) of a route, if the span catalogue names one: the streams and the
// health service have none.
std::optional<Operation> HandlerOperation(Rpc rpc);

// The span name: the tracer names spans with it and the metric labels with it (OPS-019).
std::string_view OperationName(Operation op);

// Whether `op` is a span of the OPS catalogue (and so a label of the operation metric).
constexpr bool IsCatalogueOperation(Operation op) { return op <= Operation::kScwVerify; }
// Every span operation, the extension spans included.
inline constexpr size_t kSpanOperationCount = static_cast<size_t>(Operation::kPruneBatch) + 1;

template <>
struct Vocabulary<Operation> {
  static constexpr size_t kCount = static_cast<size_t>(Operation::kScwVerify) + 1;
  static void AppendLabels(size_t index, std::string* out);
};

// --- Word dimensions, in catalogue order ---------------------------------------------------------

#define XB_TELEMETRY_WORDS(Enum, label, last, ...)                                 \
  template <>                                                                      \
  struct Vocabulary<Enum> {                                                        \
    static constexpr std::string_view kLabel = label;                              \
    static constexpr auto kWords = std::to_array<std::string_view>({__VA_ARGS__}); \
    static constexpr Enum kLast = Enum::last;                                      \
  }

enum class OperationStatus : uint8_t { kOk, kError };
XB_TELEMETRY_WORDS(OperationStatus, "status", kError, "ok", "error");

enum class DbErrorKind : uint8_t { kTimeout, kInvariant, kConnection, kOther };
XB_TELEMETRY_WORDS(DbErrorKind, "kind", kOther, "timeout", "invariant", "connection", "other");

enum class PublishOutcome : uint8_t { kStored, kDuplicate, kRejected };
XB_TELEMETRY_WORDS(PublishOutcome, "outcome", kRejected, "stored", "duplicate", "rejected");

// PublishError.reason values; the three handle reasons are declared only (DECISIONS.md, Handles).
enum class PublishRejectionReason : uint8_t {
  kMalformedPayload,
  kInvalidKeyPackage,
  kInvalidIdentityUpdate,
  kInvalidSignature,
  kTooLarge,
  kHandleTaken,
  kHandleNotAllowed,
  kHandleTooSoon,
};
XB_TELEMETRY_WORDS(PublishRejectionReason, "reason", kHandleTooSoon, "REASON_MALFORMED_PAYLOAD",
                   "REASON_INVALID_KEY_PACKAGE", "REASON_INVALID_IDENTITY_UPDATE",
                   "REASON_INVALID_SIGNATURE", "REASON_TOO_LARGE", "REASON_HANDLE_TAKEN",
                   "REASON_HANDLE_NOT_ALLOWED", "REASON_HANDLE_TOO_SOON");

enum class ScwResult : uint8_t { kValid, kInvalid, kError };
XB_TELEMETRY_WORDS(ScwResult, "result", kError, "valid", "invalid", "error");

enum class StreamKind : uint8_t { kBidi, kStatic };
XB_TELEMETRY_WORDS(StreamKind, "kind", kStatic, "bidi", "static");

enum class FrameSent : uint8_t { kStarted, kApplied, kMessages, kKeepalive, kPing, kPong, kUpdate };
XB_TELEMETRY_WORDS(FrameSent, "frame", kUpdate, "started", "applied", "messages", "keepalive",
                   "ping", "pong", "update");

enum class FrameReceived : uint8_t { kUpdate, kPing, kPong };
XB_TELEMETRY_WORDS(FrameReceived, "frame", kPong, "update", "ping", "pong");

enum class DeliveryPhase : uint8_t { kCatchUp, kLive };
XB_TELEMETRY_WORDS(DeliveryPhase, "phase", kLive, "catch_up", "live");

enum class UpdateOutcome : uint8_t { kApplied, kInvalid, kRateLimited };
XB_TELEMETRY_WORDS(UpdateOutcome, "outcome", kRateLimited, "applied", "invalid", "rate_limited");

enum class StreamEndReason : uint8_t {
  kClient,
  kBackpressure,
  kCapacity,
  kKeepalive,
  kTailer,
  kDatabase,
  kShutdown,
  kInvalid,
  kRateLimited,
};
XB_TELEMETRY_WORDS(StreamEndReason, "reason", kRateLimited, "client", "backpressure", "capacity",
                   "keepalive", "tailer", "database", "shutdown", "invalid", "rate_limited");

enum class TailerPollResult : uint8_t { kOk, kError };
XB_TELEMETRY_WORDS(TailerPollResult, "result", kError, "ok", "error");

enum class TailerRowSource : uint8_t { kForward, kGap };
XB_TELEMETRY_WORDS(TailerRowSource, "source", kGap, "forward", "gap");

enum class BoundaryResult : uint8_t { kOk, kLockTimeout, kError };
XB_TELEMETRY_WORDS(BoundaryResult, "result", kError, "ok", "lock_timeout", "error");

// The nine reason words of AUTH section 6.1 (AUTH-014), in its processing order.
enum class AuthRejectionReason : uint8_t {
  kMissing,
  kMalformed,
  kUnsupportedAlg,
  kUntrusted,
  kExpired,
  kNotYetValid,
  kAudience,
  kIssuer,
  kScope,
};
XB_TELEMETRY_WORDS(AuthRejectionReason, "reason", kScope, "missing", "malformed", "unsupported_alg",
                   "untrusted", "expired", "not_yet_valid", "audience", "issuer", "scope");

enum class JwksRefreshResult : uint8_t { kOk, kError };
XB_TELEMETRY_WORDS(JwksRefreshResult, "result", kError, "ok", "error");

enum class PushRecipientAction : uint8_t { kRegistered, kUnregistered, kExpired, kDead };
XB_TELEMETRY_WORDS(PushRecipientAction, "action", kDead, "registered", "unregistered", "expired",
                   "dead");

enum class PushChannel : uint8_t { kApns, kFcm, kHttp };
XB_TELEMETRY_WORDS(PushChannel, "channel", kHttp, "apns", "fcm", "http");

enum class PushOutcome : uint8_t { kDelivered, kFailed, kRejected, kMismatch, kDead, kSuppressed };
XB_TELEMETRY_WORDS(PushOutcome, "outcome", kSuppressed, "delivered", "failed", "rejected",
                   "mismatch", "dead", "suppressed");

enum class PushSubscriptionAction : uint8_t { kAdded, kRemoved };
XB_TELEMETRY_WORDS(PushSubscriptionAction, "action", kRemoved, "added", "removed");

// --- Extension families (ours, not in the OPS catalogue; docs/telemetry.md)
// -----------------------

// Why accept() failed for want of a resource (net::AcceptFailure).
enum class AcceptFailureReason : uint8_t { kDescriptors, kMemory };
XB_TELEMETRY_WORDS(AcceptFailureReason, "reason", kMemory, "descriptors", "memory");

// Why the server closed or refused a connection under its limits (net::ConnectionEnd).
enum class ConnectionCloseReason : uint8_t {
  kRefused,
  kHandshakeTimeout,
  kHeaderReadTimeout,
  kIdleTimeout,
  kControlFrameFlood,
  kBadProxyHeader,
};
XB_TELEMETRY_WORDS(ConnectionCloseReason, "reason", kBadProxyHeader, "refused", "handshake_timeout",
                   "header_read_timeout", "idle_timeout", "control_frame_flood",
                   "bad_proxy_header");
// --- Extension vocabularies: families of ours, not in the OPS catalogue (docs/telemetry.md) ------

// xmtp_log_lines_suppressed_total: the kind of line a budget refused (issue 28).
enum class SuppressedLine : uint8_t {
  kRequestCompleted,  // an OPS-018 line of a request reset before any response byte
  kStoreFailed,       // a store failure line past its cause's one line per interval
};
XB_TELEMETRY_WORDS(SuppressedLine, "line", kStoreFailed, "request_completed", "store_failed");

// xmtp_db_failures_total: the cause class of a store error that failed a request UNAVAILABLE or
// INTERNAL, as the engine classified it (store::ErrorCause).
enum class DbFailureCause : uint8_t {
  kDiskFull,
  kIoError,
  kOutOfMemory,
  kResources,
  kCannotOpen,
  kReadOnly,
  kConnection,
  kPoolTimeout,
  kTimeout,
  kCorrupt,
  kInvariant,
  kOverflow,
  kOther,
};
XB_TELEMETRY_WORDS(DbFailureCause, "cause", kOther, "disk_full", "io_error", "out_of_memory",
                   "resources", "cannot_open", "read_only", "connection", "pool_timeout", "timeout",
                   "corrupt", "invariant", "overflow", "other");

#undef XB_TELEMETRY_WORDS

}  // namespace xb::telemetry
