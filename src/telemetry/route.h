// The route table of OPS section 5: each gRPC request path the backend knows, with the three labels
// (grpc_service, grpc_method, grpc_type) that name it in metrics, spans and logs. The table is the
// only source of those label values, so an attacker-chosen path never becomes a label (OPS-014,
// OPS-017): any path not in the table maps to the `unknown` row.
//
// Everything here is immutable static data; every function is thread-safe and never suspends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xb::telemetry {

// One value per row of the route table, in table order, then the "any other path" row.
enum class Rpc : uint8_t {
  kQuery,
  kQueryNewest,
  kPublish,
  kSubscribe,
  kSubscribeStatic,
  kGetInboxIds,
  kVerifySmartContractWalletSignatures,
  kGetConfiguration,
  kRegister,
  kUnregister,
  kUpdateSubscriptions,
  kCreateUpload,
  // The V3 API (issue 33, docs/v3-api.md): rows are added as its methods are served.
  kV3GetInboxIds,
  kV3VerifySmartContractWalletSignatures,
  kV3PublishIdentityUpdate,
  kV3SendGroupMessages,
  kV3UploadKeyPackage,
  kV3GetIdentityUpdates,
  kV3SendWelcomeMessages,
  kV3RegisterInstallation,
  kV3FetchKeyPackages,
  kV3RevokeInstallation,
  kV3MlsGetIdentityUpdates,
  kV3QueryGroupMessages,
  kV3QueryWelcomeMessages,
  kV3BatchPublishCommitLog,
  kV3BatchQueryCommitLog,
  kV3GetNewestGroupMessage,
  kV3SubscribeGroupMessages,
  kV3SubscribeWelcomeMessages,
  kV3Subscribe,
  kHealthCheck,
  kHealthWatch,
  kHealthList,
  kUnknown,
};

inline constexpr size_t kRpcCount = static_cast<size_t>(Rpc::kUnknown) + 1;

struct Route {
  Rpc rpc;
  // The exact request path (":path" without a query string). Empty for the unknown row, which
  // stands for every other path and so has no path of its own.
  std::string_view path;
  std::string_view grpc_service;  // label grpc_service; "unknown" for the unknown row
  std::string_view grpc_method;   // label grpc_method; "unknown" for the unknown row
  std::string_view grpc_type;     // label grpc_type: unary, server_stream or bidi_stream
  bool is_health;                 // grpc.health.v1.Health: not counted by the request families
};

// The row whose path equals `path` byte for byte; the unknown row for anything else, including
// /xmtp.backend.v1.QueryService/Get, which is served but is not in the table: its metric labels
// and span name are "unknown" (DECISIONS.md), while its completion log line names its path, taken
// from the router's handler (telemetry::CompletionEvent::served_path, OPS-018).
// The returned reference is to static storage.
const Route& LookupRoute(std::string_view path);

// The row of `rpc`. `rpc` must be a declared enumerator.
const Route& RouteOf(Rpc rpc);

// The request span name of OPS section 5: "<grpc_service>/<grpc_method>", "unknown/unknown" for
// the unknown row. Static storage.
std::string_view RequestSpanName(Rpc rpc);

}  // namespace xb::telemetry
