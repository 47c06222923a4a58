// The FCM OAuth2 access token (spec/PUSH.md 9.3): an RS256 assertion signed with the service
// account's key, exchanged at token_uri (RFC 7523 JWT bearer grant) through net/http_client.
// One token is shared; it is refreshed min(expires_in, 3600) - 20 s after it was obtained;
// concurrent misses share one exchange; a failed exchange is shared with its waiters and
// remembered for 1 s. Tokens and assertions never go into a log or an error.
//
// Threading: created, used and destroyed on the FCM channel's executor. Token suspends.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/expected.h"
#include "base/status.h"
#include "config/config.h"
#include "net/http_client.h"
#include "push/jwt_sign.h"
#include "push/provider_options.h"

namespace xb::push {

// The members of push.fcm.service_account the channel uses (validated at startup, PUSH.md 9.3).
struct ServiceAccount {
  std::string project_id;
  std::string client_email;
  std::string private_key;
  std::string token_uri;
};
Expected<ServiceAccount, std::string> ParseServiceAccount(std::string_view json);

class FcmTokenSource {
 public:
  static constexpr std::chrono::seconds kFailureMemory{1};
  static constexpr std::chrono::seconds kMargin{20};
  static constexpr size_t kMaxBodyBytes = 16384;

  // `client` must outlive the source. Fails (plain words) when the private key cannot be loaded.
  static Expected<std::unique_ptr<FcmTokenSource>, std::string> Create(
      const ServiceAccount& account, net::HttpClient& client, WallClock clock);

  // The access token: the cached one, the result of an exchange already running, or of a new
  // exchange bounded by `deadline`. An error (kUnavailable) is plain words without secrets.
  // Suspends.
  boost::asio::awaitable<Result<std::string>> Token(std::chrono::steady_clock::time_point deadline);

 private:
  struct Exchange {
    std::vector<boost::asio::steady_timer*> waiters;  // woken (cancelled) when it ends
    std::optional<Result<std::string>> result;
  };
  FcmTokenSource(std::unique_ptr<SigningKey> key, ServiceAccount account, net::HttpClient& client,
                 WallClock clock);
  boost::asio::awaitable<Result<std::string>> Run(std::chrono::steady_clock::time_point deadline);
  boost::asio::awaitable<Result<std::string>> Await(std::shared_ptr<Exchange> exchange,
                                                    std::chrono::steady_clock::time_point deadline);

  // Const after construction.
  const std::unique_ptr<SigningKey> key_;
  const ServiceAccount account_;
  net::HttpClient& client_;
  const WallClock clock_;

  std::optional<std::string> token_;
  std::chrono::system_clock::time_point refresh_at_{};
  std::optional<std::chrono::system_clock::time_point> failed_at_;
  std::shared_ptr<Exchange> running_;  // the exchange in flight, if any
};

}  // namespace xb::push
