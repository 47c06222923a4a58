#include "telemetry/route.h"

#include <gtest/gtest.h>

#include <string>

#include "telemetry/vocabulary.h"

namespace xb::telemetry {
namespace {

struct Expected {
  std::string_view path, service, method, type;
};
// The OPS section 5 route table, copied from the spec, with our V3 rows (issue 33).
constexpr Expected kTable[] = {
    {"/xmtp.backend.v1.QueryService/Query", "xmtp.backend.v1.QueryService", "Query", "unary"},
    {"/xmtp.backend.v1.QueryService/QueryNewest", "xmtp.backend.v1.QueryService", "QueryNewest",
     "unary"},
    {"/xmtp.backend.v1.PublishService/Publish", "xmtp.backend.v1.PublishService", "Publish",
     "unary"},
    {"/xmtp.backend.v1.SubscriptionService/Subscribe", "xmtp.backend.v1.SubscriptionService",
     "Subscribe", "bidi_stream"},
    {"/xmtp.backend.v1.SubscriptionService/SubscribeStatic", "xmtp.backend.v1.SubscriptionService",
     "SubscribeStatic", "server_stream"},
    {"/xmtp.backend.v1.IdentityService/GetInboxIds", "xmtp.backend.v1.IdentityService",
     "GetInboxIds", "unary"},
    {"/xmtp.backend.v1.IdentityService/VerifySmartContractWalletSignatures",
     "xmtp.backend.v1.IdentityService", "VerifySmartContractWalletSignatures", "unary"},
    {"/xmtp.backend.v1.ConfigurationService/GetConfiguration",
     "xmtp.backend.v1.ConfigurationService", "GetConfiguration", "unary"},
    {"/xmtp.backend.v1.NotificationService/Register", "xmtp.backend.v1.NotificationService",
     "Register", "unary"},
    {"/xmtp.backend.v1.NotificationService/Unregister", "xmtp.backend.v1.NotificationService",
     "Unregister", "unary"},
    {"/xmtp.backend.v1.NotificationService/UpdateSubscriptions",
     "xmtp.backend.v1.NotificationService", "UpdateSubscriptions", "unary"},
    {"/xmtp.backend.v1.AttachmentService/CreateUpload", "xmtp.backend.v1.AttachmentService",
     "CreateUpload", "unary"},
    {"/xmtp.identity.api.v1.IdentityApi/GetInboxIds", "xmtp.identity.api.v1.IdentityApi",
     "GetInboxIds", "unary"},
    {"/xmtp.identity.api.v1.IdentityApi/VerifySmartContractWalletSignatures",
     "xmtp.identity.api.v1.IdentityApi", "VerifySmartContractWalletSignatures", "unary"},
    {"/xmtp.identity.api.v1.IdentityApi/PublishIdentityUpdate", "xmtp.identity.api.v1.IdentityApi",
     "PublishIdentityUpdate", "unary"},
    {"/xmtp.mls.api.v1.MlsApi/SendGroupMessages", "xmtp.mls.api.v1.MlsApi", "SendGroupMessages",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/UploadKeyPackage", "xmtp.mls.api.v1.MlsApi", "UploadKeyPackage",
     "unary"},
    {"/xmtp.identity.api.v1.IdentityApi/GetIdentityUpdates", "xmtp.identity.api.v1.IdentityApi",
     "GetIdentityUpdates", "unary"},
    {"/xmtp.mls.api.v1.MlsApi/SendWelcomeMessages", "xmtp.mls.api.v1.MlsApi", "SendWelcomeMessages",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/RegisterInstallation", "xmtp.mls.api.v1.MlsApi",
     "RegisterInstallation", "unary"},
    {"/xmtp.mls.api.v1.MlsApi/FetchKeyPackages", "xmtp.mls.api.v1.MlsApi", "FetchKeyPackages",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/RevokeInstallation", "xmtp.mls.api.v1.MlsApi", "RevokeInstallation",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/GetIdentityUpdates", "xmtp.mls.api.v1.MlsApi", "GetIdentityUpdates",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/QueryGroupMessages", "xmtp.mls.api.v1.MlsApi", "QueryGroupMessages",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/QueryWelcomeMessages", "xmtp.mls.api.v1.MlsApi",
     "QueryWelcomeMessages", "unary"},
    {"/xmtp.mls.api.v1.MlsApi/BatchPublishCommitLog", "xmtp.mls.api.v1.MlsApi",
     "BatchPublishCommitLog", "unary"},
    {"/xmtp.mls.api.v1.MlsApi/BatchQueryCommitLog", "xmtp.mls.api.v1.MlsApi", "BatchQueryCommitLog",
     "unary"},
    {"/xmtp.mls.api.v1.MlsApi/GetNewestGroupMessage", "xmtp.mls.api.v1.MlsApi",
     "GetNewestGroupMessage", "unary"},
    {"/xmtp.mls.api.v1.MlsApi/SubscribeGroupMessages", "xmtp.mls.api.v1.MlsApi",
     "SubscribeGroupMessages", "server_stream"},
    {"/xmtp.mls.api.v1.MlsApi/SubscribeWelcomeMessages", "xmtp.mls.api.v1.MlsApi",
     "SubscribeWelcomeMessages", "server_stream"},
    {"/xmtp.mls.api.v1.MlsApi/Subscribe", "xmtp.mls.api.v1.MlsApi", "Subscribe", "bidi_stream"},
    {"/grpc.health.v1.Health/Check", "grpc.health.v1.Health", "Check", "unary"},
    {"/grpc.health.v1.Health/Watch", "grpc.health.v1.Health", "Watch", "unary"},
    {"/grpc.health.v1.Health/List", "grpc.health.v1.Health", "List", "unary"},
};

// verifies: OPS-017 (RPC labels come only from the route table)
TEST(RouteTest, EveryTablePathMapsToItsRow) {
  ASSERT_EQ(std::size(kTable) + 1, kRpcCount);
  for (size_t i = 0; i < std::size(kTable); ++i) {
    const Route& route = LookupRoute(kTable[i].path);
    EXPECT_EQ(route.rpc, static_cast<Rpc>(i)) << kTable[i].path;
    EXPECT_EQ(route.path, kTable[i].path);
    EXPECT_EQ(route.grpc_service, kTable[i].service);
    EXPECT_EQ(route.grpc_method, kTable[i].method);
    EXPECT_EQ(route.grpc_type, kTable[i].type);
    EXPECT_EQ(route.is_health, kTable[i].service == "grpc.health.v1.Health");
    EXPECT_EQ(&RouteOf(route.rpc), &route);
  }
}

TEST(RouteTest, AnyOtherPathIsUnknown) {
  for (std::string_view path :
       {"", "/", "/xmtp.backend.v1.QueryService/Get", "/xmtp.backend.v1.QueryService/query",
        "/xmtp.backend.v1.QueryService/Query/", "/xmtp.backend.v1.QueryService/Query?x=1",
        "xmtp.backend.v1.QueryService/Query", "/some/attacker/chosen/topic-1234"}) {
    const Route& route = LookupRoute(path);
    EXPECT_EQ(route.rpc, Rpc::kUnknown) << path;
    EXPECT_EQ(route.grpc_service, "unknown");
    EXPECT_EQ(route.grpc_method, "unknown");
    EXPECT_EQ(route.grpc_type, "unary");
    EXPECT_FALSE(route.is_health);
  }
  EXPECT_EQ(RouteOf(Rpc::kUnknown).path, "");
}

// verifies: OPS-019 (request span names and operation labels come from the route table)
TEST(RouteTest, RequestSpanNamesAreServiceSlashMethod) {
  for (size_t i = 0; i < kRpcCount; ++i) {
    const auto rpc = static_cast<Rpc>(i);
    const Route& route = RouteOf(rpc);
    const std::string expected =
        std::string(route.grpc_service) + "/" + std::string(route.grpc_method);
    EXPECT_EQ(RequestSpanName(rpc), expected);
    EXPECT_EQ(OperationName(RequestOperation(rpc)), expected);
  }
  EXPECT_EQ(RequestSpanName(Rpc::kUnknown), "unknown/unknown");
  EXPECT_EQ(OperationName(Operation::kRpcPublish), "rpc.publish");
  EXPECT_EQ(OperationName(Operation::kDbCommitPublish), "db.commit_publish");
  EXPECT_EQ(OperationName(Operation::kScwVerify), "scw.verify");
}

}  // namespace
}  // namespace xb::telemetry
