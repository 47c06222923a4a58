// Webhook destination safety (spec/PUSH.md section 10, PUSH-256): the URL's shape, the
// allowed_domains list and the blocked address classes. Used at Register (any failure:
// INVALID_ARGUMENT "webhook url is not allowed") and before every attempt (failure: rejected, no
// request; the connection then goes only to addresses checked in that attempt).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace xb::push {

struct DestinationRules {
  std::vector<std::string> allowed_domains;  // empty: any host
  bool allow_private_addresses = false;      // lifts the address-class check only
};

// A webhook URL that passed the shape checks: https, no userinfo, a host.
struct WebhookUrl {
  std::string host;  // as written, without IPv6 brackets
  uint16_t port = 443;
  bool host_is_ip_literal = false;
};

// Scheme https exactly, no username or password, host present; port = URL port or 443. The
// error is plain words without the URL.
Expected<WebhookUrl, std::string> ParseWebhookUrl(std::string_view url);

// Case-insensitive match of the host alone against the list (plain entry: equal; "*.suffix": ends
// with ".suffix" with at least one more label). An empty list matches any host.
bool MatchesAllowedDomains(std::string_view host, const std::vector<std::string>& allowed_domains);

// Whether the address is in a blocked class of the section 10 table (IPv4-mapped IPv6 by its
// embedded IPv4 address).
bool IsBlockedAddress(const boost::asio::ip::address& address);

// The address check of a resolved set: fails when the set is empty or, unless
// allow_private_addresses, when any address is blocked.
bool AddressesAllowed(const std::vector<boost::asio::ip::tcp::endpoint>& addresses,
                      const DestinationRules& rules);

// Register's check (PUSH.md 10): shape, allowed_domains, resolution bounded to `deadline` (an IP
// literal is not looked up), address classes. True when the URL may be registered. Suspends.
boost::asio::awaitable<bool> RegistrationAllowed(std::string url, DestinationRules rules,
                                                 std::chrono::steady_clock::time_point deadline);

}  // namespace xb::push
