// Section 3.2 of spec/CONF.md (AUTH checks) and CONF-005 / CONF-066.
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

// An API key value that passes AUTH-030 and is easy to look for in messages.
std::string GoodApiKey(char fill = 'k') { return std::string(kSecret) + std::string(30, fill); }

std::string Auth(const std::string& body) { return "[auth]\nenabled = true\n" + body; }

std::string InlineKey(const std::string& kid, const std::string& alg, const std::string& pem) {
  return "[[auth.keys]]\nkid = \"" + kid + "\"\nalg = \"" + alg +
         "\"\npublic_key = " + TomlLiteral(pem) + "\n";
}

// verifies: CONF-066
TEST(Conf066, DisabledAuthSkipsEveryRangeAndRelationshipCheck) {
  std::string doc =
      "[auth]\nenabled = false\nleeway_seconds = -5\njwks_refresh_seconds = 0\n"
      "jwks_url = \"ftp://nowhere\"\naudiences = []\n"
      "[auth.api_keys]\n\"bad name!\" = \"short\"\n"
      "[[auth.keys]]\nalg = \"HS256\"\npublic_key = \"not a pem\"\n";
  Result<Config> loaded = ParseMinimalWith(doc);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  // Nothing of a disabled table is enforced or published (CONF-068).
  EXPECT_FALSE(loaded->auth.enabled);
  EXPECT_TRUE(loaded->auth.api_keys.empty());
  EXPECT_TRUE(loaded->auth.keys.empty());
  EXPECT_FALSE(loaded->auth.jwks_url.has_value());
  EXPECT_FALSE(loaded->auth.audiences.has_value());
}

// verifies: CONF-066 (document-wide rules still apply: CONF section 7 point 3)
TEST(Conf066, DisabledAuthStillRefusesUnknownKeysAndWrongTypes) {
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\nenabled = false\nbogus = 1"), "auth.bogus"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\nenabled = false\nleeway_seconds = \"60\""),
                      "auth.leeway_seconds"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\nenabled = false\n[auth.api_keys]\nw = 5"),
                      "auth.api_keys.w"));
  EXPECT_TRUE(Refused(ParseMinimalWith("[auth]\nenabled = \"false\""), "auth.enabled"));
}

// verifies: AUTH-029
TEST(Auth029, AtLeastOneMechanism) {
  Result<Config> none = ParseMinimalWith(Auth(""));
  EXPECT_TRUE(Refused(none, "auth.api_keys"));
  EXPECT_NE(none.status().message().find("auth.jwks_url"), std::string::npos);
  EXPECT_NE(none.status().message().find("auth.keys"), std::string::npos);
  // An empty api_keys table does not count (CONF section 7 point 4); nor does an empty keys array.
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("[auth.api_keys]\n")), "auth.api_keys"));
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("keys = []\n")), "auth.api_keys/auth.jwks_url"));
}

// verifies: AUTH-029
TEST(Auth029, JwksUrlAndInlineKeysAreExclusive) {
  std::string doc = Auth("jwks_url = \"https://" + std::string(kSecret) + ".example.com/jwks\"\n") +
                    InlineKey("k1", "EdDSA", Pems(TestKey::kEd25519).public_pem);
  EXPECT_TRUE(Refused(ParseMinimalWith(doc), "auth.jwks_url/auth.keys", {kSecret}));
}

// verifies: AUTH-030
TEST(Auth030, ApiKeyValueRulesNameTheNameNeverTheValue) {
  struct Case {
    std::string value;
    const char* why;
  };
  for (const Case& c : {Case{std::string(kSecret) + std::string(17, 'x'), "31 bytes"},
                        Case{std::string(kSecret) + std::string(8179, 'x'), "8193 bytes"},
                        Case{std::string(kSecret) + " " + std::string(30, 'x'), "space"},
                        Case{std::string(kSecret) + "\\u00E9" + std::string(30, 'x'), "non-ASCII"},
                        Case{std::string(kSecret) + "\\t" + std::string(30, 'x'), "control"}}) {
    Result<Config> result =
        ParseMinimalWith(Auth("[auth.api_keys]\nworker-1 = \"" + c.value + "\"\n"));
    EXPECT_TRUE(Refused(result, "auth.api_keys.worker-1", {kSecret})) << c.why;
  }
  EXPECT_TRUE(
      ParseMinimalWith(Auth("[auth.api_keys]\nw = \"" + std::string(32, '!') + "\"\n")).ok());
  EXPECT_TRUE(
      ParseMinimalWith(Auth("[auth.api_keys]\nw = \"" + std::string(8192, '~') + "\"\n")).ok());
}

// verifies: AUTH-030 (distinct values)
TEST(Auth030, DuplicateValuesRefused) {
  std::string doc =
      Auth("[auth.api_keys]\nalpha = \"" + GoodApiKey() + "\"\nbeta = \"" + GoodApiKey() + "\"\n");
  EXPECT_TRUE(Refused(ParseMinimalWith(doc), "auth.api_keys.beta", {kSecret}));
}

TEST(Auth030, ValueFromTheEnvironmentNeverInTheError) {
  Result<Config> result = ParseMinimalWith(Auth("[auth.api_keys]\nworker = \"env:WORKER_KEY\"\n"),
                                           FakeEnv({{"WORKER_KEY", kSecret}}));
  EXPECT_TRUE(Refused(result, "auth.api_keys.worker", {kSecret}));
}

TEST(AuthDoc, ApiKeyNamesAndCount) {
  for (const char* bad : {"-lead", ".lead", "_lead", "has space", "ü", ""}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(Auth("[auth.api_keys]\n\"" + std::string(bad) + "\" = \"" +
                                              GoodApiKey() + "\"\n")),
                        "auth.api_keys", {kSecret}))
        << bad;
  }
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("[auth.api_keys]\n" + std::string(65, 'a') + " = \"" +
                                            GoodApiKey() + "\"\n")),
                      "auth.api_keys." + std::string(65, 'a')));
  EXPECT_TRUE(ParseMinimalWith(Auth("[auth.api_keys]\n" + std::string(64, 'a') + " = \"" +
                                    GoodApiKey() + "\"\n\"A0._-\" = \"" + GoodApiKey('z') + "\"\n"))
                  .ok());
  std::string many = "[auth.api_keys]\n";
  for (int i = 0; i < 257; ++i) {
    many += "k" + std::to_string(i) + " = \"" + GoodApiKey() + std::to_string(i) + "\"\n";
  }
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth(many)), "auth.api_keys", {kSecret}));
}

// verifies: AUTH-032
TEST(Auth032, LeewayAtMost300) {
  std::string keys = "[auth.api_keys]\nw = \"" + GoodApiKey() + "\"\n";
  EXPECT_TRUE(ParseMinimalWith(Auth("leeway_seconds = 300\n" + keys)).ok());
  EXPECT_TRUE(ParseMinimalWith(Auth("leeway_seconds = 0\n" + keys)).ok());
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("leeway_seconds = 301\n" + keys)),
                      "auth.leeway_seconds", {"301"}));
  EXPECT_TRUE(
      Refused(ParseMinimalWith(Auth("leeway_seconds = -1\n" + keys)), "auth.leeway_seconds"));
}

// verifies: AUTH-034
TEST(Auth034, RefreshAndStalenessWindow) {
  std::string keys = "[auth.api_keys]\nw = \"" + GoodApiKey() + "\"\n";
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("jwks_refresh_seconds = 0\n" + keys)),
                      "auth.jwks_refresh_seconds"));
  // 300 + ceil(300 / 10) + 10 = 340.
  EXPECT_TRUE(ParseMinimalWith(Auth("jwks_max_stale_seconds = 340\n" + keys)).ok());
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("jwks_max_stale_seconds = 339\n" + keys)),
                      "auth.jwks_max_stale_seconds", {"339"}));
  // ceil rounds up: 301 + 31 + 10 = 342.
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("jwks_refresh_seconds = 301\njwks_max_stale_seconds = "
                                            "341\n" +
                                            keys)),
                      "auth.jwks_max_stale_seconds"));
  EXPECT_TRUE(
      ParseMinimalWith(Auth("jwks_refresh_seconds = 301\njwks_max_stale_seconds = 342\n" + keys))
          .ok());
}

TEST(AuthDoc, MaxStaleMustBeRepresentableOnTheMonotonicClock) {
  std::string keys = "[auth.api_keys]\nw = \"" + GoodApiKey() + "\"\n";
  EXPECT_TRUE(
      Refused(ParseMinimalWith(Auth("jwks_max_stale_seconds = 9223372036854775807\n" + keys)),
              "auth.jwks_max_stale_seconds"));
}

// verifies: AUTH-015
TEST(Auth015, JwksUrlForm) {
  for (std::string bad :
       {std::string("http://") + kSecret + ".example.com/jwks", std::string("ftp://") + kSecret,
        std::string("https:///jwks"), std::string(kSecret), std::string("http://10.0.0.1/jwks"),
        std::string("http://localhost.") + kSecret + "/jwks", std::string("http://[::2]/jwks")}) {
    EXPECT_TRUE(
        Refused(ParseMinimalWith(Auth("jwks_url = \"" + bad + "\"\n")), "auth.jwks_url", {kSecret}))
        << bad;
  }
  for (const char* good :
       {"https://auth.example.com/.well-known/jwks.json", "http://localhost:8080/jwks",
        "http://LOCALHOST/jwks", "http://127.0.0.1/jwks", "http://127.8.9.10/jwks",
        "http://[::1]:9/j", "http://[0:0:0:0:0:0:0:1]/j"}) {
    Result<Config> loaded = ParseMinimalWith(Auth("jwks_url = \"" + std::string(good) + "\"\n"));
    EXPECT_TRUE(loaded.ok()) << good << ": " << loaded.status().message();
  }
}

// verifies: AUTH-017 (inline)
TEST(Auth017, EveryAlgorithmAcceptsItsKeyType) {
  std::string doc = Auth(InlineKey("r256", "RS256", Pems(TestKey::kRsa).public_pem) +
                         InlineKey("r384", "RS384", Pems(TestKey::kRsa).public_pem) +
                         InlineKey("r512", "RS512", Pems(TestKey::kRsa).public_pem) +
                         InlineKey("e256", "ES256", Pems(TestKey::kEcP256).public_pem) +
                         InlineKey("e384", "ES384", Pems(TestKey::kEcP384).public_pem) +
                         InlineKey("ed", "EdDSA", Pems(TestKey::kEd25519).public_pem));
  Result<Config> loaded = ParseMinimalWith(doc);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->auth.keys.size(), 6u);
  EXPECT_EQ(loaded->auth.keys[3].kid, "e256");
  EXPECT_EQ(loaded->auth.keys[3].alg, "ES256");
}

// verifies: AUTH-017 (inline)
TEST(Auth017, WrongKeyTypeNamesIndexAndKidNeverThePem) {
  struct Case {
    const char* alg;
    TestKey key;
  };
  for (const Case& c : {Case{"RS256", TestKey::kEcP256}, Case{"ES256", TestKey::kEcP384},
                        Case{"ES384", TestKey::kEcP256}, Case{"ES256", TestKey::kRsa},
                        Case{"EdDSA", TestKey::kEcP256}, Case{"ES384", TestKey::kEcP521},
                        Case{"RS512", TestKey::kEd25519}}) {
    const std::string& pem = Pems(c.key).public_pem;
    std::string doc = Auth(InlineKey("good", "EdDSA", Pems(TestKey::kEd25519).public_pem) +
                           InlineKey("kid-two", c.alg, pem));
    Result<Config> result = ParseMinimalWith(doc);
    std::string pem_body = pem.substr(27, 40);  // past "-----BEGIN PUBLIC KEY-----\n"
    EXPECT_TRUE(Refused(result, "auth.keys[1]", {pem_body, "BEGIN"})) << c.alg;
    EXPECT_NE(result.status().message().find("kid-two"), std::string::npos);
  }
}

// verifies: AUTH-017 (inline)
TEST(Auth017, NotAPublicKeyPem) {
  for (const std::string& bad :
       {std::string(kSecret), Pems(TestKey::kEcP256).pkcs8_pem,
        std::string("-----BEGIN PUBLIC KEY-----\n") + kSecret + "\n-----END PUBLIC KEY-----\n"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(Auth(InlineKey("k", "ES256", bad))), "auth.keys[0]",
                        {kSecret, "PRIVATE"}));
  }
}

// verifies: AUTH-017 (inline: two keys share a kid)
TEST(Auth017, DuplicateKidRefused) {
  std::string doc = Auth(InlineKey("same", "EdDSA", Pems(TestKey::kEd25519).public_pem) +
                         InlineKey("same", "ES256", Pems(TestKey::kEcP256).public_pem));
  EXPECT_TRUE(Refused(ParseMinimalWith(doc), "auth.keys[1]"));
}

TEST(AuthDoc, KidLengthAndAlgorithm) {
  const std::string& pem = Pems(TestKey::kEd25519).public_pem;
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth(InlineKey("", "EdDSA", pem))), "auth.keys[0]"));
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth(InlineKey(std::string(257, 'k'), "EdDSA", pem))),
                      "auth.keys[0]", {std::string(257, 'k')}));
  EXPECT_TRUE(ParseMinimalWith(Auth(InlineKey(std::string(256, 'k'), "EdDSA", pem))).ok());
  for (const char* bad : {"HS256", "none", "eddsa", "PS256", "ES512"}) {
    EXPECT_TRUE(Refused(ParseMinimalWith(Auth(InlineKey("k", bad, pem))), "auth.keys[0]")) << bad;
  }
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("[[auth.keys]]\nkid = \"k\"\nalg = \"EdDSA\"\n")),
                      "auth.keys[0].public_key"));
}

TEST(AuthDoc, KidFromTheEnvironmentNotRepeated) {
  std::string doc = Auth("[[auth.keys]]\nkid = \"env:KID\"\nalg = \"ES256\"\npublic_key = " +
                         TomlLiteral(Pems(TestKey::kEd25519).public_pem) + "\n");
  EXPECT_TRUE(
      Refused(ParseMinimalWith(doc, FakeEnv({{"KID", kSecret}})), "auth.keys[0]", {kSecret}));
}

TEST(AuthDoc, EmptyKeysArrayRefused) {
  std::string doc = Auth("keys = []\n[auth.api_keys]\nw = \"" + GoodApiKey() + "\"\n");
  EXPECT_TRUE(Refused(ParseMinimalWith(doc), "auth.keys"));
}

TEST(AuthDoc, AudiencesAndIssuersNotEmptyWhenPresent) {
  std::string keys = "[auth.api_keys]\nw = \"" + GoodApiKey() + "\"\n";
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("audiences = []\n" + keys)), "auth.audiences"));
  EXPECT_TRUE(Refused(ParseMinimalWith(Auth("issuers = []\n" + keys)), "auth.issuers"));
  Result<Config> ok = ParseMinimalWith(
      Auth("audiences = [\"xmtp\"]\nissuers = [\"https://auth.example.com\"]\nrequired_scopes = "
           "[]\n" +
           keys));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->auth.audiences->size(), 1u);
}

}  // namespace
}  // namespace xb::config
