// The request-shape rows of NotificationService admission (spec/PUSH.md 4.1 rows 1, 4d, 4e, 4f and
// section 5.1, PUSH-215). Pure; the texts are the spec's fixed strings, without request data.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/push.h"

namespace xb::push {

// Row 1: recipient_id and recipient_secret exactly 32 bytes, else INVALID_ARGUMENT
// "request is malformed".
Status CheckRecipientCredentials(std::string_view recipient_id, std::string_view secret);

// Row 4e: a token or URL that is empty, longer than 2048 Unicode scalar values, or contains
// U+0000 (or is not UTF-8) -> INVALID_ARGUMENT "request is malformed".
Status CheckDeliveryText(std::string_view text);

// Row 4d: 16..64 bytes, else INVALID_ARGUMENT "webhook signing key length is not allowed".
Status CheckSigningKey(std::string_view key);

// Section 5.1 on adds and removes; any failure: INVALID_ARGUMENT "subscription is malformed".
struct SubscriptionInput {
  std::string topic;
  int64_t hmac_epoch_base = 0;
  std::vector<std::string> hmac_keys;
  bool include_commits = false;
};
Status CheckSubscriptions(const std::vector<SubscriptionInput>& adds,
                          const std::vector<std::string>& removes);

}  // namespace xb::push
