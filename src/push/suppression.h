// Sender suppression (spec/PUSH.md section 7, PUSH-230). Fails open: every case not listed as
// suppress delivers. Pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xb::push {

// floor(floor(server_ns / 1e9) / 2592000).
int64_t HmacEpoch(int64_t server_ns);

struct SuppressionInput {
  int64_t server_ns = 0;
  std::optional<std::array<uint8_t, 32>> sender_hmac;  // the envelope's stored sender_hmac
  std::optional<int64_t> hmac_epoch_base;              // the subscription's key window
  std::array<std::optional<std::string>, 3> hmac_keys;
  std::string_view payload;  // the stored ClientEnvelope bytes
};

// True exactly when the 32-byte sender_hmac equals (constant time) HMAC-SHA256 of the stored
// GroupMessage.data under the window key of the envelope's epoch.
bool Suppressed(const SuppressionInput& input);

}  // namespace xb::push
