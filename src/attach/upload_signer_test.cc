// verifies: ATCH-023 — the signing key each I/O thread keeps is the one for the credential and
// the UTC date of the signing time: a presign across midnight, or after a credential change,
// carries the signature derived from scratch.
#include "attach/upload_signer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

namespace xb::attach {
namespace {

namespace asio = boost::asio;

config::S3Target Target(std::string access_key_id) {
  return {.endpoint = "https://s3.example.com",
          .region = "us-east-1",
          .bucket = "attachments",
          .key_prefix = "prefix/",
          .presign_ttl_seconds = 900,
          .credentials = {.kind = "static",
                          .fields = {{"access_key_id", std::move(access_key_id)},
                                     {"secret_access_key", "SECRET"}}}};
}

WallClock::time_point At(int64_t unix_seconds) {
  return WallClock::time_point(std::chrono::seconds(unix_seconds));
}

std::string PresignOn(asio::io_context& io, UploadSigner& signer, const std::string& digest) {
  std::optional<Expected<PresignedUpload, CredentialError>> out;
  auto task = [&]() -> asio::awaitable<void> {
    out.emplace(co_await signer.Presign(digest, 1234));
  };
  asio::co_spawn(io, task, asio::detached);
  io.restart();
  io.run();
  EXPECT_TRUE(out.has_value() && out->ok());
  return out.has_value() && out->ok() ? out->value().url : std::string();
}

// What the presigner derives from scratch for the same inputs.
std::string FromScratch(const config::S3Target& target, const std::string& digest,
                        WallClock::time_point time) {
  auto presigner = UploadPresigner::Create(target);
  EXPECT_TRUE(presigner.ok());
  const AwsCredentials credentials{.access_key_id = target.credentials.fields.at("access_key_id"),
                                   .secret_access_key = "SECRET"};
  return presigner.value().Presign(digest, 1234, credentials, time, 900).url;
}

TEST(UploadSigner, KeptSigningKeyFollowsTheUtcDate) {
  std::atomic<int64_t> now{1369439999};  // 2013-05-24T23:59:59Z
  auto signer = UploadSigner::Create(
      Target("AKID"), {.env = [](const std::string&) { return std::optional<std::string>(); },
                       .static_hosts = {},
                       .now = [&] { return At(now.load()); }});
  ASSERT_TRUE(signer.ok());
  asio::io_context io;
  const std::string digest(32, '\xab');
  EXPECT_EQ(PresignOn(io, *signer.value(), digest), FromScratch(Target("AKID"), digest, At(now)));
  now = 1369440001;  // two seconds later, the next UTC day: a new signing key
  EXPECT_EQ(PresignOn(io, *signer.value(), digest), FromScratch(Target("AKID"), digest, At(now)));
  EXPECT_EQ(PresignOn(io, *signer.value(), digest), FromScratch(Target("AKID"), digest, At(now)));
}

TEST(UploadSigner, KeptSigningKeyBelongsToItsSigner) {
  // Two signers with different credentials on one thread, same date: each signs with its own.
  const auto now = [] { return At(1369353600); };
  const auto env = [](const std::string&) { return std::optional<std::string>(); };
  auto first = UploadSigner::Create(Target("AKID1"), {.env = env, .static_hosts = {}, .now = now});
  auto second = UploadSigner::Create(Target("AKID2"), {.env = env, .static_hosts = {}, .now = now});
  ASSERT_TRUE(first.ok() && second.ok());
  asio::io_context io;
  const std::string digest(32, '\x01');
  EXPECT_EQ(PresignOn(io, *first.value(), digest), FromScratch(Target("AKID1"), digest, now()));
  EXPECT_EQ(PresignOn(io, *second.value(), digest), FromScratch(Target("AKID2"), digest, now()));
  EXPECT_EQ(PresignOn(io, *first.value(), digest), FromScratch(Target("AKID1"), digest, now()));
}

}  // namespace
}  // namespace xb::attach
