// Smart-contract-wallet signature verification over chain JSON-RPC (VALIDATION.md 5.9, API.md
// 3.11): the deployless ERC-6492 validator eth_call, the freshness probes of new identity updates
// (5.9.2), and the bounded verdict cache (5.9.4, validation.max_scw_cache_entries).
//
// Every RPC runs on the caller's executor with Boost.Beast and its own deadline
// (validation chain timeout), so a slow chain suspends only the request that needs it; no thread
// blocks. Thread-safe: the cache is guarded by a mutex; the route table is const.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

#include "validate/identity_signature.h"

namespace xb::telemetry {
class Metrics;
}

namespace xb::api {

// One verdict: valid or not, and the block it was reached at.
struct ScwVerdict {
  bool valid = false;
  uint64_t block_number = 0;
};

struct ScwVerifierOptions {
  std::map<std::string, std::string> chains = {};  // "eip155:N" -> http(s) RPC URL ([chains])
  size_t max_cache_entries = 10000;
  std::chrono::milliseconds rpc_timeout{5000};  // per JSON-RPC call
  std::string validator_bytecode =
      {};  // ERC-6492 universal validator (binary); empty: the built-in
};

class ScwVerifier {
 public:
  explicit ScwVerifier(ScwVerifierOptions options, telemetry::Metrics* metrics = nullptr);

  // 5.9.3 at `check.block_number` (nullopt: the current block, eth_blockNumber, never cached).
  // Errors: kUnavailable for every retryable failure (no route, transport, JSON-RPC error incl.
  // "execution reverted", a malformed reply). Suspends.
  boost::asio::awaitable<std::variant<ScwVerdict, validate::IdentityError>> Verify(
      validate::ScwCheck check);

  // 5.9.2 for a new identity update: for each distinct (chain, block), the block must not be
  // past the chain's head and its timestamp within 1800 s before the head's. Errors:
  // kInvalidSignature (stale block), kUnavailable (RPC failure, no route, block not returned).
  // Suspends.
  boost::asio::awaitable<std::optional<validate::IdentityError>> CheckFreshness(
      std::set<std::pair<std::string, uint64_t>> blocks);

  // The ABI call data of 5.9.3 (validator bytecode || abi.encode(signer, hash, signature)).
  // nullopt when the address is not 0x + 40 hex digits.
  std::optional<std::string> CallData(const validate::ScwCheck& check) const;

  // Cache entries held now (for tests and the bound).
  size_t cache_size() const;

 private:
  std::optional<ScwVerdict> CacheGet(const std::string& key);
  void CachePut(const std::string& key, ScwVerdict verdict);

  const ScwVerifierOptions options_;
  telemetry::Metrics* const metrics_;

  mutable std::mutex mu_;
  std::list<std::pair<std::string, ScwVerdict>> lru_;  // GUARDED_BY(mu_), most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, ScwVerdict>>::iterator>
      index_;  // GUARDED_BY(mu_)
};

// 5.9.4 cache key of a check made at a block (nullopt block: none, never cached).
std::string ScwCacheKey(const validate::ScwCheck& check);

}  // namespace xb::api
