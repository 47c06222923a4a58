// verifies: ATCH-028 (ATTACH.md 6.4: every lifetime example, with an injected clock)
#include "attach/credential_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace xb::attach {
namespace {

namespace asio = boost::asio;
using std::chrono::seconds;
using Outcome = Expected<CredentialCache::Lease, CredentialError>;

const WallClock::time_point kT0 = WallClock::time_point(seconds(1'700'000'000));

AwsCredentials Credential(std::string id, std::optional<WallClock::time_point> expiry) {
  return {.access_key_id = std::move(id),
          .secret_access_key = "secret",
          .session_token = "",
          .expiry = expiry};
}

// A provider answered by hand: each fetch waits in `pending` until the test answers it.
struct Harness {
  WallClock::time_point now = kT0;
  std::vector<std::function<void(CredentialResult)>> pending;
  asio::io_context io;
  CredentialCache cache{
      {.presign_ttl_seconds = 900, .now = [this] { return now; }},
      [this](std::function<void(CredentialResult)> done) { pending.push_back(std::move(done)); }};

  // Starts an Acquire; its outcome lands in the returned slot once the io_context ran it.
  std::shared_ptr<std::optional<Outcome>> Start() {
    auto slot = std::make_shared<std::optional<Outcome>>();
    auto task = [this, slot]() -> asio::awaitable<void> {
      slot->emplace(co_await cache.Acquire());
    };
    asio::co_spawn(io, task, asio::detached);
    io.restart();
    io.poll();
    return slot;
  }
  // Answers the one outstanding fetch.
  void Answer(CredentialResult result) {
    ASSERT_EQ(pending.size(), 1u);
    auto done = std::move(pending.front());
    pending.clear();
    done(std::move(result));
    io.restart();
    io.poll();
  }
  // Acquire with the fetch (if one starts) answered by `result`.
  Outcome Get(std::optional<CredentialResult> result = std::nullopt) {
    auto slot = Start();
    if (!slot->has_value() && result.has_value()) {
      Answer(std::move(*result));
    }
    EXPECT_TRUE(slot->has_value());
    return slot->has_value() ? std::move(**slot) : Outcome(CredentialError{});
  }
};

TEST(CredentialCache, LifetimeExamplesOfSection6_4) {
  Harness h;
  // No expiry → 900 (the configured ttl).
  Outcome a = h.Get(Credential("AK1", std::nullopt));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value().expires_seconds, 900u);
  EXPECT_EQ(a.value().signing_time, kT0);
  EXPECT_EQ(a.value().credentials->access_key_id, "AK1");
  EXPECT_EQ(h.cache.fetches(), 1u);

  Harness h450;  // expiry in 450 s → 450
  ASSERT_TRUE(h450.Get(Credential("AK", kT0 + seconds(450))).ok());
  EXPECT_EQ(h450.Get().value().expires_seconds, 450u);

  Harness h301;  // expiry in 301 s → 301
  Outcome first = h301.Get(Credential("AK-old", kT0 + seconds(301)));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value().expires_seconds, 301u);
  EXPECT_EQ(h301.cache.fetches(), 1u);
  // Two seconds later (299 left) → refresh; the new credential expires 800 s after the first
  // signing time and is obtained 2 s after it → 798.
  h301.now = kT0 + seconds(2);
  Outcome second = h301.Get(Credential("AK-new", kT0 + seconds(800)));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(h301.cache.fetches(), 2u);
  EXPECT_EQ(second.value().credentials->access_key_id, "AK-new");
  EXPECT_EQ(second.value().expires_seconds, 798u);
  EXPECT_EQ(second.value().signing_time, kT0 + seconds(2));
}

TEST(CredentialCache, ReusesTheCachedCredentialWithoutAskingAgain) {
  Harness h;
  ASSERT_TRUE(h.Get(Credential("AK", kT0 + seconds(1000))).ok());
  h.now = kT0 + seconds(100);
  Outcome again = h.Get();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value().expires_seconds, 900u);
  h.now = kT0 + seconds(400);  // 600 left
  EXPECT_EQ(h.Get().value().expires_seconds, 600u);
  h.now = kT0 + seconds(700);  // exactly 300 left: still reused
  EXPECT_EQ(h.Get().value().expires_seconds, 300u);
  EXPECT_EQ(h.cache.fetches(), 1u);
}

TEST(CredentialCache, LifetimeFloorsPartSecondsAndCapsAt3600) {
  const AwsCredentials c = Credential("AK", kT0 + std::chrono::milliseconds(300'999));
  EXPECT_EQ(CredentialCache::LifetimeAt(c, kT0, 900), 300u);
  EXPECT_EQ(CredentialCache::LifetimeAt(c, kT0 + std::chrono::milliseconds(999), 900), 300u);
  EXPECT_EQ(CredentialCache::LifetimeAt(c, kT0 + std::chrono::milliseconds(1000), 900), 0u);
  EXPECT_EQ(CredentialCache::LifetimeAt(Credential("AK", std::nullopt), kT0, 3600), 3600u);
  EXPECT_EQ(CredentialCache::LifetimeAt(Credential("AK", std::nullopt), kT0, 5000), 3600u);
  EXPECT_EQ(CredentialCache::LifetimeAt(Credential("AK", kT0 - seconds(1)), kT0, 900), 0u);
}

TEST(CredentialCache, ConcurrentRequestsShareOneRefresh) {
  Harness h;
  auto a = h.Start();
  auto b = h.Start();
  auto c = h.Start();
  EXPECT_FALSE(a->has_value());
  EXPECT_EQ(h.cache.fetches(), 1u);
  h.Answer(Credential("AK", std::nullopt));
  for (auto* slot : {&a, &b, &c}) {
    ASSERT_TRUE((*slot)->has_value());
    ASSERT_TRUE((**slot)->ok());
    EXPECT_EQ((**slot)->value().credentials->access_key_id, "AK");
  }
  EXPECT_EQ(h.cache.fetches(), 1u);
}

TEST(CredentialCache, TheClockIsReadAgainAfterTheProviderAnswers) {
  Harness h;
  auto slot = h.Start();
  h.now = kT0 + seconds(250);  // the provider took 250 s
  h.Answer(Credential("AK", kT0 + seconds(600)));
  ASSERT_TRUE(slot->has_value() && (*slot)->ok());
  EXPECT_EQ((*slot)->value().expires_seconds, 350u);
  EXPECT_EQ((*slot)->value().signing_time, kT0 + seconds(250));
}

TEST(CredentialCache, AFreshCredentialWithLessThan300SecondsIsUnavailable) {
  Harness h;
  Outcome out = h.Get(Credential("AK", kT0 + seconds(299)));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, CredentialFailure::kUnavailable);
}

TEST(CredentialCache, AFailedRefreshNeverFallsBackToTheStaleCredential) {
  Harness h;
  ASSERT_TRUE(h.Get(Credential("AK-old", kT0 + seconds(400))).ok());
  h.now = kT0 + seconds(200);  // 200 left: refresh
  Outcome out = h.Get(CredentialResult(CredentialError{CredentialFailure::kUnavailable, "down"}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, CredentialFailure::kUnavailable);
  // The next request asks again, and succeeds when the provider does.
  Outcome next = h.Get(Credential("AK-new", std::nullopt));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next.value().credentials->access_key_id, "AK-new");
  EXPECT_EQ(h.cache.fetches(), 3u);
}

TEST(CredentialCache, AnInvalidConfigurationIsReportedAsSuch) {
  Harness h;
  Outcome out =
      h.Get(CredentialResult(CredentialError{CredentialFailure::kInvalidConfiguration, "bad"}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().kind, CredentialFailure::kInvalidConfiguration);
}

TEST(CredentialCache, CloseFailsWaitingAndLaterRequests) {
  Harness h;
  auto waiting = h.Start();
  h.cache.Close();
  h.io.restart();
  h.io.poll();
  ASSERT_TRUE(waiting->has_value());
  EXPECT_FALSE((*waiting)->ok());
  Outcome later = h.Get();
  EXPECT_FALSE(later.ok());
  // The fetch that was in flight answers after Close: nothing is resumed twice.
  h.pending.front()(Credential("AK", std::nullopt));
  EXPECT_EQ(h.cache.fetches(), 1u);
}

// Many I/O threads acquiring while the clock runs and refreshes complete on other threads: every
// answer is a credential with E in 300..400 or UNAVAILABLE, and refreshes are shared (fewer
// fetches than acquires). Run under TSan in CI.
TEST(CredentialCache, ThreadsAcquiringWhileRefreshesCompleteElsewhere) {
  std::atomic<int64_t> now_s{1'700'000'000};
  std::atomic<int> issued{0};
  std::vector<std::thread> fetch_threads;
  std::mutex fetch_threads_mu;
  CredentialCache cache({.presign_ttl_seconds = 900,
                         .now = [&] { return WallClock::time_point(seconds(now_s.load())); }},
                        [&](std::function<void(CredentialResult)> done) {
                          std::lock_guard lock(fetch_threads_mu);
                          fetch_threads.emplace_back([&, done = std::move(done)] {
                            std::this_thread::sleep_for(std::chrono::microseconds(200));
                            const int n = issued.fetch_add(1) + 1;
                            done(Credential("AK" + std::to_string(n),
                                            WallClock::time_point(seconds(now_s.load() + 400))));
                          });
                        });
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  std::atomic<int> good{0}, unavailable{0}, bad{0};
  // The io_contexts outlive every fetch thread, as the server's workers outlive the credential
  // thread: a fetch thread may still be inside its post to one when that one's run() returns.
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  for (int t = 0; t < kThreads; ++t) {
    contexts.push_back(std::make_unique<asio::io_context>());
  }
  std::vector<std::thread> io_threads;
  for (int t = 0; t < kThreads; ++t) {
    io_threads.emplace_back([&, &io = *contexts[static_cast<size_t>(t)]] {
      for (int i = 0; i < kPerThread; ++i) {
        auto task = [&]() -> asio::awaitable<void> {
          Outcome out = co_await cache.Acquire();
          if (!out.ok()) {
            ++unavailable;
          } else if (out.value().credentials != nullptr && out.value().expires_seconds >= 300 &&
                     out.value().expires_seconds <= 400) {
            ++good;
          } else {
            ++bad;
          }
        };
        asio::co_spawn(io, task, asio::detached);
        if (i % 10 == 0) {
          now_s.fetch_add(7);  // a refresh every ~15 acquires
        }
      }
      io.run();
    });
  }
  for (auto& t : io_threads) {
    t.join();
  }
  {
    std::lock_guard lock(fetch_threads_mu);
    for (auto& t : fetch_threads) {
      t.join();
    }
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(good.load() + unavailable.load(), kThreads * kPerThread);
  EXPECT_GT(good.load(), 0);
  EXPECT_LT(cache.fetches(), static_cast<uint64_t>(kThreads * kPerThread));
}

}  // namespace
}  // namespace xb::attach
