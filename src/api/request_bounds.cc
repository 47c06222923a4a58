#include "api/request_bounds.h"

#include <span>
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

namespace {

// Counts fields `adds` and `removes` of every occurrence of the message at `path` (field numbers
// from the top; occurrences merge when parsed, so all of them count) against their bounds.
class FrameCounter {
 public:
  FrameCounter(uint64_t max_adds, uint64_t max_removes)
      : max_adds_(max_adds), max_removes_(max_removes) {}

  Status Count(std::string_view message, std::span<const uint32_t> path, uint32_t adds_field,
               uint32_t removes_field) {
    validate::WireFieldReader fields(message);
    while (auto field = fields.Next()) {
      if (!path.empty()) {
        if (field->number == path.front() && field->wire_type == 2) {
          XB_RETURN_IF_ERROR(Count(field->bytes, path.subspan(1), adds_field, removes_field));
        }
        continue;
      }
      // Both are length-delimited: a field of another wire type is an unknown field to protobuf.
      const bool delimited = field->wire_type == 2;
      adds_ += delimited && field->number == adds_field ? 1 : 0;
      removes_ += delimited && field->number == removes_field ? 1 : 0;
      if (adds_ > max_adds_) {
        return InvalidArgument("too many adds in one update");
      }
      if (removes_ > max_removes_) {
        return InvalidArgument("too many removes in one update");
      }
    }
    return fields.ok() ? Status::Ok() : Malformed();
  }

 private:
  const uint64_t max_adds_;
  const uint64_t max_removes_;
  uint64_t adds_ = 0;
  uint64_t removes_ = 0;
};

}  // namespace

Status CheckSubscribeFrame(std::string_view frame, uint64_t max_adds, uint64_t max_removes) {
  constexpr uint32_t kUpdate[] = {1};  // SubscribeRequest.update
  constexpr uint32_t kAdds = 2;        // Update.adds
  constexpr uint32_t kRemoves = 3;     // Update.removes
  return FrameCounter(max_adds, max_removes).Count(frame, kUpdate, kAdds, kRemoves);
}

Status CheckMutateFrame(std::string_view frame, uint64_t max_adds, uint64_t max_removes) {
  constexpr uint32_t kMutate[] = {1, 1};  // SubscribeRequest.v1, V1.mutate
  constexpr uint32_t kAdds = 1;           // Mutate.adds
  constexpr uint32_t kRemoves = 2;        // Mutate.removes
  return FrameCounter(max_adds, max_removes).Count(frame, kMutate, kAdds, kRemoves);
}

}  // namespace xb::api
