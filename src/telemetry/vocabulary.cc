#include "telemetry/vocabulary.h"

namespace xb::telemetry {
namespace {

// Span names of OPS section 5 after the request spans, in Operation order.
constexpr auto kOperationNames = std::to_array<std::string_view>({
    "rpc.publish",
    "rpc.query",
    "rpc.query_newest",
    "rpc.get_inbox_ids",
    "rpc.verify_smart_contract_wallet_signatures",
    "rpc.get_configuration",
    "rpc.register",
    "rpc.unregister",
    "rpc.update_subscriptions",
    "rpc.create_upload",
    "publish.parse_publish",
    "publish.validate_publish",
    "publish.locks",
    "db.commit_publish",
    "tailer.bootstrap",
    "tailer.poll",
    "stream.fetch",
    "stream.update",
    "scw.verify",
});
static_assert(kRpcCount + kOperationNames.size() == Vocabulary<Operation>::kCount);

// Extension span names (not catalogue labels), in Operation order after the catalogue's.
constexpr auto kExtensionOperationNames = std::to_array<std::string_view>({
    "prune.pass",
    "prune.batch",
});
static_assert(kSpanOperationCount ==
              Vocabulary<Operation>::kCount + kExtensionOperationNames.size());

}  // namespace

void AppendLabelPair(std::string_view name, std::string_view value, std::string* labels) {
  if (!labels->empty()) {
    labels->push_back(',');
  }
  labels->append(name);
  labels->append("=\"");
  for (char c : value) {
    switch (c) {
      case '\\':
        labels->append("\\\\");
        break;
      case '"':
        labels->append("\\\"");
        break;
      case '\n':
        labels->append("\\n");
        break;
      default:
        labels->push_back(c);
    }
  }
  labels->push_back('"');
}

void Vocabulary<Rpc>::AppendLabels(size_t index, std::string* out) {
  const Route& route = RouteOf(static_cast<Rpc>(index));
  AppendLabelPair("grpc_service", route.grpc_service, out);
  AppendLabelPair("grpc_method", route.grpc_method, out);
  AppendLabelPair("grpc_type", route.grpc_type, out);
}

void Vocabulary<StatusCode>::AppendLabels(size_t index, std::string* out) {
  AppendLabelPair("grpc_code", StatusCodeName(static_cast<StatusCode>(index)), out);
}

std::optional<Operation> HandlerOperation(Rpc rpc) {
  switch (rpc) {
    case Rpc::kPublish:
      return Operation::kRpcPublish;
    case Rpc::kQuery:
      return Operation::kRpcQuery;
    case Rpc::kQueryNewest:
      return Operation::kRpcQueryNewest;
    case Rpc::kGetInboxIds:
      return Operation::kRpcGetInboxIds;
    case Rpc::kVerifySmartContractWalletSignatures:
      return Operation::kRpcVerifySmartContractWalletSignatures;
    case Rpc::kGetConfiguration:
      return Operation::kRpcGetConfiguration;
    case Rpc::kRegister:
      return Operation::kRpcRegister;
    case Rpc::kUnregister:
      return Operation::kRpcUnregister;
    case Rpc::kUpdateSubscriptions:
      return Operation::kRpcUpdateSubscriptions;
    case Rpc::kCreateUpload:
      return Operation::kRpcCreateUpload;
    // A V3 method that does what a v1 method does shares its handler span: the request span
    // (service/method) already tells the two apart.
    case Rpc::kV3GetInboxIds:
      return Operation::kRpcGetInboxIds;
    case Rpc::kV3VerifySmartContractWalletSignatures:
      return Operation::kRpcVerifySmartContractWalletSignatures;
    case Rpc::kV3PublishIdentityUpdate:
    case Rpc::kV3SendGroupMessages:
    case Rpc::kV3UploadKeyPackage:
    case Rpc::kV3SendWelcomeMessages:
    case Rpc::kV3RegisterInstallation:
    case Rpc::kV3BatchPublishCommitLog:
      return Operation::kRpcPublish;
    // The V3 reads are Query's work (paged topic reads; GetIdentityUpdates reads whole identity
    // logs) or QueryNewest's.
    case Rpc::kV3GetIdentityUpdates:
    case Rpc::kV3QueryGroupMessages:
    case Rpc::kV3QueryWelcomeMessages:
    case Rpc::kV3BatchQueryCommitLog:
      return Operation::kRpcQuery;
    case Rpc::kV3FetchKeyPackages:
    case Rpc::kV3GetNewestGroupMessage:
      return Operation::kRpcQueryNewest;
    case Rpc::kSubscribe:
    case Rpc::kSubscribeStatic:
    case Rpc::kV3SubscribeGroupMessages:
    case Rpc::kV3SubscribeWelcomeMessages:
    case Rpc::kV3Subscribe:
    case Rpc::kV3RevokeInstallation:
    case Rpc::kV3MlsGetIdentityUpdates:
    case Rpc::kHealthCheck:
    case Rpc::kHealthWatch:
    case Rpc::kHealthList:
    case Rpc::kUnknown:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string_view OperationName(Operation op) {
  const auto index = static_cast<size_t>(op);
  if (index < kRpcCount) {
    return RequestSpanName(static_cast<Rpc>(index));
  }
  if (index >= Vocabulary<Operation>::kCount) {
    XB_CHECK(index - Vocabulary<Operation>::kCount < kExtensionOperationNames.size());
    return kExtensionOperationNames[index - Vocabulary<Operation>::kCount];
  }
  XB_CHECK(index - kRpcCount < kOperationNames.size());
  return kOperationNames[index - kRpcCount];
}

void Vocabulary<Operation>::AppendLabels(size_t index, std::string* out) {
  AppendLabelPair("operation", OperationName(static_cast<Operation>(index)), out);
}

}  // namespace xb::telemetry
