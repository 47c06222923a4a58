// The pure parsers behind the checks: socket addresses, URLs, database URLs, SemVer, Unicode and
// the service-account JSON reader.
#include <gtest/gtest.h>

#include "config/database_url.h"
#include "config/json_members.h"
#include "config/semver.h"
#include "config/socket_address.h"
#include "config/unicode.h"
#include "config/url.h"

namespace xb::config {
namespace {

TEST(SocketAddress, ParsesIpv4AndIpv6) {
  Result<SocketAddress> v4 = ParseSocketAddress("127.0.0.1:5050");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->family, SocketAddress::Family::kIpv4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 5050);
  Result<SocketAddress> v6 = ParseSocketAddress("[::ffff:10.0.0.1]:65535");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->family, SocketAddress::Family::kIpv6);
  EXPECT_EQ(v6->host, "::ffff:10.0.0.1");
  EXPECT_EQ(v6->port, 65535);
  Result<SocketAddress> ephemeral = ParseSocketAddress("0.0.0.0:0");
  ASSERT_TRUE(ephemeral.ok());
  EXPECT_EQ(ephemeral->port, 0);
}

TEST(SocketAddress, RefusesEverythingElse) {
  for (const char* bad :
       {"", ":80", "1.2.3.4", "1.2.3.4:", "1.2.3.4:65536", "1.2.3.4:-1", "1.2.3.4:8o",
        "01.2.3.4:80", "1.2.3:80", "256.1.1.1:80", "localhost:80", "::1:80", "[::1]", "[::1]80",
        "[fe80::1%eth0]:80", "[::1]:80 ", " 1.2.3.4:80", "[v1.x]:80", "1.2.3.4:123456"}) {
    Result<SocketAddress> parsed = ParseSocketAddress(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(
          std::string(bad).empty() || parsed.status().message().find(bad) == std::string::npos,
          true);
    }
  }
}

TEST(Url, SplitsTheParts) {
  Result<Url> url = ParseUrl("https://user:pw@Example.COM:8443/a/b%20c?x=1#frag");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->scheme, "https");
  EXPECT_TRUE(url->has_userinfo);
  EXPECT_EQ(url->host, "Example.COM");
  EXPECT_EQ(url->host_kind, Url::HostKind::kRegName);
  EXPECT_EQ(url->port, 8443);
  EXPECT_EQ(url->path, "/a/b%20c");
  EXPECT_TRUE(url->has_query);
  EXPECT_TRUE(url->has_fragment);

  Result<Url> v6 = ParseUrl("http://[::1]:9/");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host_kind, Url::HostKind::kIpv6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(IsLoopbackHost(*v6));

  Result<Url> empty_port = ParseUrl("http://h:/");
  ASSERT_TRUE(empty_port.ok());
  EXPECT_FALSE(empty_port->port.has_value());
}

TEST(Url, RefusesMalformed) {
  for (const char* bad : {"",
                          "https",
                          "https:",
                          "https:/x",
                          "1http://h",
                          "ht tp://h",
                          "http://h h",
                          "http://h/%zz",
                          "http://h/%4",
                          "http://[::1",
                          "http://[v1.x]/",
                          "http://[fe80::1%25eth0]/",
                          "http://h:99999/",
                          "http://h:8x/",
                          "http://a@b@c/",
                          "http://h/\\",
                          "http://h/\x7f",
                          "http://h/\xc3\xa9",
                          "http://h/#a#b",
                          "http://[::1]x/"}) {
    EXPECT_FALSE(ParseUrl(bad).ok()) << bad;
  }
}

TEST(Url, LoopbackHosts) {
  for (const char* loopback :
       {"http://localhost", "http://LocalHost:1", "http://127.0.0.1", "http://127.255.0.9",
        "http://[0::1]", "http://[0000:0000:0000:0000:0000:0000:0000:0001]"}) {
    Result<Url> url = ParseUrl(loopback);
    ASSERT_TRUE(url.ok()) << loopback;
    EXPECT_TRUE(IsLoopbackHost(*url)) << loopback;
  }
  for (const char* other : {"http://localhost.example", "http://128.0.0.1", "http://[::2]",
                            "http://[::ffff:127.0.0.1]", "http://0.0.0.0", "http://127.0.0.01"}) {
    Result<Url> url = ParseUrl(other);
    ASSERT_TRUE(url.ok()) << other;
    EXPECT_FALSE(IsLoopbackHost(*url)) << other;
  }
}

TEST(DatabaseUrl, Engines) {
  Result<DatabaseUrl> sqlite = ParseDatabaseUrl("sqlite://./data/xmtp.db");
  ASSERT_TRUE(sqlite.ok());
  EXPECT_EQ(sqlite->engine, DatabaseUrl::Engine::kSqlite);
  EXPECT_EQ(sqlite->sqlite_path, "./data/xmtp.db");
  Result<DatabaseUrl> absolute = ParseDatabaseUrl("sqlite:///var/lib/xmtp.db");
  ASSERT_TRUE(absolute.ok());
  EXPECT_EQ(absolute->sqlite_path, "/var/lib/xmtp.db");
  Result<DatabaseUrl> pg = ParseDatabaseUrl("postgresql://u:p@h:5432/db?sslmode=verify-full");
  ASSERT_TRUE(pg.ok());
  EXPECT_EQ(pg->engine, DatabaseUrl::Engine::kPostgres);
  for (const char* bad : {"sqlite://", "sqlite://a\tb", "postgres://h/db?flag",
                          "postgres://h/db?=v", "postgres://h:0x1/db", "postgres://h /db",
                          "postgres://[::1/db", "postgres://h/d%zz", "pgsql://h/db"}) {
    EXPECT_FALSE(ParseDatabaseUrl(bad).ok()) << bad;
  }
}

TEST(SemVer, Grammar) {
  for (const char* good :
       {"0.0.0", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.0.0-alpha", "1.0.0-alpha.beta.1",
        "1.0.0-0.3.7", "1.0.0-x.7.z.92", "1.0.0-x-y-z.--", "1.0.0+0.build.1-rc.10000aaa-kk-0.1",
        "1.0.0-alpha+001", "1.0.0+21AF26D3----117B344092BD",
        "99999999999999999999999.999999999999999999.99999999999999999"}) {
    EXPECT_TRUE(IsSemVer(good)) << good;
  }
  for (const char* bad : {"",
                          "1",
                          "1.2",
                          "1.2.3-0123",
                          "1.2.3-0123.0123",
                          "1.1.2+.123",
                          "+invalid",
                          "-invalid",
                          "-invalid+invalid",
                          "alpha",
                          "1.2.3.DEV",
                          "1.2-SNAPSHOT",
                          "1.2.31.2.3----RC-SNAPSHOT.12.09.1--..12+788",
                          "01.1.1",
                          "1.01.1",
                          "1.1.01",
                          "1.2.3-alpha_beta",
                          "1.2.3+build+2",
                          "1.2.3-",
                          "1.2.3+",
                          " 1.2.3",
                          "1.2.3 "}) {
    EXPECT_FALSE(IsSemVer(bad)) << bad;
  }
}

// verifies: CONF-002 (the Unicode rules, including invalid UTF-8)
TEST(Unicode, IdentifierRules) {
  EXPECT_TRUE(IsValidServerIdentifier("org.example.xmtp"));
  EXPECT_TRUE(IsValidServerIdentifier("\xE6\x97\xA5\xE6\x9C\xAC"));  // 日本
  EXPECT_FALSE(IsValidServerIdentifier(""));
  EXPECT_FALSE(IsValidServerIdentifier("a\xff"));              // invalid byte
  EXPECT_FALSE(IsValidServerIdentifier("a\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidServerIdentifier("a\xED\xA0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidServerIdentifier("a\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidServerIdentifier("a\xE2\x80"));          // truncated
  EXPECT_FALSE(IsValidServerIdentifier(std::string("a\0b", 3)));
  for (char32_t ws : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2005,
                      0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}) {
    EXPECT_TRUE(IsWhiteSpace(ws)) << static_cast<uint32_t>(ws);
  }
  for (char32_t not_ws : {0x08, 0x0E, 0x1F, 0x180E, 0x200B, 0x2060, 0xFEFF, 0x3001}) {
    EXPECT_FALSE(IsWhiteSpace(not_ws)) << static_cast<uint32_t>(not_ws);
  }
  EXPECT_TRUE(IsControl(0x00));
  EXPECT_TRUE(IsControl(0x7F));
  EXPECT_TRUE(IsControl(0x9F));
  EXPECT_FALSE(IsControl(0xA0));
  EXPECT_TRUE(IsBlank(""));
  EXPECT_TRUE(IsBlank(" \t\xE3\x80\x80"));
  EXPECT_FALSE(IsBlank(" x "));
}

TEST(JsonMembers, TopLevelStrings) {
  Result<std::map<std::string, std::string>> members = TopLevelStringMembers(
      R"( {"a": "x\n\"y\"\u00e9\ud83d\ude00", "n": -1.5e+3, "o": {"a": "nested"}, "l": [1, "s", )"
      R"(null, true, false, {}], "z": ""} )");
  ASSERT_TRUE(members.ok());
  EXPECT_EQ(members->size(), 2u);
  EXPECT_EQ(members->at("a"), "x\n\"y\"\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(members->at("z"), "");
  for (const char* bad :
       {"", "[]", "\"s\"", "{", "{\"a\"}", "{\"a\": }", "{\"a\": 01}", "{\"a\": \"\\x\"}",
        "{\"a\": \"\\ud800\"}", "{\"a\": 1,}", "{} x", "{\"a\": \"raw\ncontrol\"}",
        "{\"a\": 1, \"a\": 2}", "{\"a\": tru}", "{\"a\": 1.}", "{\"a\": -}", "{'a': 1}"}) {
    EXPECT_FALSE(TopLevelStringMembers(bad).ok()) << bad;
  }
  std::string deep(100, '[');
  EXPECT_FALSE(TopLevelStringMembers("{\"a\": " + deep + "}").ok());
}

}  // namespace
}  // namespace xb::config
