#include "push/apns_token.h"

#include "config/config_error.h"
#include "push/body.h"

namespace xb::push {
namespace {

std::string HeaderJson(std::string_view key_id) {
  return "{\"alg\":\"ES256\",\"kid\":\"" + JsonEscape(key_id) + "\"}";
}

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

Expected<std::unique_ptr<ApnsTokenSource>, std::string> ApnsTokenSource::Create(
    const config::ApnsConfig& config, WallClock clock) {
  XB_TRY(auto key, SigningKey::FromPem(config.key, JwtAlgorithm::kEs256));
  return std::unique_ptr<ApnsTokenSource>(new ApnsTokenSource(
      std::move(key), HeaderJson(config.key_id), config.team_id, std::move(clock)));
}

ApnsTokenSource::ApnsTokenSource(std::unique_ptr<SigningKey> key, std::string header,
                                 std::string team_id, WallClock clock)
    : key_(std::move(key)),
      header_json_(std::move(header)),
      team_id_(std::move(team_id)),
      clock_(std::move(clock)) {}

// implements: PUSH-259
Result<std::string> ApnsTokenSource::Token() {
  const auto now = clock_();
  if (token_.has_value() && now - signed_at_ < kLifetime && now >= signed_at_) {
    return *token_;
  }
  if (failed_at_.has_value() && now - *failed_at_ < kFailureMemory && now >= *failed_at_) {
    return Unavailable("the provider token could not be signed");
  }
  // Claims exactly iss and iat (Apple refuses other members).
  const std::string claims =
      "{\"iss\":\"" + JsonEscape(team_id_) + "\",\"iat\":" + std::to_string(UnixSeconds(now)) + "}";
  auto signed_token = key_->SignJwt(header_json_, claims);
  if (!signed_token.ok()) {
    token_.reset();
    failed_at_ = now;
    return Unavailable("the provider token could not be signed");
  }
  failed_at_.reset();
  token_ = std::move(signed_token).value();
  signed_at_ = now;
  return *token_;
}

void ApnsTokenSource::Discard(std::string_view token) {
  if (token_.has_value() && *token_ == token) {
    token_.reset();
  }
}

Status CheckApnsKeySigns(const config::ApnsConfig& config) {
  auto source = ApnsTokenSource::Create(config, [] { return std::chrono::system_clock::now(); });
  if (!source.ok() || !(*source)->Token().ok()) {
    return config::ConfigError("push.apns.key", "must be an EC P-256 private key that can sign");
  }
  return Status::Ok();
}

}  // namespace xb::push
