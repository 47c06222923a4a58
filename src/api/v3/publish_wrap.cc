#include "api/v3/publish_wrap.h"

#include "api/v3/wire.h"
#include "base/varint.h"
#include "validate/wire_fields.h"

namespace xb::api::v3 {
namespace {

constexpr uint32_t kPublishEnvelopes = 1;  // PublishRequest.envelopes

// WelcomeMessageInput's version field → the stored WelcomeMessage's field numbers (0: left out).
uint32_t StoredWelcomeField(uint32_t version, uint32_t number) {
  if (number >= 1 && number <= 4) {
    return number;
  }
  return version == 1 && number == 7 ? 5 : 0;
}

// One WelcomeMessageInput as a stored WelcomeMessage; false when malformed.
bool AppendWelcome(std::string_view input, std::string& out) {
  validate::WireFieldReader versions(input);
  std::string welcome;
  while (auto version = versions.Next()) {
    if (version->wire_type != kWireLengthDelimited ||
        (version->number != 1 && version->number != 2)) {
      continue;
    }
    std::string body;
    validate::WireFieldReader fields(version->bytes);
    while (auto field = fields.Next()) {
      if (const uint32_t stored = StoredWelcomeField(version->number, field->number)) {
        AppendVarint(body, (static_cast<uint64_t>(stored) << 3) | field->wire_type);
        body.append(field->raw);
      }
    }
    if (!fields.ok()) {
      return false;
    }
    AppendLengthField(welcome, version->number, body);
  }
  if (!versions.ok()) {
    return false;
  }
  std::string envelope;
  AppendLengthField(envelope, kEnvelopeWelcomeMessage, welcome);
  AppendLengthField(out, kPublishEnvelopes, envelope);
  return true;
}

}  // namespace

std::optional<std::string_view> LastMessageField(std::string_view message, uint32_t number) {
  validate::WireFieldReader reader(message);
  std::optional<std::string_view> last;
  while (auto field = reader.Next()) {
    if (field->number == number && field->wire_type == kWireLengthDelimited) {
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
  AppendLengthField(envelope, payload_field, payload);
  std::string request;
  request.reserve(envelope.size() + 12);
  AppendLengthField(request, kPublishEnvelopes, envelope);
  return request;
}

std::optional<std::string> WelcomesAsPublish(std::string_view request) {
  validate::WireFieldReader inputs(request);
  std::string publish;
  publish.reserve(request.size() + request.size() / 8 + 16);
  while (auto input = inputs.Next()) {
    if (input->number != 1) {
      continue;
    }
    if (input->wire_type != kWireLengthDelimited || !AppendWelcome(input->bytes, publish)) {
      return std::nullopt;
    }
  }
  if (!inputs.ok()) {
    return std::nullopt;
  }
  return publish;
}

}  // namespace xb::api::v3
