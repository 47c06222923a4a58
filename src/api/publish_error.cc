#include "api/publish_error.h"

#include "google/rpc/status.pb.h"

namespace xb::api {

namespace v1 = xmtp::backend::v1;

namespace {
constexpr char kTypeUrl[] = "type.googleapis.com/xmtp.backend.v1.PublishError";
}  // namespace

Status PublishRejected(v1::PublishError::Reason reason, std::optional<uint32_t> index,
                       std::string message) {
  // implements: API-223
  v1::PublishError error;
  if (index) {
    error.set_index(*index);  // explicit presence: index 0 is written
  }
  error.set_reason(reason);
  error.set_message(message);
  google::rpc::Status detail;
  detail.set_code(static_cast<int>(StatusCode::kInvalidArgument));
  detail.set_message(message);
  auto* any = detail.add_details();
  any->set_type_url(kTypeUrl);
  any->set_value(error.SerializeAsString());
  Status status(StatusCode::kInvalidArgument, std::move(message));
  status.set_details(detail.SerializeAsString());
  return status;
}

std::optional<v1::PublishError> PublishErrorOf(const Status& status) {
  if (status.details().empty()) {
    return std::nullopt;
  }
  google::rpc::Status detail;
  if (!detail.ParseFromString(status.details()) || detail.details_size() != 1 ||
      detail.details(0).type_url() != kTypeUrl) {
    return std::nullopt;
  }
  v1::PublishError error;
  if (!error.ParseFromString(detail.details(0).value())) {
    return std::nullopt;
  }
  return error;
}

}  // namespace xb::api
