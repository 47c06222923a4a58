// The request-shape rows of NotificationService admission (spec/PUSH.md 4.1, 5.1). The texts are
// the spec's fixed strings: none of them repeats a byte of the request (PUSH-254).
#include "push/shape.h"

#include <set>

#include "base/unicode.h"
#include "validate/topic.h"

namespace xb::push {

namespace {

constexpr size_t kRecipientBytes = 32;
constexpr size_t kMaxDeliveryScalars = 2048;
constexpr size_t kMinSigningKeyBytes = 16;
constexpr size_t kMaxSigningKeyBytes = 64;
constexpr size_t kMaxHmacKeys = 3;
constexpr size_t kHmacKeyBytes = 42;

Status Malformed() { return InvalidArgument("request is malformed"); }
Status SubscriptionMalformed() { return InvalidArgument("subscription is malformed"); }

// TOPIC-001: a group-message topic (0x00 + 16-byte group id) or a welcome topic (0x01 +
// 32-byte installation key); every other kind or length is not a push topic.
bool IsPushTopic(std::string_view topic) {
  if (!validate::ValidateRequestTopic(topic).ok()) {
    return false;
  }
  const validate::TopicKind kind = validate::KindOf(topic);
  return kind == validate::TopicKind::kGroupMessage || kind == validate::TopicKind::kWelcome;
}

// The rules of one add that do not look at the other topics of the request.
bool AddIsWellFormed(const SubscriptionInput& add) {
  if (!IsPushTopic(add.topic) || add.hmac_epoch_base < 0 || add.hmac_keys.size() > kMaxHmacKeys) {
    return false;
  }
  for (const std::string& key : add.hmac_keys) {
    if (key.size() != kHmacKeyBytes) {
      return false;
    }
  }
  return true;
}

}  // namespace

// implements: PUSH-253
Status CheckRecipientCredentials(std::string_view recipient_id, std::string_view secret) {
  if (recipient_id.size() != kRecipientBytes || secret.size() != kRecipientBytes) {
    return Malformed();
  }
  return Status::Ok();
}

// implements: PUSH-253
Status CheckDeliveryText(std::string_view text) {
  // Valid UTF-8 has no overlong forms, so U+0000 can only be the byte 0x00.
  if (text.empty() || !IsValidUtf8(text) || text.find('\0') != std::string_view::npos) {
    return Malformed();
  }
  // In valid UTF-8 every scalar value starts with exactly one non-continuation byte.
  size_t scalars = 0;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) {
      ++scalars;
    }
  }
  if (scalars > kMaxDeliveryScalars) {
    return Malformed();
  }
  return Status::Ok();
}

// implements: PUSH-253
Status CheckSigningKey(std::string_view key) {
  if (key.size() < kMinSigningKeyBytes || key.size() > kMaxSigningKeyBytes) {
    return InvalidArgument("webhook signing key length is not allowed");
  }
  return Status::Ok();
}

// implements: PUSH-215
Status CheckSubscriptions(const std::vector<SubscriptionInput>& adds,
                          const std::vector<std::string>& removes) {
  std::set<std::string_view> seen;  // adds ∪ removes: a topic at most once
  for (const SubscriptionInput& add : adds) {
    if (!AddIsWellFormed(add) || !seen.insert(add.topic).second) {
      return SubscriptionMalformed();
    }
  }
  for (const std::string& topic : removes) {
    if (!IsPushTopic(topic) || !seen.insert(topic).second) {
      return SubscriptionMalformed();
    }
  }
  return Status::Ok();
}

}  // namespace xb::push
