#include "api/request_bounds.h"

#include <utility>

#include "validate/wire_fields.h"

namespace xb::api {

namespace {

Status Malformed() { return InvalidArgument("request is malformed"); }

}  // namespace

Status CheckAtMost(std::string_view message, uint32_t number, uint64_t max,
                   std::string_view too_many) {
  const auto count = validate::CountField(message, number, static_cast<size_t>(max));
  if (!count) {
    return Malformed();
  }
  if (*count > max) {
    return InvalidArgument(std::string(too_many));
  }
  return Status::Ok();
}

rpc::RequestCheck AtMost(uint32_t number, uint64_t max, std::string too_many) {
  return [number, max, too_many = std::move(too_many)](std::string_view request) {
    return CheckAtMost(request, number, max, too_many);
  };
}

Status CheckSubscribeFrame(std::string_view frame, uint64_t max_adds, uint64_t max_removes) {
  constexpr uint32_t kUpdate = 1;   // SubscribeRequest.update
  constexpr uint32_t kAdds = 2;     // Update.adds
  constexpr uint32_t kRemoves = 3;  // Update.removes
  uint64_t adds = 0;
  uint64_t removes = 0;
  validate::WireFieldReader fields(frame);
  while (auto field = fields.Next()) {
    if (field->number != kUpdate || field->wire_type != 2) {
      continue;
    }
    validate::WireFieldReader update(field->bytes);
    while (auto inner = update.Next()) {
      adds += inner->number == kAdds ? 1 : 0;
      removes += inner->number == kRemoves ? 1 : 0;
      if (adds > max_adds) {
        return InvalidArgument("too many adds in one update");
      }
      if (removes > max_removes) {
        return InvalidArgument("too many removes in one update");
      }
    }
    if (!update.ok()) {
      return Malformed();
    }
  }
  return fields.ok() ? Status::Ok() : Malformed();
}

}  // namespace xb::api
