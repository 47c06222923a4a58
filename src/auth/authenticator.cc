#include "auth/authenticator.h"

#include <openssl/crypto.h>

#include <chrono>
#include <cstring>

#include "auth/bearer.h"
#include "auth/jwt.h"

namespace xb::auth {

namespace {

constexpr std::string_view kHealthPrefix = "/grpc.health.v1.";
constexpr std::string_view kConfigurationPrefix = "/xmtp.backend.v1.ConfigurationService/";

int64_t SystemNowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ClaimPolicy PolicyOf(const config::AuthConfig& config) {
  return ClaimPolicy{.audiences = config.audiences,
                     .issuers = config.issuers,
                     .required_scopes = config.required_scopes,
                     .leeway_seconds = static_cast<int64_t>(config.leeway_seconds)};
}

std::atomic<uint64_t> next_generation{1};

}  // namespace

size_t Authenticator::DigestHash::operator()(const crypto::Sha256Digest& d) const {
  size_t h;
  std::memcpy(&h, d.data(), sizeof(h));  // a SHA-256 digest is already uniformly spread
  return h;
}

Authenticator::Authenticator(const config::AuthConfig& config, AuthenticatorOptions options)
    : options_(std::move(options)),
      has_jwt_source_(config.jwks_url.has_value() || !config.keys.empty()),
      policy_(PolicyOf(config)),
      shard_capacity_((options_.cache_entries + kShards - 1) / kShards),
      key_set_(std::make_shared<KeySet>()) {}

Result<std::unique_ptr<Authenticator>> Authenticator::Create(const config::AuthConfig& config,
                                                             AuthenticatorOptions options) {
  if (!options.now_seconds) {
    options.now_seconds = SystemNowSeconds;
  }
  std::unique_ptr<Authenticator> auth(new Authenticator(config, std::move(options)));
  // implements: AUTH-006 (storage): digests only.
  for (const auto& [name, value] : config.api_keys) {
    auth->api_keys_.push_back(ApiKey{.name = name, .digest = crypto::Sha256(value)});
  }
  // implements: AUTH-017 (inline keys), parsed once; never refreshed, never stale.
  if (!config.keys.empty()) {
    std::vector<Key> keys;
    for (size_t i = 0; i < config.keys.size(); ++i) {
      const config::InlineKey& inline_key = config.keys[i];
      const std::string path = "auth.keys[" + std::to_string(i) + "]";
      std::optional<Alg> alg = AlgFromName(inline_key.alg);
      if (!alg) {
        return InvalidArgument("configuration is invalid: " + path + " (alg is not supported)");
      }
      auto made = VerifyKey::FromPem(*alg, inline_key.public_key);
      if (!made.ok()) {
        return InvalidArgument("configuration is invalid: " + path + " (" +
                               made.status().message() + ")");
      }
      keys.push_back(Key{.kid = inline_key.kid,
                         .alg = *alg,
                         .key = std::shared_ptr<const VerifyKey>(std::move(made).value())});
    }
    auth->ReplaceKeySet(std::move(keys));
  }
  return auth;
}

bool Authenticator::IsPublicPath(std::string_view path) {
  // implements: AUTH-002, CONF-010
  return path.starts_with(kHealthPrefix) || path.starts_with(kConfigurationPrefix);
}

int64_t Authenticator::Now() const { return options_.now_seconds(); }

std::optional<size_t> Authenticator::MatchApiKey(const crypto::Sha256Digest& digest) const {
  // implements: AUTH-006 (timing): every digest compared in constant time, no early exit; the
  // matching index is chosen without a branch on the comparison.
  size_t found = 0;
  size_t matched = 0;
  for (size_t i = 0; i < api_keys_.size(); ++i) {
    const size_t equal = static_cast<size_t>(
        CRYPTO_memcmp(api_keys_[i].digest.data(), digest.data(), digest.size()) == 0);
    const size_t mask = ~(equal - 1);  // all ones when equal
    found |= mask & (i + 1);
    matched |= equal;
  }
  if (matched == 0) {
    return std::nullopt;
  }
  return found - 1;
}

Decision Authenticator::Decide(std::string_view path, const std::string* authorization) {
  if (IsPublicPath(path)) {
    return {};
  }
  const BearerToken bearer = ParseBearer(authorization);
  if (bearer.rejection) {
    return {.rejection = bearer.rejection, .api_key_name = {}, .jwt_subject = {}};
  }
  const crypto::Sha256Digest digest = crypto::Sha256(bearer.token);
  if (auto index = MatchApiKey(digest)) {
    return {.rejection = std::nullopt, .api_key_name = api_keys_[*index].name, .jwt_subject = {}};
  }
  // implements: AUTH-007
  if (!has_jwt_source_) {
    return {.rejection = Rejection::kUntrusted, .api_key_name = {}, .jwt_subject = {}};
  }
  Decision decision;
  decision.rejection = VerifyJwt(bearer.token, digest, &decision.jwt_subject);
  return decision;
}

std::optional<Rejection> Authenticator::VerifyJwt(std::string_view token,
                                                  const crypto::Sha256Digest& digest,
                                                  std::string* subject) {
  const int64_t now = Now();
  Shard& shard = shards_[DigestHash{}(digest) % kShards];
  // A token verified under the current key set needs only its time checks again (J7, J8): every
  // other stage depends only on the token, the set and the configuration.
  if (shard_capacity_ > 0) {
    std::lock_guard lock(shard.mu);
    auto it = shard.tokens.find(digest);
    if (it != shard.tokens.end()) {
      if (it->second.generation == generation_.load(std::memory_order_acquire)) {
        *subject = it->second.subject;
        return CheckTimes(it->second.exp, it->second.nbf, policy_.leeway_seconds, now);
      }
      shard.tokens.erase(it);
    }
  }
  JwtParse parsed = ParseJwt(token);  // J1-J4
  if (parsed.rejection) {
    return parsed.rejection;
  }
  const Jwt& jwt = parsed.jwt;
  const std::shared_ptr<const KeySet> set = key_set();
  const Key* key = SelectKey(*set, jwt.kid, jwt.alg);  // J5
  if (key == nullptr) {
    return Rejection::kUntrusted;
  }
  // J6 before any claim is looked at (AUTH-010).
  if (!key->key->Verify(jwt.signing_input, jwt.signature)) {
    return Rejection::kUntrusted;
  }
  if (auto rejected = CheckClaims(jwt.claims, policy_, now)) {  // J7-J12
    return rejected;
  }
  *subject = jwt.claims.sub.value;
  if (shard_capacity_ > 0) {
    std::lock_guard lock(shard.mu);
    if (shard.tokens.size() >= shard_capacity_) {
      // Bounded: drop what can no longer be used, then, if still full, half of the rest.
      std::erase_if(shard.tokens, [&](const auto& entry) {
        return entry.second.generation != set->generation ||
               CheckTimes(entry.second.exp, entry.second.nbf, policy_.leeway_seconds, now);
      });
      if (shard.tokens.size() >= shard_capacity_) {
        const uint64_t cutoff = shard.next_insert - shard.tokens.size() / 2;
        std::erase_if(shard.tokens,
                      [&](const auto& entry) { return entry.second.inserted < cutoff; });
      }
    }
    shard.tokens.insert_or_assign(digest, CachedToken{.generation = set->generation,
                                                      .exp = jwt.claims.exp,
                                                      .nbf = jwt.claims.nbf,
                                                      .subject = *subject,
                                                      .inserted = shard.next_insert++});
  }
  return std::nullopt;
}

Result<Admitted> Authenticator::Admit(std::string_view path, const std::string* authorization,
                                      std::string_view request_id) {
  Decision decision = Decide(path, authorization);
  if (!decision.rejection) {
    return Admitted{.api_key_name = decision.api_key_name,
                    .jwt_subject = std::move(decision.jwt_subject)};
  }
  const telemetry::AuthRejectionReason reason = ReasonOf(*decision.rejection);
  // implements: AUTH-014 (counter), AUTH-027 and OPS-013 (the log line's three fields)
  if (options_.metrics != nullptr) {
    options_.metrics->auth().rejections.Inc(reason);
  }
  if (options_.logger != nullptr) {
    options_.logger->Debug(
        "authentication rejected",
        {telemetry::Field::RequestId(request_id), telemetry::Field::Identifier(options_.identifier),
         telemetry::Field::Reason(reason)});
  }
  return StatusOf(*decision.rejection);
}

void Authenticator::ReplaceKeySet(std::vector<Key> keys) {
  auto set = std::make_shared<KeySet>();
  set->keys = std::move(keys);
  set->generation = next_generation.fetch_add(1, std::memory_order_relaxed);
  const auto size = static_cast<int64_t>(set->keys.size());
  {
    std::lock_guard lock(key_set_mu_);
    key_set_ = std::move(set);
    generation_.store(key_set_->generation, std::memory_order_release);
  }
  if (options_.metrics != nullptr) {
    options_.metrics->auth().keys.Set(size);
  }
}

std::shared_ptr<const KeySet> Authenticator::key_set() const {
  std::lock_guard lock(key_set_mu_);
  return key_set_;
}

}  // namespace xb::auth
