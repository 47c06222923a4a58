// The bodies are written by hand rather than through a JSON library: the spec fixes their bytes
// (key order, strings for sequence ids), and the webhook signature covers those exact bytes.
#include "push/body.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <cstdio>

#include "base/check.h"
#include "base/encoding.h"
#include "crypto/hmac_sha256.h"

namespace xb::push {

// A stored token is valid UTF-8 (checked at Register), so other bytes pass as they are.
std::string JsonEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

namespace {

// "topic":"<b64>","sequence_id":"<dec>" (PUSH.md 9.1: padded base64, the id as a string).
std::string DataMembers(std::string_view topic, uint64_t sequence_id) {
  return "\"topic\":\"" + Base64(topic) + "\",\"sequence_id\":\"" + std::to_string(sequence_id) +
         "\"";
}

}  // namespace

// implements: PUSH-259
std::string ApnsBody(std::string_view topic, uint64_t sequence_id) {
  return "{\"aps\":{\"content-available\":1}," + DataMembers(topic, sequence_id) + "}";
}

// implements: PUSH-259
std::string FcmBody(std::string_view registration_token, std::string_view topic,
                    uint64_t sequence_id) {
  return "{\"message\":{\"token\":\"" + JsonEscape(registration_token) + "\",\"data\":{" +
         DataMembers(topic, sequence_id) +
         "},\"android\":{\"priority\":\"HIGH\"},\"apns\":{\"headers\":{\"apns-priority\":\"5\","
         "\"apns-push-type\":\"background\"},\"payload\":{\"aps\":{\"content-available\":1}}}}}";
}

// implements: PUSH-259
std::string WebhookBody(std::string_view topic, uint64_t sequence_id,
                        std::string_view recipient_id) {
  return "{" + DataMembers(topic, sequence_id) + ",\"recipient_id\":\"" + LowerHex(recipient_id) +
         "\"}";
}

// implements: PUSH-235
std::string WebhookSignature(std::string_view signing_key, std::string_view webhook_id,
                             std::string_view timestamp, std::string_view body) {
  std::string content;
  content.reserve(webhook_id.size() + timestamp.size() + body.size() + 2);
  content.append(webhook_id).append(".").append(timestamp).append(".").append(body);
  return "v1," + Base64(crypto::AsBytes(crypto::HmacSha256(signing_key, content)));
}

// implements: PUSH-235
std::string NewUuidV4() {
  std::array<unsigned char, 16> b{};
  XB_CHECK(RAND_bytes(b.data(), static_cast<int>(b.size())) == 1);
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4 (RFC 9562 section 5.4)
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  const std::string hex = LowerHex(std::string_view(reinterpret_cast<const char*>(b.data()), 16));
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

}  // namespace xb::push
