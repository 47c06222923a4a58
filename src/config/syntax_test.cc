// The pure parsers behind the checks: socket addresses, database URLs, SemVer and the
// service-account JSON reader (URLs and Unicode: base/url_test.cc, base/unicode_test.cc).
#include <gtest/gtest.h>

#include "config/database_url.h"
#include "config/json_members.h"
#include "config/semver.h"
#include "config/socket_address.h"

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
