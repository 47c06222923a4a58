// The V3 writes as xmtp.backend.v1 PublishRequest bytes (docs/v3-api.md 2.1, G13). A V3 request's
// payload already has the stored message's field numbers, so it is rewrapped on the wire, never
// decoded here: Publish's own parser then bounds and validates it exactly as for a v1 request
// (a decode here would cost what issue 28's pre-parse bounds exist to refuse).
//
// Pure functions; thread-safe; never suspend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xb::api::v3 {

// ClientEnvelope payload field numbers (xmtp.backend.v1.ClientEnvelope).
inline constexpr uint32_t kEnvelopeWelcomeMessage = 2;
inline constexpr uint32_t kEnvelopeKeyPackage = 3;
inline constexpr uint32_t kEnvelopeIdentityUpdate = 4;

// The bytes of the last length-delimited field `number` at the top level of `message`, or nullopt
// when there is none or the message's top level is malformed.
std::optional<std::string_view> LastMessageField(std::string_view message, uint32_t number);

// PublishRequest{envelopes: [ClientEnvelope{<payload_field>: payload}]}, encoded.
std::string OneEnvelopeRequest(uint32_t payload_field, std::string_view payload);

// A SendWelcomeMessagesRequest as a PublishRequest of welcome_message envelopes, one per input in
// order (docs/v3-api.md 3.2): WelcomeMessageInput.V1 keeps fields 1-4 and moves welcome_metadata
// from 7 to 5; a WelcomePointer keeps fields 1-4. Fields the V3 schema does not define are left
// out (the stored encoding is canonical and would drop them anyway). nullopt when the request's
// wire format is malformed.
std::optional<std::string> WelcomesAsPublish(std::string_view request);

}  // namespace xb::api::v3
