#include "api/status_detail.h"

#include "google/rpc/status.pb.h"

namespace xb::api {

Status StatusWithDetail(StatusCode code, std::string message, std::string_view type_url,
                        std::string value) {
  google::rpc::Status detail;
  detail.set_code(static_cast<int>(code));
  detail.set_message(message);
  auto* any = detail.add_details();
  any->set_type_url(std::string(type_url));
  any->set_value(std::move(value));
  Status status(code, std::move(message));
  status.set_details(detail.SerializeAsString());
  return status;
}

std::optional<std::string> DetailOf(const Status& status, std::string_view type_url) {
  google::rpc::Status detail;
  if (status.details().empty() || !detail.ParseFromString(status.details()) ||
      detail.details_size() != 1 || detail.details(0).type_url() != type_url) {
    return std::nullopt;
  }
  return std::move(*detail.mutable_details(0)->mutable_value());
}

}  // namespace xb::api
