#include "net/proxy_header.h"

#include <gtest/gtest.h>

#include <string>

namespace xb::net {
namespace {

// verifies: server.proxy_protocol — headers as the PROXY protocol specification (2.2) lays
// them out, built byte by byte here rather than by the parser's own constants.
const std::string kSignature("\r\n\r\n\0\r\nQUIT\n", 12);

std::string Header(uint8_t version_command, uint8_t family_transport, const std::string& body) {
  std::string h = kSignature;
  h += static_cast<char>(version_command);
  h += static_cast<char>(family_transport);
  h += static_cast<char>(body.size() >> 8);
  h += static_cast<char>(body.size() & 0xFF);
  return h + body;
}

std::string Inet(const std::string& src4, const std::string& tlvs = "") {
  return src4 + std::string("\x0a\x00\x00\x01", 4) + std::string("\xc3\x50\x13\xba", 4) + tlvs;
}

ProxyHeader ParseWhole(const std::string& h) {
  const ProxyHeaderFixed fixed = ParseProxyHeaderFixed(h.substr(0, kProxyHeaderFixedBytes));
  EXPECT_TRUE(fixed.valid);
  EXPECT_EQ(fixed.total_bytes, h.size());
  return ParseProxyHeader(h);
}

TEST(ProxyHeaderTest, ProxyOverTcp4GivesTheSourceMappedIntoIpv6) {
  const ProxyHeader p = ParseWhole(Header(0x21, 0x11, Inet(std::string("\xcb\x00\x71\x07", 4))));
  ASSERT_TRUE(p.valid);
  ASSERT_TRUE(p.source.known);
  const std::array<uint8_t, 16> want{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 203, 0, 113, 7};
  EXPECT_EQ(p.source.bytes, want);
}

TEST(ProxyHeaderTest, ProxyOverTcp6GivesTheSource) {
  std::string src(16, '\0');
  src[0] = '\x20';
  src[1] = '\x01';
  src[2] = '\x0d';
  src[3] = '\xb8';
  src[15] = '\x09';
  const ProxyHeader p = ParseWhole(Header(0x21, 0x21, src + std::string(16, '\x01') + "abcd"));
  ASSERT_TRUE(p.valid && p.source.known);
  EXPECT_EQ(p.source.bytes[0], 0x20);
  EXPECT_EQ(p.source.bytes[3], 0xb8);
  EXPECT_EQ(p.source.bytes[15], 0x09);
}

TEST(ProxyHeaderTest, TlvsAfterTheAddressesAreSkipped) {
  const std::string alpn("\x01\x00\x02h2", 5);  // PP2_TYPE_ALPN
  const ProxyHeader p =
      ParseWhole(Header(0x21, 0x11, Inet(std::string("\x7f\x00\x00\x02", 4), alpn)));
  ASSERT_TRUE(p.valid && p.source.known);
  EXPECT_EQ(p.source.bytes[15], 2);
}

TEST(ProxyHeaderTest, LocalUnspecAndUnixKeepTheSocketPeer) {
  for (const std::string& h : {Header(0x20, 0x00, ""), Header(0x20, 0x11, Inet("\x01\x02\x03\x04")),
                               Header(0x21, 0x00, ""), Header(0x21, 0x31, std::string(216, 'x')),
                               Header(0x21, 0x12, Inet("\x01\x02\x03\x04"))}) {
    const ProxyHeader p = ParseWhole(h);
    EXPECT_TRUE(p.valid);
    EXPECT_FALSE(p.source.known);
  }
}

TEST(ProxyHeaderTest, BadFixedPartsAreRefused) {
  const std::string good = Header(0x21, 0x11, Inet("\x01\x02\x03\x04"));
  std::string bad_signature = good;
  bad_signature[6] = 'X';
  std::string version1 = good;
  version1[12] = '\x11';
  std::string unknown_command = good;
  unknown_command[12] = '\x22';
  for (const std::string& h : {bad_signature, version1, unknown_command}) {
    EXPECT_FALSE(ParseProxyHeaderFixed(h.substr(0, kProxyHeaderFixedBytes)).valid);
    EXPECT_FALSE(ParseProxyHeader(h).valid);
  }
  // Version 1's text form, and an HTTP/2 preface sent to a port that expects the header.
  EXPECT_FALSE(ParseProxyHeaderFixed("PROXY TCP4 1.2.3.").valid);
  EXPECT_FALSE(ParseProxyHeaderFixed("PRI * HTTP/2.0\r\n").valid);
  EXPECT_FALSE(ParseProxyHeaderFixed(good.substr(0, 15)).valid);
}

TEST(ProxyHeaderTest, LengthIsBoundedAndMustCoverTheAddresses) {
  std::string longest = Header(0x21, 0x11, Inet("\x01\x02\x03\x04", std::string(4068, 'x')));
  ASSERT_EQ(longest.size(), kProxyHeaderMaxBytes);
  EXPECT_TRUE(ParseProxyHeaderFixed(longest.substr(0, 16)).valid);
  std::string too_long = Header(0x21, 0x11, Inet("\x01\x02\x03\x04", std::string(4069, 'x')));
  EXPECT_FALSE(ParseProxyHeaderFixed(too_long.substr(0, 16)).valid);
  // TCP over IPv4 with a block too short for its addresses.
  EXPECT_FALSE(ParseProxyHeader(Header(0x21, 0x11, "\x01\x02\x03\x04")).valid);
  EXPECT_FALSE(ParseProxyHeader(Header(0x21, 0x21, std::string(35, 'x'))).valid);
  // A whole header whose length disagrees with its fixed part.
  const std::string good = Header(0x21, 0x11, Inet("\x01\x02\x03\x04"));
  EXPECT_FALSE(ParseProxyHeader(good.substr(0, good.size() - 1)).valid);
  EXPECT_FALSE(ParseProxyHeader(good + "x").valid);
}

}  // namespace
}  // namespace xb::net
