// The strict RFC 3986 URL reader (moved from config/ with its tests).
#include "base/url.h"

#include <gtest/gtest.h>

namespace xb {
namespace {

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

TEST(Url, HostHeaderAndRequestTarget) {
  auto plain = ParseUrl("https://issuer.example/.well-known/jwks.json?x=1#frag");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(HostHeader(*plain), "issuer.example");
  EXPECT_EQ(RequestTarget("https://issuer.example/.well-known/jwks.json?x=1#frag"),
            "/.well-known/jwks.json?x=1");
  auto v6 = ParseUrl("http://[::1]:8080");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(HostHeader(*v6), "[::1]:8080");
  EXPECT_EQ(RequestTarget("http://[::1]:8080"), "/");
  EXPECT_EQ(RequestTarget("http://h?q=1"), "/?q=1");
  EXPECT_EQ(RequestTarget("http://h#only-fragment"), "/");
}

TEST(AsciiLower, LowersOnlyAsciiLetters) {
  EXPECT_EQ(AsciiLower("Content-Type: ABC xyz 09"), "content-type: abc xyz 09");
  EXPECT_EQ(AsciiLower("\xc3\x89"), "\xc3\x89");  // bytes past ASCII stay as they are
}

}  // namespace
}  // namespace xb
