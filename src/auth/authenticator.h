// Admission of one request (AUTH sections 1 to 6): public paths, the bearer header, API keys by
// SHA-256 digest, JWTs against the current key set, and the rejection counter and log line.
//
// Threading: Admit/Decide may be called from every worker thread at once and never block on I/O
// or suspend; they take one short per-shard mutex (the verified-token cache) and, on a cache miss,
// one to read the current key set. ReplaceKeySet may be called from any thread (the JWKS
// refresher); a request verifies against the set current when it reads it (AUTH-009: never waits
// for one).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "auth/claims.h"
#include "auth/key_set.h"
#include "auth/rejection.h"
#include "base/status.h"
#include "config/config.h"
#include "crypto/sha256.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::auth {

struct AuthenticatorOptions {
  std::string identifier;  // server.identifier, for the rejection log (OPS-013)
  telemetry::Metrics* metrics = nullptr;
  telemetry::Logger* logger = nullptr;
  // Wall clock in whole Unix seconds (AUTH 5.2 `now`). Default: the system clock.
  std::function<int64_t()> now_seconds;
  // Verified tokens kept (bounded; oldest evicted per shard). 0 turns the cache off.
  size_t cache_entries = 16384;
};

struct Decision {
  std::optional<Rejection> rejection;  // set: refused
  std::string_view api_key_name;       // admitted by an API key: its configured name (AUTH-028)
  std::string jwt_subject;             // admitted by a JWT: its `sub` (empty without one)
};

// Who an admitted credential names: the per-principal quotas' key (issue 32). Both empty for a
// public path or a JWT without `sub`.
struct Admitted {
  std::string_view api_key_name;  // owned by the Authenticator
  std::string jwt_subject;
};

class Authenticator {
 public:
  // From an enabled, checked [auth] table: API key digests (the values are not kept, AUTH 12
  // point 6) and the inline keys, parsed once (AUTH-017). A JWKS source starts with an empty key
  // set until ReplaceKeySet. Errors name auth.keys[<index>] and never the PEM.
  static Result<std::unique_ptr<Authenticator>> Create(const config::AuthConfig& config,
                                                       AuthenticatorOptions options);

  // True for /grpc.health.v1. and /xmtp.backend.v1.ConfigurationService/ paths (AUTH-002,
  // CONF-010): exact, case-sensitive prefixes of the path as received.
  static bool IsPublicPath(std::string_view path);

  // The decision alone, with no telemetry. `authorization` is the first authorization header or
  // nullptr; it is not read for a public path.
  Decision Decide(std::string_view path, const std::string* authorization);

  // Decide, then for a rejection: +1 on xmtp_auth_rejections_total{reason} and one DEBUG line
  // "authentication rejected" with request_id, identifier and reason (AUTH-027). Returns who the
  // credential names (Admitted), or the rejection status.
  Result<Admitted> Admit(std::string_view path, const std::string* authorization,
                         std::string_view request_id);

  // Publishes `keys` as the whole key set (AUTH-018) and sets xmtp_auth_keys.
  void ReplaceKeySet(std::vector<Key> keys);
  std::shared_ptr<const KeySet> key_set() const;

 private:
  struct ApiKey {
    std::string name;
    crypto::Sha256Digest digest;
  };
  struct CachedToken {
    uint64_t generation;
    Claim<int64_t> exp;
    Claim<int64_t> nbf;
    std::string subject;  // `sub`, for the quotas (bounded by the token's size)
    uint64_t inserted;    // shard-local insertion order, for eviction
  };
  struct DigestHash {
    size_t operator()(const crypto::Sha256Digest& d) const;
  };
  static constexpr size_t kShards = 16;
  struct Shard {
    std::mutex mu;
    std::unordered_map<crypto::Sha256Digest, CachedToken, DigestHash> tokens;  // guarded by mu
    uint64_t next_insert = 0;                                                  // guarded by mu
  };

  Authenticator(const config::AuthConfig& config, AuthenticatorOptions options);

  // AUTH-006: index into api_keys_ of the matching digest, over every key with no early exit.
  std::optional<size_t> MatchApiKey(const crypto::Sha256Digest& digest) const;
  // The rejection, or nullopt with the token's `sub` (empty when absent) in *subject.
  std::optional<Rejection> VerifyJwt(std::string_view token, const crypto::Sha256Digest& digest,
                                     std::string* subject);
  int64_t Now() const;

  // Const after construction.
  const AuthenticatorOptions options_;
  const bool has_jwt_source_;
  const ClaimPolicy policy_;
  const size_t shard_capacity_;
  std::vector<ApiKey> api_keys_;

  mutable std::mutex key_set_mu_;
  std::shared_ptr<const KeySet> key_set_;  // guarded by key_set_mu_
  std::atomic<uint64_t> generation_{0};    // key_set_->generation, readable without the lock
  std::array<Shard, kShards> shards_;
};

}  // namespace xb::auth
