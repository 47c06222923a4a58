// Webhook destination safety (spec/PUSH.md section 10). The URL grammar is base/url's; this file
// adds what a webhook target must be on top of it, the allowed_domains match and the blocked
// address classes. Nothing here logs: the URL and its host are recipient data (OPS-014, PUSH-254).
#include "push/destination.h"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "base/ip_address.h"
#include "base/url.h"

namespace xb::push {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

bool EndsWithIgnoreCase(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         EqualsIgnoreCase(text.substr(text.size() - suffix.size()), suffix);
}

// The part of a host before a "*." entry's suffix: one or more labels, none of them empty.
bool IsLabelSequence(std::string_view prefix) {
  if (prefix.empty()) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t dot = prefix.find('.', start);
    const size_t end = dot == std::string_view::npos ? prefix.size() : dot;
    if (end == start) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

bool MatchesEntry(std::string_view host, std::string_view entry) {
  if (entry.starts_with("*.")) {
    const std::string_view suffix = entry.substr(1);  // ".suffix"
    return host.size() > suffix.size() && EndsWithIgnoreCase(host, suffix) &&
           IsLabelSequence(host.substr(0, host.size() - suffix.size()));
  }
  return EqualsIgnoreCase(host, entry);
}

bool IsBlockedIpv4(const asio::ip::address_v4::bytes_type& b) {
  return b[0] == 10 ||                                                  // 10.0.0.0/8
         (b[0] == 172 && (b[1] & 0xf0) == 16) ||                        // 172.16.0.0/12
         (b[0] == 192 && b[1] == 168) ||                                // 192.168.0.0/16
         (b[0] == 100 && (b[1] & 0xc0) == 64) ||                        // 100.64.0.0/10
         b[0] == 127 ||                                                 // 127.0.0.0/8
         (b[0] == 169 && b[1] == 254) ||                                // 169.254.0.0/16
         (b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0) ||          // 0.0.0.0
         (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) ||  // broadcast
         (b[0] & 0xf0) == 224;                                          // 224.0.0.0/4
}

bool IsBlockedIpv6(const asio::ip::address_v6& address) {
  const asio::ip::address_v6::bytes_type b = address.to_bytes();
  return (b[0] & 0xfe) == 0xfc ||                    // fc00::/7
         (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) ||  // fec0::/10
         address.is_loopback() ||                    // ::1
         (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) ||  // fe80::/10
         address.is_unspecified() ||                 // ::
         b[0] == 0xff;                               // ff00::/8
}

// The address of an IP-literal host (ParseUrl already checked its form).
Expected<asio::ip::address, std::string> LiteralAddress(const WebhookUrl& url) {
  std::array<uint8_t, 4> v4{};
  if (ParseIpv4(url.host, &v4)) {
    return asio::ip::address(asio::ip::address_v4(v4));
  }
  std::array<uint8_t, 16> v6{};
  if (ParseIpv6(url.host, &v6)) {
    return asio::ip::address(asio::ip::address_v6(v6));
  }
  return std::string("the host is not an IP address");
}

// Resolves host:port within `deadline` (a timer cancels the resolver); empty on failure, on an
// empty answer and on expiry.
asio::awaitable<std::vector<tcp::endpoint>> Resolve(
    std::string host, uint16_t port, std::chrono::steady_clock::time_point deadline) {
  auto executor = co_await asio::this_coro::executor;
  auto resolver = std::make_shared<tcp::resolver>(executor);
  asio::steady_timer guard(executor);
  guard.expires_at(deadline);
  guard.async_wait([weak = std::weak_ptr<tcp::resolver>(resolver)](boost::system::error_code ec) {
    if (auto r = weak.lock(); !ec && r != nullptr) {
      r->cancel();
    }
  });
  auto [ec, results] = co_await resolver->async_resolve(host, std::to_string(port),
                                                        tcp::resolver::numeric_service, kNoThrow);
  guard.cancel();
  std::vector<tcp::endpoint> endpoints;
  if (ec || std::chrono::steady_clock::now() >= deadline) {
    co_return endpoints;
  }
  for (const auto& entry : results) {
    endpoints.push_back(entry.endpoint());
  }
  co_return endpoints;
}

}  // namespace

// implements: PUSH-256
Expected<WebhookUrl, std::string> ParseWebhookUrl(std::string_view text) {
  Result<Url> url = ParseUrl(text);
  if (!url.ok()) {
    return std::string("the webhook url does not parse");
  }
  // RFC 3986 3.1: schemes compare case-insensitively; anything but https fails, also with
  // allow_private_addresses.
  if (!EqualsIgnoreCase(url->scheme, "https")) {
    return std::string("the webhook url is not https");
  }
  if (url->has_userinfo) {
    return std::string("the webhook url carries userinfo");
  }
  if (url->host.empty()) {
    return std::string("the webhook url has no host");
  }
  // A DNS name never needs percent-encoding; refusing it keeps the host that allowed_domains
  // matches the same string the resolver looks up.
  if (url->host_has_percent_encoding) {
    return std::string("the webhook url host is percent-encoded");
  }
  return WebhookUrl{
      .host = url->host,
      .port = url->port.value_or(443),
      .host_is_ip_literal = url->host_kind != Url::HostKind::kRegName,
  };
}

// implements: PUSH-256
bool MatchesAllowedDomains(std::string_view host, const std::vector<std::string>& allowed_domains) {
  if (allowed_domains.empty()) {
    return true;
  }
  for (const std::string& entry : allowed_domains) {
    if (MatchesEntry(host, entry)) {
      return true;
    }
  }
  return false;
}

// implements: PUSH-256
bool IsBlockedAddress(const asio::ip::address& address) {
  if (address.is_v4()) {
    return IsBlockedIpv4(address.to_v4().to_bytes());
  }
  const asio::ip::address_v6 v6 = address.to_v6();
  if (v6.is_v4_mapped()) {  // ::ffff:0:0/96: judged by the embedded IPv4 address
    return IsBlockedIpv4(asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_bytes());
  }
  return IsBlockedIpv6(v6);
}

// implements: PUSH-256
bool AddressesAllowed(const std::vector<tcp::endpoint>& addresses, const DestinationRules& rules) {
  if (addresses.empty()) {
    return false;
  }
  if (rules.allow_private_addresses) {
    return true;
  }
  for (const tcp::endpoint& endpoint : addresses) {
    if (IsBlockedAddress(endpoint.address())) {
      return false;
    }
  }
  return true;
}

// implements: PUSH-256
asio::awaitable<bool> RegistrationAllowed(std::string url, DestinationRules rules,
                                          std::chrono::steady_clock::time_point deadline) {
  auto parsed = ParseWebhookUrl(url);
  if (!parsed.ok() || !MatchesAllowedDomains(parsed->host, rules.allowed_domains)) {
    co_return false;
  }
  std::vector<tcp::endpoint> addresses;
  if (parsed->host_is_ip_literal) {  // an IP literal is checked as written, never looked up
    auto address = LiteralAddress(*parsed);
    if (!address.ok()) {
      co_return false;
    }
    addresses.emplace_back(*address, parsed->port);
  } else {
    addresses = co_await Resolve(parsed->host, parsed->port, deadline);
  }
  co_return AddressesAllowed(addresses, rules);
}

}  // namespace xb::push
