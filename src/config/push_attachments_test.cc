// The [push] rows of spec/CONF.md section 3.5 (PUSH.md sections 9.3, 12) and section 3.4
// (ATTACH.md sections 2 and 7).
#include <gtest/gtest.h>

#include <string>

#include "config/load.h"
#include "config/test_keys.h"
#include "config/test_support.h"

namespace xb::config {
namespace {

using testing::FakeEnv;
using testing::ParseMinimalWith;
using testing::Pems;
using testing::Refused;
using testing::TestKey;
using testing::TomlLiteral;

constexpr char kSecret[] = "SECRETVALUE123";

// ---- [push] -------------------------------------------------------------------------------------

TEST(PushChecks, RecipientTtlAndAttempts) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[push]\nrecipient_ttl_seconds = 86399"),
                      "push.recipient_ttl_seconds", {"86399"}));
  EXPECT_TRUE(Refused(ParseMinimalWith("[push]\nrecipient_ttl_seconds = 9223372037"),
                      "push.recipient_ttl_seconds"));
  EXPECT_TRUE(ParseMinimalWith("[push]\nrecipient_ttl_seconds = 9223372036").ok());
  EXPECT_TRUE(Refused(ParseMinimalWith("[push]\nmax_attempts = 0"), "push.max_attempts"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[push]\nmax_attempts = 11"), "push.max_attempts"));
  EXPECT_TRUE(ParseMinimalWith("[push]\nmax_attempts = 10").ok());
}

std::string Apns(const std::string& key_pem, const std::string& environment = "production",
                 const std::string& omit = "") {
  std::string doc = "[push.apns]\n";
  if (omit != "key") {
    doc += "key = " + TomlLiteral(key_pem) + "\n";
  }
  for (const char* field : {"key_id", "team_id", "bundle_id"}) {
    if (omit != field) {
      doc += std::string(field) + " = \"" + kSecret + field + "\"\n";
    }
  }
  if (omit != "environment") {
    doc += "environment = \"" + environment + "\"\n";
  }
  return doc;
}

TEST(PushChecks, ApnsBlock) {
  const std::string& key = Pems(TestKey::kEcP256).pkcs8_pem;
  Result<Config> ok = ParseMinimalWith(Apns(key));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_TRUE(ok->push->apns.has_value());
  EXPECT_EQ(ok->push->apns->environment, "production");
  EXPECT_TRUE(ParseMinimalWith(Apns(key, "sandbox")).ok());

  for (const char* field : {"key", "key_id", "team_id", "bundle_id", "environment"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(Apns(key, "production", field)),
                        std::string("push.apns.") + field, {kSecret}))
        << field;
  }
  EXPECT_TRUE(Refused(ParseMinimalWith(Apns(key, "")), "push.apns.environment"));
  EXPECT_TRUE(Refused(ParseMinimalWith(Apns(key, kSecret)), "push.apns.environment", {kSecret}));
  // The key must be the PKCS#8 PEM of an EC P-256 private key (PUSH section 12).
  for (const std::string& bad : {Pems(TestKey::kEcP256).legacy_pem, Pems(TestKey::kRsa).pkcs8_pem,
                                 Pems(TestKey::kEcP384).pkcs8_pem,
                                 Pems(TestKey::kEcP256).public_pem, std::string(kSecret)}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(Apns(bad)), "push.apns.key", {kSecret, "BEGIN"}));
  }
}

// A service-account JSON document, as a TOML literal string.
std::string ServiceAccount(const std::string& project_id, const std::string& private_key_pem,
                           const std::string& token_uri = "https://oauth2.googleapis.com/token") {
  std::string escaped;
  for (char c : private_key_pem) {
    if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped.push_back(c);
    }
  }
  return "{\"type\": \"service_account\", \"project_id\": \"" + project_id +
         "\", \"private_key_id\": \"" + kSecret + "\", \"private_key\": \"" + escaped +
         "\", \"client_email\": \"push@" + project_id +
         ".iam.gserviceaccount.com\", \"token_uri\": \"" + token_uri +
         "\", \"n\": [1, 2.5e3, "
         "{\"x\": null}, true]}";
}

std::string Fcm(const std::string& json) {
  return "[push.fcm]\nservice_account = '''" + json + "'''\n";
}

TEST(PushChecks, FcmServiceAccount) {
  const std::string& rsa = Pems(TestKey::kRsa).pkcs8_pem;
  Result<Config> ok = ParseMinimalWith(Fcm(ServiceAccount("my-project-1", rsa)));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  // From the environment, as operators usually supply it.
  EXPECT_TRUE(ParseMinimalWith("[push.fcm]\nservice_account = \"env:FCM\"",
                               FakeEnv({{"FCM", ServiceAccount("p", rsa)}}))
                  .ok());

  EXPECT_TRUE(Refused(ParseMinimalWith("[push.fcm]\n"), "push.fcm.service_account"));
  EXPECT_TRUE(Refused(ParseMinimalWith(Fcm("")), "push.fcm.service_account"));
  for (const std::string& bad :
       {std::string(kSecret), std::string("[\"") + kSecret + "\"]",
        ServiceAccount("my_project", rsa), ServiceAccount("", rsa),
        ServiceAccount("p", Pems(TestKey::kEcP256).pkcs8_pem),
        ServiceAccount("p", Pems(TestKey::kRsa).legacy_pem),
        ServiceAccount("p", rsa, "https://oauth2.googleapis.com/token/"),
        ServiceAccount("p", rsa) + "x",
        "{\"project_id\": \"p\", \"project_id\": \"q\", \"private_key_id\": \"" +
            std::string(kSecret) + "\"}"}) {
    EXPECT_TRUE(
        Refused(ParseMinimalWith(Fcm(bad)), "push.fcm.service_account", {kSecret, "BEGIN"}));
  }
}

TEST(PushChecks, AllowedDomains) {
  Result<Config> ok = ParseMinimalWith(
      "[push.http]\nallowed_domains = [\"hooks.example.com\", \"*.example.org\", \"a-b.c0\", "
      "\"8.8.8.8\"]");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(ParseMinimalWith("[push.http]\nallowed_domains = []").ok());
  std::string long_label(64, 'a');
  std::string long_host;
  for (int i = 0; i < 4; ++i) {
    long_host += std::string(63, 'a') + ".";
  }
  long_host += "ab";  // 258 bytes
  for (std::string bad :
       {std::string("https://") + kSecret + ".com", std::string(kSecret) + ".com:443",
        std::string(kSecret) + ".com/path", std::string("a..") + kSecret,
        std::string("*.*.") + kSecret, std::string("*") + kSecret, std::string("-") + kSecret,
        std::string(kSecret) + "-", std::string(kSecret) + "." + long_label, long_host,
        std::string(""), std::string("*."), std::string(kSecret) + ".",
        std::string(kSecret) + "_x"}) {
    EXPECT_TRUE(Refused(
        ParseMinimalWith("[push.http]\nallowed_domains = [\"ok.example\", \"" + bad + "\"]"),
        "push.http.allowed_domains[1]", {kSecret}))
        << bad;
  }
}

// ---- [attachments] ------------------------------------------------------------------------------

std::string Attachments(const std::string& base_url, const std::string& extra = "",
                        const std::string& s3_extra = "",
                        const std::string& endpoint = "https://s3.us-east-1.amazonaws.com",
                        const std::string& credentials = "kind = \"environment\"\n") {
  return "[attachments]\nbase_url = \"" + base_url + "\"\n" + extra +
         "[attachments.target.S3]\nendpoint = \"" + endpoint +
         "\"\nregion = \"us-east-1\"\nbucket = \"attachments\"\n" + s3_extra +
         "[attachments.target.S3.credentials]\n" + credentials;
}

TEST(AttachmentChecks, LoadsAndKeepsDefaults) {
  Result<Config> ok = ParseMinimalWith(Attachments("https://files.example.com/attachments"));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_TRUE(ok->attachments.has_value());
  EXPECT_EQ(ok->attachments->max_upload_bytes, 104857600u);
  EXPECT_FALSE(ok->attachments->retention_seconds.has_value());
  EXPECT_EQ(ok->attachments->s3.key_prefix, "");
  EXPECT_EQ(ok->attachments->s3.presign_ttl_seconds, 900u);
  EXPECT_EQ(ok->attachments->s3.credentials.kind, "environment");
}

// verifies: ATCH-002
TEST(AttachmentChecks, BaseUrlForm) {
  for (const char* good : {"https://files.example.com/attachments", "https://files.example.com",
                           "http://127.0.0.1:9000/bucket", "http://[::1]/a", "http://LocalHost/a",
                           "https://10.1.2.3:65535/a"}) {
    Result<Config> loaded = ParseMinimalWith(Attachments(good));
    EXPECT_TRUE(loaded.ok()) << good << ": " << loaded.status().message();
  }
  for (std::string bad :
       {"https://files.example.com/", "http://files.example.com/a",
        "https://u:p@files.example.com/a", "https://files.example.com/a/../b",
        "https://files.example.com/a?x=1", "https://files.example.com/a#f",
        "https://files.example.com/a/%2E%2e/b", "https://files.example.com/./b",
        "HTTPS://files.example.com/a", "https://fil%65s.example.com/a", "https://[v1.x]/a",
        "https://files.example.com:65536/a", "https:///a", "http://192.168.1.1/a",
        "ftp://files.example.com/a", "files.example.com"}) {
    EXPECT_TRUE(
        Refused(ParseMinimalWith(Attachments(bad)), "attachments.base_url", {"files.example.com"}))
        << bad;
  }
  EXPECT_TRUE(Refused(ParseMinimalWith(Attachments(std::string("https://") + kSecret + "/")),
                      "attachments.base_url", {kSecret}));
}

// verifies: ATCH-003, ATCH-004
TEST(AttachmentChecks, UploadAndRetentionRanges) {
  const std::string base = "https://files.example.com";
  EXPECT_TRUE(Refused(ParseMinimalWith(Attachments(base, "max_upload_bytes = 0\n")),
                      "attachments.max_upload_bytes"));
  EXPECT_TRUE(Refused(ParseMinimalWith(Attachments(base, "max_upload_bytes = 4294967296\n")),
                      "attachments.max_upload_bytes", {"4294967296"}));
  EXPECT_TRUE(ParseMinimalWith(Attachments(base, "max_upload_bytes = 4294967295\n")).ok());
  EXPECT_TRUE(Refused(ParseMinimalWith(Attachments(base, "retention_seconds = 9007199254740992\n")),
                      "attachments.retention_seconds", {"9007199254740992"}));
  Result<Config> zero = ParseMinimalWith(Attachments(base, "retention_seconds = 0\n"));
  ASSERT_TRUE(zero.ok()) << zero.status().message();
  EXPECT_EQ(zero->attachments->retention_seconds, 0u);
  EXPECT_TRUE(ParseMinimalWith(Attachments(base, "retention_seconds = 9007199254740991\n")).ok());
}

// verifies: ATCH-071
TEST(AttachmentChecks, StorageEndpointForm) {
  const std::string base = "https://files.example.com";
  for (const char* good : {"https://s3.example.com/", "https://s3.example.com/prefix/",
                           "http://localhost:9000", "http://127.0.0.1:9000/"}) {
    EXPECT_TRUE(ParseMinimalWith(Attachments(base, "", "", good)).ok()) << good;
  }
  for (std::string bad :
       {std::string("http://") + kSecret + ".example.com", std::string("https://u@") + kSecret,
        std::string("https://") + kSecret + "/?x", std::string("https://") + kSecret + "/#f",
        std::string("https://%41") + kSecret, std::string("https://") + kSecret + "\\\\x",
        std::string("https:// ") + kSecret, std::string(kSecret)}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(Attachments(base, "", "", bad)),
                        "attachments.target.S3.endpoint", {kSecret}))
        << bad;
  }
}

TEST(AttachmentChecks, RegionBucketPrefixAndPresignLifetime) {
  const std::string base = "https://files.example.com";
  auto with_s3 = [&](const std::string& s3_extra) {
    return ParseMinimalWith(Attachments(base, "", s3_extra));
  };
  // region/bucket are given by Attachments(); override through a second document instead.
  std::string doc = "[attachments]\nbase_url = \"" + base +
                    "\"\n[attachments.target.S3]\nendpoint = \"https://s3.example.com\"\n";
  EXPECT_TRUE(Refused(ParseMinimalWith(doc + "region = \"us east\"\nbucket = \"b\"\ncredentials = "
                                             "{ kind = \"instance\" }"),
                      "attachments.target.S3.region"));
  EXPECT_TRUE(Refused(ParseMinimalWith(doc + "region = \"\"\nbucket = \"b\"\ncredentials = "
                                             "{ kind = \"instance\" }"),
                      "attachments.target.S3.region"));
  for (const char* bad_bucket : {"", "a/b", ".", ".."}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(doc + "region = \"r\"\nbucket = \"" + bad_bucket +
                                         "\"\ncredentials = { kind = \"instance\" }"),
                        "attachments.target.S3.bucket"))
        << bad_bucket;
  }
  for (const char* good : {"", "p/", "p", "a/b.c/", "x_y-z"}) {
    EXPECT_TRUE(with_s3(std::string("key_prefix = \"") + good + "\"\n").ok()) << good;
  }
  for (const char* bad : {"/p", "a//b", "./a", "a/../b", "a/..", "a b", "a%2f", "ü"}) {
    EXPECT_TRUE(Refused(with_s3(std::string("key_prefix = \"") + bad + "\"\n"),
                        "attachments.target.S3.key_prefix"))
        << bad;
  }
  EXPECT_TRUE(
      Refused(with_s3("presign_ttl_seconds = 299\n"), "attachments.target.S3.presign_ttl_seconds"));
  EXPECT_TRUE(Refused(with_s3("presign_ttl_seconds = 3601\n"),
                      "attachments.target.S3.presign_ttl_seconds"));
  EXPECT_TRUE(with_s3("presign_ttl_seconds = 300\n").ok());
  EXPECT_TRUE(with_s3("presign_ttl_seconds = 3600\n").ok());
}

// verifies: ATCH-073
TEST(AttachmentChecks, CredentialKindsAndTheirKeys) {
  const std::string base = "https://files.example.com";
  auto with_credentials = [&](const std::string& credentials) {
    return ParseMinimalWith(Attachments(base, "", "", "https://s3.example.com", credentials));
  };
  for (const char* good :
       {"kind = \"static\"\naccess_key_id = \"AK\"\nsecret_access_key = \"SK\"\n",
        "kind = \"static\"\naccess_key_id = \"AK\"\nsecret_access_key = \"SK\"\nsession_token = "
        "\"T\"\n",
        "kind = \"default_chain\"\n", "kind = \"environment\"\n",
        "kind = \"profile\"\nname = "
        "\"p\"\n",
        "kind = \"sso\"\naccount_id = \"1\"\nregion = \"r\"\nrole_name = \"n\"\nstart_url = "
        "\"https://x\"\nsession_name = \"s\"\n",
        "kind = \"process\"\ncommand = \"/bin/creds\"\n", "kind = \"web_identity\"\n",
        "kind = \"container\"\n", "kind = \"instance\"\n",
        "kind = \"assume_role\"\nrole_arn = \"arn:aws:iam::1:role/x\"\nexternal_id = \"e\"\n"}) {
    Result<Config> loaded = with_credentials(good);
    EXPECT_TRUE(loaded.ok()) << good << ": " << loaded.status().message();
  }
  EXPECT_TRUE(Refused(with_credentials(std::string("kind = \"") + kSecret + "\"\n"),
                      "attachments.target.S3.credentials.kind", {kSecret}));
  EXPECT_TRUE(
      Refused(with_credentials("name = \"p\"\n"), "attachments.target.S3.credentials.kind"));
  EXPECT_TRUE(Refused(with_credentials(std::string("kind = \"static\"\naccess_key_id = \"AK\"\n"
                                                   "session_token = \"") +
                                       kSecret + "\"\n"),
                      "attachments.target.S3.credentials.secret_access_key", {kSecret}));
  EXPECT_TRUE(Refused(with_credentials(std::string("kind = \"static\"\naccess_key_id = \"AK\"\n"
                                                   "secret_access_key = \"\"\n")),
                      "attachments.target.S3.credentials.secret_access_key"));
  for (const char* field : {"account_id", "region", "role_name", "start_url"}) {
    std::string creds = "kind = \"sso\"\n";
    for (const char* other : {"account_id", "region", "role_name", "start_url"}) {
      if (std::string(other) != field) {
        creds += std::string(other) + " = \"v\"\n";
      }
    }
    EXPECT_TRUE(Refused(with_credentials(creds),
                        std::string("attachments.target.S3.credentials.") + field));
  }
  EXPECT_TRUE(Refused(with_credentials("kind = \"process\"\n"),
                      "attachments.target.S3.credentials.command"));
  EXPECT_TRUE(
      Refused(with_credentials("kind = \"profile\"\n"), "attachments.target.S3.credentials.name"));
  EXPECT_TRUE(Refused(with_credentials("kind = \"assume_role\"\n"),
                      "attachments.target.S3.credentials.role_arn"));
  // A key another kind takes is unknown here.
  EXPECT_TRUE(
      Refused(with_credentials(std::string("kind = \"environment\"\nname = \"") + kSecret + "\"\n"),
              "attachments.target.S3.credentials.name", {kSecret}));
  EXPECT_TRUE(Refused(with_credentials("kind = \"static\"\naccess_key_id = 5\n"),
                      "attachments.target.S3.credentials.access_key_id"));
}

// CONF 2.13 [unconfirmed] / ATTACH.md section 2: required when the section is present.
TEST(AttachmentChecks, RequiredKeys) {
  EXPECT_TRUE(
      Refused(ParseMinimalWith("[attachments]\nmax_upload_bytes = 5"), "attachments.base_url"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[attachments]\nbase_url = \"https://f.example.com\""),
                      "attachments.target.S3"));
  std::string no_credentials =
      "[attachments]\nbase_url = \"https://f.example.com\"\n[attachments.target.S3]\nendpoint = "
      "\"https://s3.example.com\"\nregion = \"r\"\nbucket = \"b\"\n";
  EXPECT_TRUE(Refused(ParseMinimalWith(no_credentials), "attachments.target.S3.credentials.kind"));
  for (const char* key : {"endpoint", "region", "bucket"}) {
    std::string doc = no_credentials + "credentials = { kind = \"instance\" }\n";
    doc.replace(doc.find(std::string(key) + " = "), std::string(key).size(),
                "x_" + std::string(key));
    EXPECT_TRUE(Refused(ParseMinimalWith(doc), std::string("attachments.target.S3.")));
  }
}

}  // namespace
}  // namespace xb::config
