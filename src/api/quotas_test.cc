#include "api/quotas.h"

#include <gtest/gtest.h>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace xb::api {
namespace {

using std::chrono::milliseconds;
using Clock = Quotas::Clock;

config::QuotasConfig Config() {
  config::QuotasConfig c;
  c.principal.publish = {.per_second = 10, .burst = 5};
  c.address.publish = {.per_second = 1, .burst = 8};
  c.principal.stream_opens = {.per_second = 1, .burst = 2};
  return c;
}

QuotaCaller Caller(std::string principal, std::string address) {
  return QuotaCaller{.principal = std::move(principal), .address = std::move(address)};
}

// verifies: issue 32 (quotas) — off by default: no bucket, nothing charged
TEST(QuotasTest, OffByDefault) {
  Quotas quotas(config::QuotasConfig{});
  EXPECT_FALSE(quotas.enabled());
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(quotas.ChargePublish(Caller("kalpha", "a"), 100, t0).ok());
    ASSERT_TRUE(quotas.ChargeStreamOpen(Caller("kalpha", "a"), t0).ok());
  }
}

// verifies: issue 32 (quotas) — one token per envelope; RESOURCE_EXHAUSTED with a RetryInfo
TEST(QuotasTest, PublishChargesEnvelopesAndAnswersWithARetryHint) {
  Quotas quotas(Config());
  ASSERT_TRUE(quotas.enabled());
  const auto t0 = Clock::now();
  ASSERT_TRUE(quotas.ChargePublish(Caller("kalpha", "a"), 5, t0).ok());
  const Status refused = quotas.ChargePublish(Caller("kalpha", "a"), 1, t0);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "publish quota of this credential is exhausted; retry in 100 ms");
  ASSERT_EQ(RetryDelayOf(refused), milliseconds(100));
  // The detail as a client reads it: google.rpc.Status with one google.rpc.RetryInfo.
  google::rpc::Status detail;
  ASSERT_TRUE(detail.ParseFromString(refused.details()));
  EXPECT_EQ(detail.code(), 8);
  ASSERT_EQ(detail.details_size(), 1);
  EXPECT_EQ(detail.details(0).type_url(), "type.googleapis.com/google.rpc.RetryInfo");
  google::rpc::RetryInfo retry;
  ASSERT_TRUE(retry.ParseFromString(detail.details(0).value()));
  EXPECT_EQ(retry.retry_delay().seconds(), 0);
  EXPECT_EQ(retry.retry_delay().nanos(), 100000000);
  // Another principal on the same address is not affected by alpha's bucket.
  EXPECT_TRUE(quotas.ChargePublish(Caller("kbeta", "a"), 1, t0).ok());
}

// verifies: issue 32 (quotas) — the address bucket applies without a principal, and a refusal
// by it gives the principal's tokens back
TEST(QuotasTest, AddressQuotaAndRefund) {
  Quotas quotas(Config());
  const auto t0 = Clock::now();
  ASSERT_TRUE(quotas.ChargePublish(Caller("", "a"), 8, t0).ok());
  const Status refused = quotas.ChargePublish(Caller("kalpha", "a"), 5, t0);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "publish quota of this client address is exhausted; retry in 5 s");
  EXPECT_EQ(RetryDelayOf(refused), std::chrono::seconds(5));
  // alpha's 5 tokens were given back: from another address alpha still has them all.
  EXPECT_TRUE(quotas.ChargePublish(Caller("kalpha", "b"), 5, t0).ok());
}

// verifies: issue 32 (quotas) — stream opens have their own buckets
TEST(QuotasTest, StreamOpens) {
  Quotas quotas(Config());
  const auto t0 = Clock::now();
  EXPECT_TRUE(quotas.ChargeStreamOpen(Caller("kalpha", "a"), t0).ok());
  EXPECT_TRUE(quotas.ChargeStreamOpen(Caller("kalpha", "a"), t0).ok());
  const Status refused = quotas.ChargeStreamOpen(Caller("kalpha", "a"), t0);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "stream open quota of this credential is exhausted; retry in 1 s");
  // No address quota for stream opens here, and publishing is unaffected.
  EXPECT_TRUE(quotas.ChargeStreamOpen(Caller("", "a"), t0).ok());
  EXPECT_TRUE(quotas.ChargePublish(Caller("kalpha", "a"), 1, t0).ok());
}

TEST(QuotasTest, RetryDelayOfOtherStatuses) {
  EXPECT_EQ(RetryDelayOf(Status::Ok()), std::nullopt);
  EXPECT_EQ(RetryDelayOf(Status(StatusCode::kResourceExhausted, "x")), std::nullopt);
  EXPECT_EQ(RetryDelayOf(QuotaExhausted("x", std::chrono::milliseconds(2500))),
            std::chrono::milliseconds(2500));
}

}  // namespace
}  // namespace xb::api
