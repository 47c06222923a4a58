#include "attach/credential_cache.h"

#include <algorithm>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

namespace xb::attach {
namespace {

namespace asio = boost::asio;
using SharedResult = Expected<std::shared_ptr<const AwsCredentials>, CredentialError>;

constexpr uint32_t kMinLifetimeSeconds = 300;  // ATCH-028
constexpr uint32_t kMaxLifetimeSeconds = 3600;

std::atomic<uint64_t> next_instance_id{1};

struct ThreadCopy {
  uint64_t instance_id = 0;
  uint64_t generation = 0;
  std::shared_ptr<const AwsCredentials> credentials;
};
thread_local ThreadCopy thread_copy;

CredentialError Unavailable() {
  return {CredentialFailure::kUnavailable, "storage credentials unavailable"};
}

}  // namespace

CredentialCache::CredentialCache(Options options, Fetcher fetcher)
    : options_(std::move(options)),
      fetcher_(std::move(fetcher)),
      instance_id_(next_instance_id.fetch_add(1, std::memory_order_relaxed)) {}

CredentialCache::~CredentialCache() { Close(); }

// implements: ATCH-028
uint32_t CredentialCache::LifetimeAt(const AwsCredentials& credentials, WallClock::time_point now,
                                     uint32_t presign_ttl_seconds) {
  uint64_t lifetime = std::min<uint64_t>(presign_ttl_seconds, kMaxLifetimeSeconds);
  if (credentials.expiry.has_value()) {
    if (*credentials.expiry <= now) {
      return 0;
    }
    // floor: a part second left does not count
    const auto remaining =
        std::chrono::duration_cast<std::chrono::seconds>(*credentials.expiry - now).count();
    lifetime = std::min<uint64_t>(lifetime, static_cast<uint64_t>(remaining));
  }
  return lifetime >= kMinLifetimeSeconds ? static_cast<uint32_t>(lifetime) : 0;
}

CredentialCache::Snapshot CredentialCache::Current() {
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (thread_copy.instance_id != instance_id_ || thread_copy.generation != generation) {
    std::lock_guard lock(mu_);
    thread_copy = {instance_id_, generation_.load(std::memory_order_relaxed), current_};
  }
  return {thread_copy.generation, thread_copy.credentials};
}

asio::awaitable<Expected<CredentialCache::Lease, CredentialError>> CredentialCache::Acquire() {
  const Snapshot cached = Current();
  if (cached.credentials != nullptr) {
    const WallClock::time_point now = options_.now();
    const uint32_t lifetime = LifetimeAt(*cached.credentials, now, options_.presign_ttl_seconds);
    if (lifetime > 0) {
      co_return Lease{cached.credentials, now, lifetime};
    }
  }
  auto initiate = [this, seen = cached.generation](auto handler) {
    auto caller = asio::get_associated_executor(handler);
    auto shared_handler = std::make_shared<decltype(handler)>(std::move(handler));
    Refresh(seen, [caller, shared_handler](SharedResult result) {
      asio::post(caller, [shared_handler, result = std::move(result)]() mutable {
        std::move (*shared_handler)(std::move(result));
      });
    });
  };
  SharedResult refreshed =
      co_await asio::async_initiate<const asio::use_awaitable_t<>, void(SharedResult)>(
          initiate, asio::use_awaitable);
  if (!refreshed.ok()) {
    co_return refreshed.error();
  }
  // 6.4: the clock is read again after the provider answered.
  const WallClock::time_point now = options_.now();
  const uint32_t lifetime = LifetimeAt(*refreshed.value(), now, options_.presign_ttl_seconds);
  if (lifetime == 0) {
    co_return Unavailable();
  }
  co_return Lease{std::move(refreshed).value(), now, lifetime};
}

void CredentialCache::Refresh(uint64_t seen_generation, Waiter waiter) {
  enum class Next { kAnswerNow, kWait, kStartFetch } next = Next::kAnswerNow;
  SharedResult answer = SharedResult(Unavailable());  // when closed
  {
    std::lock_guard lock(mu_);
    if (!closed_ && generation_.load(std::memory_order_relaxed) != seen_generation) {
      answer = SharedResult(current_);  // another request's refresh finished meanwhile: fresh
    } else if (!closed_) {
      waiters_.push_back(std::move(waiter));
      next = fetching_ ? Next::kWait : Next::kStartFetch;
      fetching_ = true;
    }
  }
  if (next == Next::kStartFetch) {
    // Outside the lock: the callback may run at once and take it.
    fetches_.fetch_add(1, std::memory_order_relaxed);
    fetcher_([this](CredentialResult result) { OnFetched(std::move(result)); });
  } else if (next == Next::kAnswerNow) {
    waiter(std::move(answer));
  }
}

void CredentialCache::OnFetched(CredentialResult result) {
  std::vector<Waiter> waiters;
  std::shared_ptr<const AwsCredentials> fresh;
  {
    std::lock_guard lock(mu_);
    fetching_ = false;
    waiters.swap(waiters_);
    if (result.ok() && !closed_) {
      fresh = std::make_shared<const AwsCredentials>(std::move(result).value());
      current_ = fresh;
      generation_.fetch_add(1, std::memory_order_release);
    }
  }
  for (Waiter& waiter : waiters) {
    if (fresh != nullptr) {
      waiter(SharedResult(fresh));
    } else if (!result.ok()) {
      waiter(SharedResult(result.error()));
    } else {
      waiter(SharedResult(Unavailable()));  // closed meanwhile
    }
  }
}

void CredentialCache::Close() {
  std::vector<Waiter> waiters;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    waiters.swap(waiters_);
  }
  for (Waiter& waiter : waiters) {
    waiter(SharedResult(Unavailable()));
  }
}

}  // namespace xb::attach
