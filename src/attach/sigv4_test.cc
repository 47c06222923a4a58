// verifies: ATCH-023 (ATTACH.md 6.5 vectors A-D, byte for byte)
#include "attach/sigv4.h"

#include <gtest/gtest.h>

#include "attach/upload_presigner.h"
#include "base/encoding.h"
#include "crypto/hmac_sha256.h"

namespace xb::attach {
namespace {

WallClock::time_point At(int64_t unix_seconds) {
  return WallClock::time_point(std::chrono::seconds(unix_seconds));
}
constexpr int64_t k20130524 = 1369353600;  // 2013-05-24T00:00:00Z
constexpr int64_t k20240102 = 1704164645;  // 2024-01-02T03:04:05Z

std::string Sha256Hex(std::string_view text) {
  return LowerHex(crypto::AsBytes(crypto::Sha256(text)));
}

std::string SignatureOf(const std::string& url) {
  const size_t at = url.find("X-Amz-Signature=");
  return at == std::string::npos ? "" : url.substr(at + 16);
}

TEST(SigV4, AmzDateIsUtcWholeSeconds) {
  EXPECT_EQ(AmzDate(At(k20130524)), "20130524T000000Z");
  EXPECT_EQ(AmzDate(At(k20240102) + std::chrono::milliseconds(999)), "20240102T030405Z");
}

TEST(SigV4, UriEncodeKeepsOnlyUnreserved) {
  EXPECT_EQ(UriEncode("AZaz09-_.~", false), "AZaz09-_.~");
  EXPECT_EQ(UriEncode("a/b;c+d=e f", false), "a%2Fb%3Bc%2Bd%3De%20f");
  EXPECT_EQ(UriEncode("a/b", true), "a/b");
  EXPECT_EQ(UriEncode("\xff", false), "%FF");
}

TEST(SigV4, VectorA_AwsPublishedGetExample) {
  const AwsCredentials creds{.access_key_id = "AKIAIOSFODNN7EXAMPLE",
                             .secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
  const SigningScope scope{.region = "us-east-1", .service = "s3", .time = At(k20130524)};
  const QueryPresignRequest request{.method = "GET",
                                    .uri = "/test.txt",
                                    .headers = {{"host", "examplebucket.s3.amazonaws.com"}},
                                    .extra_params = {},
                                    .expires_seconds = 86400};
  const std::string query =
      PresignQuery(request, creds, scope, SigningKey(creds.secret_access_key, scope));
  EXPECT_EQ(SignatureOf(query), "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404");
}

config::S3Target TargetB() {
  return {.endpoint = "https://s3.example.com",
          .region = "us-east-1",
          .bucket = "attachments",
          .key_prefix = "prefix/",
          .presign_ttl_seconds = 900,
          .credentials = {}};
}

TEST(SigV4, VectorB_UploadWithoutSessionToken) {
  const std::string digest(32, '\xab');
  const std::string expected_canonical =
      "PUT\n"
      "/attachments/prefix/abababababababababababababababababababababababababababababababab\n"
      "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20130524%2Fus-east-1%2Fs3%2F"
      "aws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=content-"
      "length%3Bhost%3Bif-none-match%3Bx-amz-checksum-sha256\n"
      "content-length:1234\n"
      "host:s3.example.com\n"
      "if-none-match:*\n"
      "x-amz-checksum-sha256:q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n"
      "\n"
      "content-length;host;if-none-match;x-amz-checksum-sha256\n"
      "UNSIGNED-PAYLOAD";
  EXPECT_EQ(Sha256Hex(expected_canonical),
            "5b28496184c5a9e1227103f795f55c7ef1fa8c7cd96ea6f31479f9806c3b88f6");
  // The same canonical request from the parts.
  const std::vector<SignedHeader> headers = {
      {"content-length", "1234"},
      {"host", "s3.example.com"},
      {"if-none-match", "*"},
      {"x-amz-checksum-sha256", "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s="}};
  const SigningScope scope{.region = "us-east-1", .service = "s3", .time = At(k20130524)};
  const std::string query = CanonicalQuery({{"X-Amz-Algorithm", "AWS4-HMAC-SHA256"},
                                            {"X-Amz-Credential", "AKID/" + CredentialScope(scope)},
                                            {"X-Amz-Date", "20130524T000000Z"},
                                            {"X-Amz-Expires", "900"},
                                            {"X-Amz-SignedHeaders", SignedHeaderNames(headers)}});
  EXPECT_EQ(CanonicalRequest("PUT",
                             "/attachments/prefix/"
                             "abababababababababababababababababababababababababababababababab",
                             query, headers, "UNSIGNED-PAYLOAD"),
            expected_canonical);

  auto presigner = UploadPresigner::Create(TargetB());
  ASSERT_TRUE(presigner.ok());
  const PresignedUpload upload = presigner.value().Presign(
      digest, 1234, {.access_key_id = "AKID", .secret_access_key = "SECRET"}, At(k20130524), 900);
  EXPECT_EQ(upload.url,
            "https://s3.example.com/attachments/prefix/"
            "abababababababababababababababababababababababababababababababab?X-Amz-Algorithm=AWS4-"
            "HMAC-SHA256&X-Amz-Credential=AKID%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-"
            "Date=20130524T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=content-length%3Bhost%"
            "3Bif-none-match%3Bx-amz-checksum-sha256&X-Amz-Signature="
            "8d9fdfa92915acf4698c870f7707725ff94a77bb1c1d5a554b5d10f7f00d9634");
  ASSERT_EQ(upload.headers.size(), 3u);
  EXPECT_EQ(upload.headers[0].name, "content-length");
  EXPECT_EQ(upload.headers[0].value, "1234");
  EXPECT_EQ(upload.headers[1].name, "if-none-match");
  EXPECT_EQ(upload.headers[1].value, "*");
  EXPECT_EQ(upload.headers[2].name, "x-amz-checksum-sha256");
  EXPECT_EQ(upload.headers[2].value, "q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=");
  EXPECT_EQ(upload.expires_in_seconds, 900u);
}

TEST(SigV4, VectorC_UploadWithSessionToken) {
  auto presigner = UploadPresigner::Create(TargetB());
  ASSERT_TRUE(presigner.ok());
  const PresignedUpload upload =
      presigner.value().Presign(std::string(32, '\xab'), 1234,
                                {.access_key_id = "AKID",
                                 .secret_access_key = "SECRET",
                                 .session_token = "SESSION_TOKEN_SECRET"},
                                At(k20130524), 900);
  EXPECT_NE(upload.url.find("&X-Amz-Expires=900&X-Amz-Security-Token=SESSION_TOKEN_SECRET&X-Amz-"
                            "SignedHeaders="),
            std::string::npos);
  EXPECT_EQ(SignatureOf(upload.url),
            "74fd644873586d8d09b4a1373b3f88a5f6afffa02f54a701371c02d949991cf6");
}

TEST(SigV4, VectorD_LoopbackEndpointWithPortAndPath) {
  const std::string ciphertext = "hello attachment";
  const crypto::Sha256Digest digest = crypto::Sha256(ciphertext);
  EXPECT_EQ(LowerHex(crypto::AsBytes(digest)),
            "7fa36b95d5c98859ed72b4787f3c28b29eaa103970786755c9711cbb19be631c");
  EXPECT_EQ(Base64(crypto::AsBytes(digest)), "f6NrldXJiFntcrR4fzwosp6qEDlweGdVyXEcuxm+Yxw=");
  const config::S3Target target{.endpoint = "http://127.0.0.1:9067/storage",
                                .region = "eu-west-1",
                                .bucket = "xmtp-attachments",
                                .key_prefix = "",
                                .presign_ttl_seconds = 300,
                                .credentials = {}};
  auto presigner = UploadPresigner::Create(target);
  ASSERT_TRUE(presigner.ok());
  const PresignedUpload upload = presigner.value().Presign(
      std::string_view(reinterpret_cast<const char*>(digest.data()), 32), 16,
      {.access_key_id = "xmtps3", .secret_access_key = "xmtps3secret"}, At(k20240102), 300);
  EXPECT_EQ(upload.url.substr(0, upload.url.find('?')),
            "http://127.0.0.1:9067/storage/xmtp-attachments/"
            "7fa36b95d5c98859ed72b4787f3c28b29eaa103970786755c9711cbb19be631c");
  EXPECT_EQ(SignatureOf(upload.url),
            "caf237c0b497c101e7fce698e60ca4178f6a1a4c503dd6fd555f6335c8f8bf81");
  EXPECT_EQ(upload.expires_in_seconds, 300u);
}

// 6.1's examples and rules: trailing '/' of the endpoint, prefix without '/', default port.
TEST(UploadPresigner, ObjectUrlFollowsSection6_1) {
  const std::string digest(32, '\x01');
  const std::string hex = LowerHex(digest);
  const auto url_of = [&](config::S3Target target) {
    auto presigner = UploadPresigner::Create(target);
    EXPECT_TRUE(presigner.ok());
    const std::string url = presigner.value().Presign(digest, 1, {}, At(k20130524), 300).url;
    return url.substr(0, url.find('?'));
  };
  config::S3Target t{.endpoint = "http://127.0.0.1:9067/storage/",
                     .region = "r",
                     .bucket = "xmtp-attachments",
                     .key_prefix = "",
                     .presign_ttl_seconds = 300,
                     .credentials = {}};
  EXPECT_EQ(url_of(t), "http://127.0.0.1:9067/storage/xmtp-attachments/" + hex);
  t.endpoint = "https://s3.example.com";
  t.key_prefix = "p";
  EXPECT_EQ(url_of(t), "https://s3.example.com/xmtp-attachments/p" + hex);
  t.key_prefix = "a/b/";
  EXPECT_EQ(url_of(t), "https://s3.example.com/xmtp-attachments/a/b/" + hex);
  t.key_prefix = "a/b/c-";
  EXPECT_EQ(url_of(t), "https://s3.example.com/xmtp-attachments/a/b/c-" + hex);
  t.bucket = "odd bucket";
  t.key_prefix = "";
  EXPECT_EQ(url_of(t), "https://s3.example.com/odd%20bucket/" + hex);
}

TEST(UploadPresigner, SignedHostDropsOnlyTheDefaultPort) {
  const auto signature_for = [](const std::string& endpoint) {
    config::S3Target t{.endpoint = endpoint,
                       .region = "us-east-1",
                       .bucket = "attachments",
                       .key_prefix = "prefix/",
                       .presign_ttl_seconds = 900,
                       .credentials = {}};
    auto presigner = UploadPresigner::Create(t);
    EXPECT_TRUE(presigner.ok());
    return SignatureOf(presigner.value()
                           .Presign(std::string(32, '\xab'), 1234,
                                    {.access_key_id = "AKID", .secret_access_key = "SECRET"},
                                    At(k20130524), 900)
                           .url);
  };
  // Vector B's signature: host "s3.example.com" whether or not :443 is written.
  EXPECT_EQ(signature_for("https://S3.Example.com:443"),
            "8d9fdfa92915acf4698c870f7707725ff94a77bb1c1d5a554b5d10f7f00d9634");
  EXPECT_NE(signature_for("https://s3.example.com:8443"),
            "8d9fdfa92915acf4698c870f7707725ff94a77bb1c1d5a554b5d10f7f00d9634");
}

TEST(SigV4, HeaderFormAddsDateTokenAndAuthorization) {
  const AwsCredentials creds{
      .access_key_id = "AKID", .secret_access_key = "SECRET", .session_token = "TOK"};
  const SigningScope scope{.region = "us-east-1", .service = "sts", .time = At(k20130524)};
  const std::vector<SignedHeader> added =
      SignHeaders({.method = "POST",
                   .uri = "/",
                   .canonical_query = "",
                   .headers = {{"content-type", "application/x-www-form-urlencoded"},
                               {"host", "sts.us-east-1.amazonaws.com"}},
                   .body = "Action=AssumeRole"},
                  creds, scope);
  ASSERT_EQ(added.size(), 3u);
  EXPECT_EQ(added[0].name, "x-amz-date");
  EXPECT_EQ(added[0].value, "20130524T000000Z");
  EXPECT_EQ(added[1].name, "x-amz-security-token");
  EXPECT_EQ(added[2].name, "authorization");
  EXPECT_EQ(added[2].value.rfind("AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/sts/"
                                 "aws4_request, SignedHeaders=content-type;host;x-amz-date;"
                                 "x-amz-security-token, Signature=",
                                 0),
            0u);
}

}  // namespace
}  // namespace xb::attach
