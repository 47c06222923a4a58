// Sender suppression (spec/PUSH.md section 7). Every early return delivers: the rule fails open,
// and only a constant-time match of the stored sender_hmac suppresses.
#include "push/suppression.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdint>
#include <utility>

#include "crypto/hmac_sha256.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::push {

namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;
constexpr int64_t kSecondsPerEpoch = 2'592'000;  // 30 days
constexpr int64_t kWindowSlots = 3;

// floor(a / b) for b > 0 (C++ division truncates toward zero).
int64_t FloorDiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

// The GroupMessage.data of a stored ClientEnvelope, or nothing when the payload does not decode
// or is not a group message.
std::optional<std::string> GroupMessageData(std::string_view payload) {
  if (payload.size() > static_cast<size_t>(INT32_MAX)) {
    return std::nullopt;
  }
  xmtp::backend::v1::ClientEnvelope envelope;
  if (!envelope.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
      envelope.payload_case() != xmtp::backend::v1::ClientEnvelope::kGroupMessage) {
    return std::nullopt;
  }
  return std::move(*envelope.mutable_group_message()->mutable_data());
}

}  // namespace

// implements: PUSH-230
int64_t HmacEpoch(int64_t server_ns) {
  return FloorDiv(FloorDiv(server_ns, kNanosPerSecond), kSecondsPerEpoch);
}

// implements: PUSH-230
bool Suppressed(const SuppressionInput& input) {
  if (!input.sender_hmac.has_value() || !input.hmac_epoch_base.has_value()) {
    return false;
  }
  int64_t index = 0;
  if (__builtin_sub_overflow(HmacEpoch(input.server_ns), *input.hmac_epoch_base, &index) ||
      index < 0 || index >= kWindowSlots) {
    return false;
  }
  const std::optional<std::string>& key = input.hmac_keys[static_cast<size_t>(index)];
  if (!key.has_value()) {
    return false;
  }
  const std::optional<std::string> data = GroupMessageData(input.payload);
  if (!data.has_value()) {
    return false;
  }
  const crypto::Sha256Digest mac = crypto::HmacSha256(*key, *data);
  return CRYPTO_memcmp(mac.data(), input.sender_hmac->data(), mac.size()) == 0;
}

}  // namespace xb::push
