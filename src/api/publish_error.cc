#include "api/publish_error.h"

#include <utility>

#include "api/status_detail.h"

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
  return StatusWithDetail(StatusCode::kInvalidArgument, std::move(message), kTypeUrl,
                          error.SerializeAsString());
}

std::optional<v1::PublishError> PublishErrorOf(const Status& status) {
  const std::optional<std::string> value = DetailOf(status, kTypeUrl);
  v1::PublishError error;
  if (!value || !error.ParseFromString(*value)) {
    return std::nullopt;
  }
  return error;
}

}  // namespace xb::api
