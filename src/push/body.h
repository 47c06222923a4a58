// The push bodies of spec/PUSH.md 9.1 and the webhook signature of 9.5 (PUSH-235). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xb::push {

// The contents of a JSON string (RFC 8259 section 7): quote, backslash and control characters
// escaped, other bytes as they are.
std::string JsonEscape(std::string_view text);

// {"aps":{"content-available":1},"topic":"<b64>","sequence_id":"<dec>"}
std::string ApnsBody(std::string_view topic, uint64_t sequence_id);
// The FCM HTTP v1 send body of PUSH.md 9.3 (token JSON-escaped).
std::string FcmBody(std::string_view registration_token, std::string_view topic,
                    uint64_t sequence_id);
// {"topic":"<b64>","sequence_id":"<dec>","recipient_id":"<hex>"}, compact, in this order.
std::string WebhookBody(std::string_view topic, uint64_t sequence_id,
                        std::string_view recipient_id);
// "v1," + base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)).
std::string WebhookSignature(std::string_view signing_key, std::string_view webhook_id,
                             std::string_view timestamp, std::string_view body);
// A fresh random UUID v4 in its 36-character text form (webhook-id).
std::string NewUuidV4();

}  // namespace xb::push
