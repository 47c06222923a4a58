// The FCM HTTP v1 channel (spec/PUSH.md 9.3): POST to fcm.googleapis.com/v1/projects/<project>/
// messages:send with the shared OAuth2 access token (push/fcm_token.h), classified by the 9.3
// outcome table with its Retry-After delays.
//
// Threading: created, used and destroyed on one executor (the dispatcher's); attempts overlap.
// Destroy only after every attempt ended.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "base/expected.h"
#include "config/config.h"
#include "net/http_client.h"
#include "push/channel.h"
#include "push/fcm_token.h"
#include "push/provider_options.h"

namespace xb::push {

class FcmChannel : public ChannelSender {
 public:
  static constexpr size_t kMaxBodyBytes = 16384;

  // Fails (plain words, no key material) when the service account or its key cannot be read, or
  // TLS cannot be set up.
  static Expected<std::unique_ptr<FcmChannel>, std::string> Create(
      boost::asio::any_io_executor executor, const config::FcmConfig& config,
      ProviderOptions options);

  boost::asio::awaitable<AttemptResult> Attempt(
      const Target& target, const PushMessage& message,
      std::chrono::steady_clock::time_point deadline) override;

 private:
  FcmChannel(std::unique_ptr<net::HttpClient> client, std::string send_url, WallClock clock);

  // Const after construction. client_ is declared first: the token source refers to it.
  const std::unique_ptr<net::HttpClient> client_;
  const std::string send_url_;
  const WallClock clock_;
  std::unique_ptr<FcmTokenSource> tokens_;
};

}  // namespace xb::push
