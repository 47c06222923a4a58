// The HTTPS webhook channel (spec/PUSH.md 9.4, 9.5, 10): before every attempt the URL, the
// allowed_domains list and the signing key are checked again and the host is resolved again;
// the connection goes only to addresses resolved and checked in this attempt (a client per
// attempt, so nothing kept from an earlier check is reused); redirects are never followed. The
// request carries webhook-id (fresh UUID v4), webhook-timestamp and webhook-signature.
//
// The recipients' URLs never appear in a log or an error. The provider pin is never used.
//
// Threading: created, used and destroyed on one executor (the dispatcher's); attempts overlap.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>

#include "base/expected.h"
#include "config/config.h"
#include "push/channel.h"
#include "push/destination.h"
#include "push/provider_options.h"

namespace xb::push {

class WebhookChannel : public ChannelSender {
 public:
  static constexpr size_t kMaxBodyBytes = 16384;

  // Uses options.ca_file and options.wall_clock (webhook-timestamp); options.static_hosts is
  // ignored. Fails (plain words) when TLS cannot be set up.
  static Expected<std::unique_ptr<WebhookChannel>, std::string> Create(
      boost::asio::any_io_executor executor, const config::HttpPushConfig& config,
      const ProviderOptions& options);

  boost::asio::awaitable<AttemptResult> Attempt(
      const Target& target, const PushMessage& message,
      std::chrono::steady_clock::time_point deadline) override;

 private:
  WebhookChannel(boost::asio::any_io_executor executor, DestinationRules rules,
                 std::shared_ptr<boost::asio::ssl::context> tls, WallClock clock);

  // Const after construction.
  const boost::asio::any_io_executor executor_;
  const DestinationRules rules_;
  const std::shared_ptr<boost::asio::ssl::context> tls_;  // shared by the per-attempt clients
  const WallClock clock_;
};

}  // namespace xb::push
