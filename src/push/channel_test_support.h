// Test-only helpers of the channel tests: keys made at run time, loopback TLS fakes reached
// through a pin, and running one attempt on the test's io_context.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/testing/loopback_servers.h"
#include "push/channel.h"
#include "push/provider_options.h"

namespace xb::push::testing {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using net::testing::ScriptedReply;
using net::testing::ServedRequest;

inline std::string PrivatePem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);  // PKCS#8
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(size));
  BIO_free(bio);
  return out;
}

// A key pair owned by the test; `pem` is its PKCS#8 private key.
struct TestKey {
  EVP_PKEY* key = nullptr;
  std::string pem;
  explicit TestKey(EVP_PKEY* k) : key(k), pem(PrivatePem(k)) {}
  ~TestKey() { EVP_PKEY_free(key); }
  TestKey(const TestKey&) = delete;
  TestKey& operator=(const TestKey&) = delete;
};
inline std::unique_ptr<TestKey> EcKey() { return std::make_unique<TestKey>(EVP_EC_gen("P-256")); }
inline std::unique_ptr<TestKey> RsaKey() { return std::make_unique<TestKey>(EVP_RSA_gen(2048)); }

// base64url without padding, decoded (test inputs are well formed).
inline std::string DecodeBase64Url(std::string text) {
  for (char& c : text) {
    c = c == '-' ? '+' : (c == '_' ? '/' : c);
  }
  size_t pad = 0;
  while (text.size() % 4 != 0) {
    text.push_back('=');
    ++pad;
  }
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

// The three parts of a compact JWS, the first two decoded.
struct JwtParts {
  std::string header, claims, signature, signing_input;
};
inline JwtParts SplitJwt(const std::string& jwt) {
  const size_t a = jwt.find('.');
  const size_t b = jwt.find('.', a + 1);
  return JwtParts{DecodeBase64Url(jwt.substr(0, a)), DecodeBase64Url(jwt.substr(a + 1, b - a - 1)),
                  DecodeBase64Url(jwt.substr(b + 1)), jwt.substr(0, b)};
}

// A wall clock the test moves.
struct ManualClock {
  std::shared_ptr<std::chrono::system_clock::time_point> now =
      std::make_shared<std::chrono::system_clock::time_point>(
          std::chrono::system_clock::from_time_t(1700000000));
  WallClock Get() const {
    return [now = now] { return *now; };
  }
  void Advance(std::chrono::milliseconds by) const { *now += by; }
};

// Answers every name in `hosts` with 127.0.0.1:`port` (ProviderOptions::static_hosts).
inline std::map<std::string, asio::ip::tcp::endpoint, std::less<>> Pin(
    std::vector<std::string> hosts, uint16_t port) {
  std::map<std::string, asio::ip::tcp::endpoint, std::less<>> table;
  for (auto& h : hosts) {
    table.emplace(std::move(h), asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  return table;
}

// A loopback port nothing listens on (bound, then closed).
inline uint16_t ClosedPort(asio::io_context& io) {
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

// Runs the attempts at once on `io` (the fakes run there too) and returns their results.
inline std::vector<AttemptResult> RunAttempts(asio::io_context& io, ChannelSender& channel,
                                              std::vector<Target> targets,
                                              const PushMessage& message,
                                              Clock::duration budget = std::chrono::seconds(10)) {
  std::vector<std::optional<AttemptResult>> results(targets.size());
  size_t done = 0;
  const auto deadline = Clock::now() + budget;
  for (size_t i = 0; i < targets.size(); ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          results[i] = co_await channel.Attempt(targets[i], message, deadline);
          ++done;
        },
        asio::detached);
  }
  const auto give_up = Clock::now() + budget + std::chrono::seconds(5);
  while (done < targets.size() && Clock::now() < give_up) {
    io.run_one_for(std::chrono::milliseconds(50));
  }
  std::vector<AttemptResult> out;
  for (auto& r : results) {
    EXPECT_TRUE(r.has_value());
    out.push_back(r.value_or(AttemptResult{}));
  }
  return out;
}

inline AttemptResult RunAttempt(asio::io_context& io, ChannelSender& channel, Target target,
                                const PushMessage& message,
                                Clock::duration budget = std::chrono::seconds(10)) {
  return RunAttempts(io, channel, {std::move(target)}, message, budget)[0];
}

inline const char* ClassName(AnswerClass answer) {
  switch (answer) {
    case AnswerClass::kDelivered:
      return "delivered";
    case AnswerClass::kRejected:
      return "rejected";
    case AnswerClass::kMismatch:
      return "mismatch";
    case AnswerClass::kTerminal:
      return "terminal";
    case AnswerClass::kTransient:
      return "transient";
    case AnswerClass::kGone:
      return "gone";
  }
  return "?";
}

}  // namespace xb::push::testing
