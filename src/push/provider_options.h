// What the channels take besides their configuration: where the fixed provider hosts connect
// (production: DNS), which CA is trusted, and the wall clock provider tokens are stamped with.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "net/http_client.h"

namespace xb::push {

using WallClock = std::function<std::chrono::system_clock::time_point()>;

struct ProviderOptions {
  // Empty in production. The test binary answers api.push.apple.com, api.sandbox.push.apple.com,
  // fcm.googleapis.com and oauth2.googleapis.com from this table (loopback fakes) instead of DNS;
  // URLs, SNI and the certificate name check stay the spec's hosts. Never used by the webhook
  // channel (net::HttpClientOptions::static_hosts).
  std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> static_hosts{};
  // PEM CA bundle trusted instead of the system roots (unit tests); empty: the system roots
  // (OpenSSL's default verify paths, so SSL_CERT_FILE works).
  std::string ca_file{};
  // Stamps iat/exp and times the token caches; empty: std::chrono::system_clock::now.
  WallClock wall_clock{};
};

// `options.wall_clock`, or the system clock when it is empty.
inline WallClock ClockOf(const ProviderOptions& options) {
  if (options.wall_clock) {
    return options.wall_clock;
  }
  return [] { return std::chrono::system_clock::now(); };
}

}  // namespace xb::push
