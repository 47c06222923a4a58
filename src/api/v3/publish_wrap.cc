#include "api/v3/publish_wrap.h"

#include "validate/wire_fields.h"

namespace xb::api::v3 {
namespace {

constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kPublishEnvelopes = 1;  // PublishRequest.envelopes

void AppendVarint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void AppendField(std::string& out, uint32_t number, std::string_view bytes) {
  AppendVarint(out, (static_cast<uint64_t>(number) << 3) | kLengthDelimited);
  AppendVarint(out, bytes.size());
  out.append(bytes);
}

}  // namespace

std::optional<std::string_view> LastMessageField(std::string_view message, uint32_t number) {
  validate::WireFieldReader reader(message);
  std::optional<std::string_view> last;
  while (auto field = reader.Next()) {
    if (field->number == number && field->wire_type == kLengthDelimited) {
      last = field->bytes;
    }
  }
  if (!reader.ok()) {
    return std::nullopt;
  }
  return last;
}

std::string OneEnvelopeRequest(uint32_t payload_field, std::string_view payload) {
  std::string envelope;
  envelope.reserve(payload.size() + 12);
  AppendField(envelope, payload_field, payload);
  std::string request;
  request.reserve(envelope.size() + 12);
  AppendField(request, kPublishEnvelopes, envelope);
  return request;
}

}  // namespace xb::api::v3
