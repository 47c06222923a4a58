// Webhook destination safety (push/destination.h, spec/PUSH.md section 10): the URL shape, the
// allowed_domains match, every blocked address class with its boundaries, and the registration
// examples of section 10 (the real resolver for names; IP literals are never looked up).
#include "push/destination.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xb::push {
namespace {

namespace asio = boost::asio;
using std::chrono::steady_clock;

asio::ip::address Address(const char* text) { return asio::ip::make_address(text); }

// allow_private_addresses = true, any host.
DestinationRules Lax() { return {.allowed_domains = {}, .allow_private_addresses = true}; }

// Runs RegistrationAllowed to completion on a fresh io_context.
bool Registers(std::string url, DestinationRules rules = {},
               steady_clock::time_point deadline = steady_clock::now() + std::chrono::seconds(10)) {
  asio::io_context io;
  std::optional<bool> allowed;
  asio::co_spawn(io, RegistrationAllowed(std::move(url), std::move(rules), deadline),
                 [&](std::exception_ptr error, bool result) {
                   EXPECT_EQ(error, nullptr);
                   allowed = result;
                 });
  io.run();
  EXPECT_TRUE(allowed.has_value());
  return allowed.value_or(false);
}

// verifies: PUSH-256
TEST(WebhookUrl, AcceptsHttpsWithAHost) {
  auto literal = ParseWebhookUrl("https://8.8.8.8/hook");
  ASSERT_TRUE(literal.ok());
  EXPECT_EQ(literal->host, "8.8.8.8");
  EXPECT_EQ(literal->port, 443);
  EXPECT_TRUE(literal->host_is_ip_literal);

  auto v6 = ParseWebhookUrl("https://[2001:db8::1]:8443/x?y=1");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "2001:db8::1");
  EXPECT_EQ(v6->port, 8443);
  EXPECT_TRUE(v6->host_is_ip_literal);

  auto name = ParseWebhookUrl("HTTPS://Hooks.Example.org");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->host, "Hooks.Example.org");
  EXPECT_EQ(name->port, 443);
  EXPECT_FALSE(name->host_is_ip_literal);

  auto empty_port = ParseWebhookUrl("https://hooks.example.org:/x");
  ASSERT_TRUE(empty_port.ok());
  EXPECT_EQ(empty_port->port, 443);
}

// verifies: PUSH-256
TEST(WebhookUrl, RefusesOtherShapesWithoutQuotingTheUrl) {
  for (const char* bad :
       {"", "invalid", "http://127.0.0.1", "http://hooks.example.org/x", "ftp://hooks.example.org",
        "https:///", "https://", "https://:443/", "https://user:secret@127.0.0.1",
        "https://user@hooks.example.org", "https://:pw@hooks.example.org", "https://[::1",
        "https://[fe80::1%25e]/", "https://%6cocalhost/", "https://h:99999/"}) {
    auto url = ParseWebhookUrl(bad);
    ASSERT_FALSE(url.ok()) << bad;
    EXPECT_EQ(url.error().find("example"), std::string::npos) << url.error();
    EXPECT_EQ(url.error().find("127"), std::string::npos) << url.error();
  }
}

// verifies: PUSH-256
TEST(AllowedDomains, EmptyListMatchesAnyHost) {
  EXPECT_TRUE(MatchesAllowedDomains("anything.example", {}));
  EXPECT_TRUE(MatchesAllowedDomains("8.8.8.8", {}));
}

// verifies: PUSH-256
TEST(AllowedDomains, PlainEntryIsEqualityIgnoringCase) {
  const std::vector<std::string> list = {"hooks.example.org"};
  EXPECT_TRUE(MatchesAllowedDomains("hooks.example.org", list));
  EXPECT_TRUE(MatchesAllowedDomains("HOOKS.Example.ORG", list));
  EXPECT_FALSE(MatchesAllowedDomains("a.hooks.example.org", list));
  EXPECT_FALSE(MatchesAllowedDomains("example.org", list));
  EXPECT_FALSE(MatchesAllowedDomains("hooks.example.org.evil", list));
}

// verifies: PUSH-256
TEST(AllowedDomains, WildcardNeedsAtLeastOneMoreLabel) {
  const std::vector<std::string> list = {"*.example.org"};
  EXPECT_TRUE(MatchesAllowedDomains("a.example.org", list));
  EXPECT_TRUE(MatchesAllowedDomains("a.b.example.org", list));
  EXPECT_TRUE(MatchesAllowedDomains("A.EXAMPLE.Org", list));
  EXPECT_FALSE(MatchesAllowedDomains("example.org", list));
  EXPECT_FALSE(MatchesAllowedDomains("evilexample.org", list));
  EXPECT_FALSE(MatchesAllowedDomains("a.example.org.evil", list));
  EXPECT_FALSE(MatchesAllowedDomains(".example.org", list));
  EXPECT_FALSE(MatchesAllowedDomains("a..example.org", list));
}

// verifies: PUSH-256
TEST(AllowedDomains, AnyEntryOfTheListMayMatch) {
  const std::vector<std::string> list = {"one.example", "*.two.example"};
  EXPECT_TRUE(MatchesAllowedDomains("one.example", list));
  EXPECT_TRUE(MatchesAllowedDomains("x.two.example", list));
  EXPECT_FALSE(MatchesAllowedDomains("two.example", list));
  EXPECT_FALSE(MatchesAllowedDomains("x.one.example", list));
}

// verifies: PUSH-256
TEST(BlockedAddress, EveryIpv4ClassWithItsEdges) {
  for (const char* blocked :
       {"10.0.0.0", "10.255.255.255", "172.16.0.0", "172.31.255.255", "192.168.0.0",
        "192.168.255.255", "100.64.0.0", "100.127.255.255", "127.0.0.0", "127.255.255.255",
        "169.254.0.0", "169.254.169.254", "169.254.255.255", "0.0.0.0", "255.255.255.255",
        "224.0.0.0", "239.255.255.255"}) {
    EXPECT_TRUE(IsBlockedAddress(Address(blocked))) << blocked;
  }
  for (const char* allowed :
       {"9.255.255.255", "11.0.0.0", "172.15.255.255", "172.32.0.0", "192.167.255.255",
        "192.169.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.0",
        "169.253.255.255", "169.255.0.0", "0.0.0.1", "255.255.255.254", "223.255.255.255",
        "240.0.0.0", "8.8.8.8", "1.1.1.1"}) {
    EXPECT_FALSE(IsBlockedAddress(Address(allowed))) << allowed;
  }
}

// verifies: PUSH-256
TEST(BlockedAddress, EveryIpv6ClassWithItsEdges) {
  for (const char* blocked : {"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0::",
                              "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::1", "fe80::", "fe80::1",
                              "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::", "ff00::", "ff02::1",
                              "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "feff::1:0:0:0"}) {
    EXPECT_TRUE(IsBlockedAddress(Address(blocked))) << blocked;
  }
  for (const char* allowed :
       {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::2",
        "2001:4860:4860::8888"}) {
    EXPECT_FALSE(IsBlockedAddress(Address(allowed))) << allowed;
  }
}

// verifies: PUSH-256
TEST(BlockedAddress, Ipv4MappedIsJudgedByTheEmbeddedAddress) {
  for (const char* blocked :
       {"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:100.64.0.0", "::ffff:100.127.255.255",
        "::ffff:169.254.169.254", "::ffff:0.0.0.0", "::ffff:255.255.255.255", "::ffff:224.0.0.1",
        "::ffff:172.16.0.1", "::ffff:192.168.1.1"}) {
    EXPECT_TRUE(IsBlockedAddress(Address(blocked))) << blocked;
  }
  for (const char* allowed : {"::ffff:100.63.255.255", "::ffff:100.128.0.0", "::ffff:8.8.8.8"}) {
    EXPECT_FALSE(IsBlockedAddress(Address(allowed))) << allowed;
  }
}

// verifies: PUSH-256
TEST(AddressesAllowed, EmptySetFailsAndAnyBlockedAddressFails) {
  using asio::ip::tcp;
  const DestinationRules strict;
  const DestinationRules lax = Lax();
  EXPECT_FALSE(AddressesAllowed({}, strict));
  EXPECT_FALSE(AddressesAllowed({}, lax));
  const tcp::endpoint open(Address("8.8.8.8"), 443);
  const tcp::endpoint loopback(Address("127.0.0.1"), 443);
  EXPECT_TRUE(AddressesAllowed({open}, strict));
  EXPECT_FALSE(AddressesAllowed({open, loopback}, strict));
  EXPECT_FALSE(AddressesAllowed({loopback, open}, strict));
  EXPECT_TRUE(AddressesAllowed({open, loopback}, lax));
}

// verifies: PUSH-256
TEST(RegistrationAllowed, TheExamplesOfSection10) {
  for (const char* rejected :
       {"invalid", "http://127.0.0.1", "https:///", "https://user:secret@127.0.0.1",
        "https://10.0.0.1", "https://[::ffff:127.0.0.1]", "https://169.254.169.254",
        "https://0.0.0.0", "https://[::]", "https://[fe80::1]"}) {
    EXPECT_FALSE(Registers(rejected)) << rejected;
  }
  // An IP literal is never looked up: this passes without DNS.
  EXPECT_TRUE(Registers("https://8.8.8.8/hook"));
}

// verifies: PUSH-256
TEST(RegistrationAllowed, LocalhostResolvesToLoopbackAndFails) {
  EXPECT_FALSE(Registers("https://localhost/hook"));
  EXPECT_FALSE(Registers("https://LOCALHOST:8443/hook"));
  // The address check alone is lifted: the name resolves, so it passes.
  EXPECT_TRUE(Registers("https://localhost/hook", Lax()));
}

// verifies: PUSH-256
TEST(RegistrationAllowed, AllowPrivateAddressesStillNeedsHttps) {
  const DestinationRules lax = Lax();
  EXPECT_TRUE(Registers("https://127.0.0.1/hook", lax));
  EXPECT_TRUE(Registers("https://[::1]:8443/hook", lax));
  EXPECT_FALSE(Registers("http://127.0.0.1/hook", lax));
  EXPECT_FALSE(Registers("https://user@127.0.0.1/hook", lax));
}

// verifies: PUSH-256
TEST(RegistrationAllowed, TheDomainListAppliesToTheHostAlone) {
  const DestinationRules list{.allowed_domains = {"*.example.org"}};
  EXPECT_FALSE(Registers("https://8.8.8.8/hook", list));
  const DestinationRules literal{.allowed_domains = {"8.8.8.8"}};
  EXPECT_TRUE(Registers("https://8.8.8.8:8443/hook", literal));
  // Matched before any lookup: a listed name that resolves to loopback still fails.
  const DestinationRules local{.allowed_domains = {"localhost"}};
  EXPECT_FALSE(Registers("https://localhost/", local));
  EXPECT_FALSE(Registers("https://127.0.0.1/", local));
}

// verifies: PUSH-256
TEST(RegistrationAllowed, ResolutionIsBoundedByTheDeadline) {
  const DestinationRules lax = Lax();
  EXPECT_FALSE(Registers("https://localhost/", lax, steady_clock::now() - std::chrono::seconds(1)));
  // An IP literal needs no lookup, so an expired deadline does not matter.
  EXPECT_TRUE(Registers("https://8.8.8.8/", {}, steady_clock::now() - std::chrono::seconds(1)));
}

// verifies: PUSH-256
TEST(RegistrationAllowed, ANameThatDoesNotResolveFails) {
  EXPECT_FALSE(Registers("https://no-such-host.invalid/hook"));
}

}  // namespace
}  // namespace xb::push
