// The APNs channel (spec/PUSH.md 9.2): HTTP/2 POST to api.push.apple.com (or the sandbox host)
// /3/device/<token> with the shared ES256 provider token, classified by the 9.2 outcome table.
//
// Threading: created, used and destroyed on one executor (the dispatcher's); attempts overlap on
// the one multiplexed HTTP/2 connection. Destroy only after every attempt ended.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <memory>
#include <string>

#include "base/expected.h"
#include "config/config.h"
#include "net/http_client.h"
#include "push/apns_token.h"
#include "push/channel.h"
#include "push/provider_options.h"

namespace xb::push {

class ApnsChannel : public ChannelSender {
 public:
  static constexpr size_t kMaxBodyBytes = 16384;

  // Fails (plain words, no key material) when the key cannot be loaded or TLS cannot be set up.
  static Expected<std::unique_ptr<ApnsChannel>, std::string> Create(
      boost::asio::any_io_executor executor, const config::ApnsConfig& config,
      ProviderOptions options);

  boost::asio::awaitable<AttemptResult> Attempt(
      const Target& target, const PushMessage& message,
      std::chrono::steady_clock::time_point deadline) override;

 private:
  ApnsChannel(std::unique_ptr<net::HttpClient> client, std::unique_ptr<ApnsTokenSource> tokens,
              std::string origin, std::string bundle_id);
  // One request carrying the provider token `token`. Suspends.
  boost::asio::awaitable<Expected<net::HttpResponse, net::HttpError>> Send(
      const std::string& device_token, const PushMessage& message, const std::string& token,
      std::chrono::steady_clock::time_point deadline);

  // Const after construction.
  const std::unique_ptr<net::HttpClient> client_;
  const std::unique_ptr<ApnsTokenSource> tokens_;
  const std::string origin_;  // https://api.push.apple.com or the sandbox
  const std::string bundle_id_;
};

}  // namespace xb::push
