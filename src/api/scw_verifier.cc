#include "api/scw_verifier.h"

#include <algorithm>

#include "api/chain_rpc.h"
#include "api/erc6492_validator.h"
#include "crypto/keccak256.h"
#include "telemetry/metrics.h"

namespace xb::api {

namespace asio = boost::asio;
using validate::IdentityError;
using validate::IdentityFailure;

namespace {

constexpr uint64_t kMaxBlockAgeSeconds = 1800;  // IDENT-062

IdentityError Unreachable() {
  return IdentityError{IdentityFailure::kUnavailable, "signature verifier unavailable"};
}

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

void PutU64(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

// A 32-byte big-endian ABI word holding `v`.
std::string Word(uint64_t v) {
  std::string w(24, '\0');
  PutU64(w, v);
  return w;
}

int HexNibble(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

std::optional<std::string> Unhex(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = HexNibble(hex[i]);
    const int lo = HexNibble(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
}

}  // namespace

// implements: VALIDATION.md 5.9.4 (cache key)
std::string ScwCacheKey(const validate::ScwCheck& check) {
  std::string material;
  PutU32(material, static_cast<uint32_t>(check.chain.size()));
  material += check.chain;
  PutU32(material, static_cast<uint32_t>(check.address.size()));
  material += check.address;
  material += check.hash;
  PutU32(material, static_cast<uint32_t>(check.signature.size()));
  material += check.signature;
  if (check.block_number) {
    material.push_back('\x01');
    PutU64(material, *check.block_number);
  } else {
    material.push_back('\x00');
  }
  const auto digest = crypto::Keccak256(material);
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

namespace {
ScwVerifierOptions WithValidator(ScwVerifierOptions options) {
  if (options.validator_bytecode.empty()) {
    options.validator_bytecode = Unhex(kErc6492ValidatorHex).value_or(std::string());
  }
  return options;
}
}  // namespace

ScwVerifier::ScwVerifier(ScwVerifierOptions options, telemetry::Metrics* metrics)
    : options_(WithValidator(std::move(options))), metrics_(metrics) {}

// implements: VALIDATION.md 5.9.3 (validator bytecode || abi.encode(address, bytes32, bytes))
std::optional<std::string> ScwVerifier::CallData(const validate::ScwCheck& check) const {
  const std::string_view address = check.address;
  if (address.size() != 42 || address[0] != '0' || address[1] != 'x') {
    return std::nullopt;
  }
  auto signer = Unhex(address.substr(2));
  if (!signer || check.hash.size() != 32) {
    return std::nullopt;
  }
  std::string out = options_.validator_bytecode;
  out += std::string(12, '\0') + *signer;
  out += check.hash;
  out += Word(0x60);
  out += Word(check.signature.size());
  out += check.signature;
  out.append((32 - check.signature.size() % 32) % 32, '\0');
  return out;
}

size_t ScwVerifier::cache_size() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

std::optional<ScwVerdict> ScwVerifier::CacheGet(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

// implements: VALIDATION.md 5.9.4 (LRU bounded by validation.max_scw_cache_entries)
void ScwVerifier::CachePut(const std::string& key, ScwVerdict verdict) {
  std::lock_guard lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    it->second->second = verdict;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, verdict);
  index_.emplace(key, lru_.begin());
  while (lru_.size() > std::max<size_t>(options_.max_cache_entries, 1)) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

asio::awaitable<std::variant<ScwVerdict, IdentityError>> ScwVerifier::Verify(
    validate::ScwCheck check) {
  auto count = [this](telemetry::ScwResult result) {
    if (metrics_ != nullptr) {
      metrics_->api().scw_verifications.Inc(result);
    }
  };
  // IDENT-061: an unrouted chain is retryable, never a verdict.
  auto route = options_.chains.find(check.chain);
  if (route == options_.chains.end()) {
    count(telemetry::ScwResult::kError);
    co_return Unreachable();
  }
  auto data = CallData(check);
  if (!data) {
    count(telemetry::ScwResult::kError);
    co_return IdentityError{IdentityFailure::kInvalidSignature,
                            "smart contract wallet account id is not an eip155 account"};
  }
  std::string key;
  if (check.block_number) {
    key = ScwCacheKey(check);
    if (auto hit = CacheGet(key)) {
      count(hit->valid ? telemetry::ScwResult::kValid : telemetry::ScwResult::kInvalid);
      co_return *hit;
    }
  }
  uint64_t block = 0;
  if (check.block_number) {
    block = *check.block_number;
  } else {
    auto head = co_await EthBlockNumber(route->second, options_.rpc_timeout);
    if (!head.ok()) {
      count(telemetry::ScwResult::kError);
      co_return Unreachable();
    }
    block = *head;
  }
  auto reply = co_await EthCall(route->second, *std::move(data), block, options_.rpc_timeout);
  if (!reply.ok()) {
    count(telemetry::ScwResult::kError);  // [quirk] "execution reverted" included (5.9.3)
    co_return Unreachable();
  }
  const ScwVerdict verdict{.valid = *reply == std::string(1, '\x01'), .block_number = block};
  if (check.block_number) {
    CachePut(key, verdict);  // "latest" calls are never cached
  }
  count(verdict.valid ? telemetry::ScwResult::kValid : telemetry::ScwResult::kInvalid);
  co_return verdict;
}

// implements: IDENT-062 (VALIDATION.md 5.9.2)
asio::awaitable<std::optional<IdentityError>> ScwVerifier::CheckFreshness(
    std::set<std::pair<std::string, uint64_t>> blocks) {
  std::map<std::string, BlockInfo> heads;
  for (const auto& [chain, block] : blocks) {
    auto route = options_.chains.find(chain);
    if (route == options_.chains.end()) {
      co_return Unreachable();
    }
    auto head_it = heads.find(chain);
    if (head_it == heads.end()) {
      auto head = co_await EthGetBlock(route->second, std::nullopt, options_.rpc_timeout);
      if (!head.ok() || !head->has_value()) {
        co_return Unreachable();
      }
      head_it = heads.emplace(chain, **head).first;
    }
    const BlockInfo& head = head_it->second;
    if (block > head.number) {
      co_return IdentityError{IdentityFailure::kInvalidSignature, "signature block is stale"};
    }
    auto at = co_await EthGetBlock(route->second, block, options_.rpc_timeout);
    if (!at.ok() || !at->has_value()) {
      co_return Unreachable();
    }
    const uint64_t ts = (*at)->timestamp;
    if (ts > head.timestamp || head.timestamp - ts > kMaxBlockAgeSeconds) {
      co_return IdentityError{IdentityFailure::kInvalidSignature, "signature block is stale"};
    }
  }
  co_return std::nullopt;
}

}  // namespace xb::api
