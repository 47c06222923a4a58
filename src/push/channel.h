// What the dispatcher (push/dispatcher.h) and the three provider channels (push/apns_channel.h,
// push/fcm_channel.h, push/webhook_channel.h) share: one attempt of one delivery and how the
// provider's answer is classified (spec/PUSH.md 8.5, 9).
//
// Threading: a ChannelSender is created, used and destroyed on the dispatcher's executor (one
// thread); attempts may overlap.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xb::push {

// Channel numbers of the wire (PUSH.md 2) and the `channel` label of xmtp_push_deliveries_total.
enum class Channel : int32_t { kApns = 1, kFcm = 2, kHttp = 3 };
std::string_view ChannelLabel(Channel channel);  // "apns", "fcm", "http"

// The provider answer classes of PUSH.md 8.5.
enum class AnswerClass : uint8_t {
  kDelivered,
  kRejected,  // also a target found invalid before sending (no request)
  kMismatch,
  kTerminal,   // the recipient is dead (deleted iff unchanged, PUSH-234)
  kTransient,  // retried after `delay` while attempts remain
  kGone,       // HTTPS 404/410 only
};

struct AttemptResult {
  AnswerClass answer = AnswerClass::kTransient;
  // The channel's retry delay before the [1 s, 300 s] clamp (transient and gone only).
  std::chrono::milliseconds delay{1000};
};

// The delivery target as the attempt uses it (the recipient's stored values).
struct Target {
  std::string recipient_id;                // 32 bytes (webhook body, lowercase hex)
  std::string delivery;                    // APNs token, FCM token or webhook URL
  std::optional<std::string> signing_key;  // webhooks
};

// What is pushed (PUSH.md 9.1): the topic bytes and the envelope's sequence id.
struct PushMessage {
  std::string topic;
  uint64_t sequence_id = 0;
};

class ChannelSender {
 public:
  virtual ~ChannelSender() = default;
  // One attempt (PUSH.md 8.5): everything (DNS, connect, credentials, request, response) bounded
  // by `deadline`; expiry is transient. Never throws; suspends.
  virtual boost::asio::awaitable<AttemptResult> Attempt(
      const Target& target, const PushMessage& message,
      std::chrono::steady_clock::time_point deadline) = 0;
};

}  // namespace xb::push
