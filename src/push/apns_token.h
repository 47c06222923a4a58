// The APNs provider token (spec/PUSH.md 9.2): an ES256 JWT signed with push.apns.key, header
// {"alg":"ES256","kid":key_id}, claims exactly {"iss":team_id,"iat":now}. One token is shared by
// every request and re-signed after 3300 s; a signing failure is remembered for 1 s. The token is
// a credential: it never goes into a log or an error.
//
// Threading: used on the APNs channel's executor only; never suspends.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "base/status.h"
#include "config/config.h"
#include "push/jwt_sign.h"
#include "push/provider_options.h"

namespace xb::push {

class ApnsTokenSource {
 public:
  static constexpr std::chrono::seconds kLifetime{3300};
  static constexpr std::chrono::seconds kFailureMemory{1};

  // Fails (plain words, no key material) when push.apns.key is not a P-256 PKCS#8 PEM key.
  static Expected<std::unique_ptr<ApnsTokenSource>, std::string> Create(
      const config::ApnsConfig& config, WallClock clock);

  // The shared token, signed anew when none is held or it is 3300 s old. A signing failure is
  // an error for this call and for every call in the next second.
  Result<std::string> Token();

  // Forgets `token` if it is still the shared one (Apple answered ExpiredProviderToken), so that
  // the next Token() signs a new one.
  void Discard(std::string_view token);

 private:
  ApnsTokenSource(std::unique_ptr<SigningKey> key, std::string header, std::string team_id,
                  WallClock clock);

  // Const after construction.
  const std::unique_ptr<SigningKey> key_;
  const std::string header_json_;
  const std::string team_id_;
  const WallClock clock_;

  std::optional<std::string> token_;
  std::chrono::system_clock::time_point signed_at_{};
  std::optional<std::chrono::system_clock::time_point> failed_at_;
};

// Startup check (PUSH.md 12): the key must sign a token; otherwise a configuration error naming
// push.apns.key (never its value).
Status CheckApnsKeySigns(const config::ApnsConfig& config);

}  // namespace xb::push
