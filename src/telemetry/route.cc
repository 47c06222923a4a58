#include "telemetry/route.h"

#include <array>

#include "base/check.h"

namespace xb::telemetry {
namespace {

// implements: OPS section 5 route table (labels for OPS-017, span names for OPS-019).
struct Row {
  Route route;
  std::string_view span_name;
};

constexpr std::array<Row, kRpcCount> kRoutes = {{
    {{Rpc::kQuery, "/xmtp.backend.v1.QueryService/Query", "xmtp.backend.v1.QueryService", "Query",
      "unary", false},
     "xmtp.backend.v1.QueryService/Query"},
    {{Rpc::kQueryNewest, "/xmtp.backend.v1.QueryService/QueryNewest",
      "xmtp.backend.v1.QueryService", "QueryNewest", "unary", false},
     "xmtp.backend.v1.QueryService/QueryNewest"},
    {{Rpc::kPublish, "/xmtp.backend.v1.PublishService/Publish", "xmtp.backend.v1.PublishService",
      "Publish", "unary", false},
     "xmtp.backend.v1.PublishService/Publish"},
    {{Rpc::kSubscribe, "/xmtp.backend.v1.SubscriptionService/Subscribe",
      "xmtp.backend.v1.SubscriptionService", "Subscribe", "bidi_stream", false},
     "xmtp.backend.v1.SubscriptionService/Subscribe"},
    {{Rpc::kSubscribeStatic, "/xmtp.backend.v1.SubscriptionService/SubscribeStatic",
      "xmtp.backend.v1.SubscriptionService", "SubscribeStatic", "server_stream", false},
     "xmtp.backend.v1.SubscriptionService/SubscribeStatic"},
    {{Rpc::kGetInboxIds, "/xmtp.backend.v1.IdentityService/GetInboxIds",
      "xmtp.backend.v1.IdentityService", "GetInboxIds", "unary", false},
     "xmtp.backend.v1.IdentityService/GetInboxIds"},
    {{Rpc::kVerifySmartContractWalletSignatures,
      "/xmtp.backend.v1.IdentityService/VerifySmartContractWalletSignatures",
      "xmtp.backend.v1.IdentityService", "VerifySmartContractWalletSignatures", "unary", false},
     "xmtp.backend.v1.IdentityService/VerifySmartContractWalletSignatures"},
    {{Rpc::kGetConfiguration, "/xmtp.backend.v1.ConfigurationService/GetConfiguration",
      "xmtp.backend.v1.ConfigurationService", "GetConfiguration", "unary", false},
     "xmtp.backend.v1.ConfigurationService/GetConfiguration"},
    {{Rpc::kRegister, "/xmtp.backend.v1.NotificationService/Register",
      "xmtp.backend.v1.NotificationService", "Register", "unary", false},
     "xmtp.backend.v1.NotificationService/Register"},
    {{Rpc::kUnregister, "/xmtp.backend.v1.NotificationService/Unregister",
      "xmtp.backend.v1.NotificationService", "Unregister", "unary", false},
     "xmtp.backend.v1.NotificationService/Unregister"},
    {{Rpc::kUpdateSubscriptions, "/xmtp.backend.v1.NotificationService/UpdateSubscriptions",
      "xmtp.backend.v1.NotificationService", "UpdateSubscriptions", "unary", false},
     "xmtp.backend.v1.NotificationService/UpdateSubscriptions"},
    {{Rpc::kCreateUpload, "/xmtp.backend.v1.AttachmentService/CreateUpload",
      "xmtp.backend.v1.AttachmentService", "CreateUpload", "unary", false},
     "xmtp.backend.v1.AttachmentService/CreateUpload"},
    {{Rpc::kV3GetInboxIds, "/xmtp.identity.api.v1.IdentityApi/GetInboxIds",
      "xmtp.identity.api.v1.IdentityApi", "GetInboxIds", "unary", false},
     "xmtp.identity.api.v1.IdentityApi/GetInboxIds"},
    {{Rpc::kV3VerifySmartContractWalletSignatures,
      "/xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures",
      "xmtp.identity.api.v1.IdentityApi", "VerifySmartContractWalletSignatures", "unary", false},
     "xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures"},
    {{Rpc::kV3PublishIdentityUpdate, "/xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate",
      "xmtp.identity.api.v1.IdentityApi", "PublishIdentityUpdate", "unary", false},
     "xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate"},
    {{Rpc::kV3SendGroupMessages, "/xmtp.mls.api.v1.MlsApi/SendGroupMessages",
      "xmtp.mls.api.v1.MlsApi", "SendGroupMessages", "unary", false},
     "xmtp.mls.api.v1.MlsApi/SendGroupMessages"},
    {{Rpc::kV3UploadKeyPackage, "/xmtp.mls.api.v1.MlsApi/UploadKeyPackage",
      "xmtp.mls.api.v1.MlsApi", "UploadKeyPackage", "unary", false},
     "xmtp.mls.api.v1.MlsApi/UploadKeyPackage"},
    {{Rpc::kV3GetIdentityUpdates, "/xmtp.identity.api.v1.IdentityApi/GetIdentityUpdates",
      "xmtp.identity.api.v1.IdentityApi", "GetIdentityUpdates", "unary", false},
     "xmtp.identity.api.v1.IdentityApi/GetIdentityUpdates"},
    {{Rpc::kV3SendWelcomeMessages, "/xmtp.mls.api.v1.MlsApi/SendWelcomeMessages",
      "xmtp.mls.api.v1.MlsApi", "SendWelcomeMessages", "unary", false},
     "xmtp.mls.api.v1.MlsApi/SendWelcomeMessages"},
    {{Rpc::kV3RegisterInstallation, "/xmtp.mls.api.v1.MlsApi/RegisterInstallation",
      "xmtp.mls.api.v1.MlsApi", "RegisterInstallation", "unary", false},
     "xmtp.mls.api.v1.MlsApi/RegisterInstallation"},
    {{Rpc::kV3FetchKeyPackages, "/xmtp.mls.api.v1.MlsApi/FetchKeyPackages",
      "xmtp.mls.api.v1.MlsApi", "FetchKeyPackages", "unary", false},
     "xmtp.mls.api.v1.MlsApi/FetchKeyPackages"},
    {{Rpc::kV3RevokeInstallation, "/xmtp.mls.api.v1.MlsApi/RevokeInstallation",
      "xmtp.mls.api.v1.MlsApi", "RevokeInstallation", "unary", false},
     "xmtp.mls.api.v1.MlsApi/RevokeInstallation"},
    {{Rpc::kV3MlsGetIdentityUpdates, "/xmtp.mls.api.v1.MlsApi/GetIdentityUpdates",
      "xmtp.mls.api.v1.MlsApi", "GetIdentityUpdates", "unary", false},
     "xmtp.mls.api.v1.MlsApi/GetIdentityUpdates"},
    {{Rpc::kV3QueryGroupMessages, "/xmtp.mls.api.v1.MlsApi/QueryGroupMessages",
      "xmtp.mls.api.v1.MlsApi", "QueryGroupMessages", "unary", false},
     "xmtp.mls.api.v1.MlsApi/QueryGroupMessages"},
    {{Rpc::kV3QueryWelcomeMessages, "/xmtp.mls.api.v1.MlsApi/QueryWelcomeMessages",
      "xmtp.mls.api.v1.MlsApi", "QueryWelcomeMessages", "unary", false},
     "xmtp.mls.api.v1.MlsApi/QueryWelcomeMessages"},
    {{Rpc::kV3BatchPublishCommitLog, "/xmtp.mls.api.v1.MlsApi/BatchPublishCommitLog",
      "xmtp.mls.api.v1.MlsApi", "BatchPublishCommitLog", "unary", false},
     "xmtp.mls.api.v1.MlsApi/BatchPublishCommitLog"},
    {{Rpc::kV3BatchQueryCommitLog, "/xmtp.mls.api.v1.MlsApi/BatchQueryCommitLog",
      "xmtp.mls.api.v1.MlsApi", "BatchQueryCommitLog", "unary", false},
     "xmtp.mls.api.v1.MlsApi/BatchQueryCommitLog"},
    {{Rpc::kV3GetNewestGroupMessage, "/xmtp.mls.api.v1.MlsApi/GetNewestGroupMessage",
      "xmtp.mls.api.v1.MlsApi", "GetNewestGroupMessage", "unary", false},
     "xmtp.mls.api.v1.MlsApi/GetNewestGroupMessage"},
    {{Rpc::kV3SubscribeGroupMessages, "/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages",
      "xmtp.mls.api.v1.MlsApi", "SubscribeGroupMessages", "server_stream", false},
     "xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages"},
    {{Rpc::kV3SubscribeWelcomeMessages, "/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages",
      "xmtp.mls.api.v1.MlsApi", "SubscribeWelcomeMessages", "server_stream", false},
     "xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages"},
    {{Rpc::kV3Subscribe, "/xmtp.mls.api.v1.MlsApi/Subscribe", "xmtp.mls.api.v1.MlsApi", "Subscribe",
      "bidi_stream", false},
     "xmtp.mls.api.v1.MlsApi/Subscribe"},
    // The table types Health/Watch as unary although it streams; the table is the contract.
    {{Rpc::kHealthCheck, "/grpc.health.v1.Health/Check", "grpc.health.v1.Health", "Check", "unary",
      true},
     "grpc.health.v1.Health/Check"},
    {{Rpc::kHealthWatch, "/grpc.health.v1.Health/Watch", "grpc.health.v1.Health", "Watch", "unary",
      true},
     "grpc.health.v1.Health/Watch"},
    {{Rpc::kHealthList, "/grpc.health.v1.Health/List", "grpc.health.v1.Health", "List", "unary",
      true},
     "grpc.health.v1.Health/List"},
    {{Rpc::kUnknown, "", "unknown", "unknown", "unary", false}, "unknown/unknown"},
}};

// Row i describes Rpc i, so RouteOf is an index; checked at compile time.
constexpr bool RowsInEnumOrder() {
  for (size_t i = 0; i < kRoutes.size(); ++i) {
    if (static_cast<size_t>(kRoutes[i].route.rpc) != i) {
      return false;
    }
  }
  return true;
}
static_assert(RowsInEnumOrder());

const Row& RowOf(Rpc rpc) {
  const auto index = static_cast<size_t>(rpc);
  XB_CHECK(index < kRpcCount);
  return kRoutes[index];
}

}  // namespace

const Route& LookupRoute(std::string_view path) {
  // 15 short comparisons; a hash map would not be faster at this size.
  for (const Row& row : kRoutes) {
    if (row.route.rpc != Rpc::kUnknown && row.route.path == path) {
      return row.route;
    }
  }
  return RowOf(Rpc::kUnknown).route;
}

const Route& RouteOf(Rpc rpc) { return RowOf(rpc).route; }

std::string_view RequestSpanName(Rpc rpc) { return RowOf(rpc).span_name; }

}  // namespace xb::telemetry
