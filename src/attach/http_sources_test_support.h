// Test-only fixture of the HTTP credential-source tests: one scripted loopback server (plain HTTP,
// or TLS with a certificate for the fixed AWS host names) that the client's pins put behind
// those names, an injected environment and wall clock, temporary files, and running one Fetch
// on the test's io_context.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attach/credentials.h"
#include "attach/testing/run_fetch.h"
#include "attach/testing/temp_dir.h"
#include "net/http_client.h"
#include "net/testing/loopback_servers.h"

namespace xb::attach::testing {

namespace asio = boost::asio;
using net::testing::LoopbackServer;
using net::testing::ScriptedReply;
using net::testing::ServedRequest;

// 1700000000 = Tue, 14 Nov 2023 22:13:20 GMT.
inline WallClock::time_point Epoch(int64_t seconds) {
  return WallClock::time_point(std::chrono::seconds(seconds));
}

// A source provider that answers what the test sets.
class FixedProvider final : public CredentialProvider {
 public:
  explicit FixedProvider(CredentialResult answer) : answer_(std::move(answer)) {}
  asio::awaitable<CredentialResult> Fetch() override {
    ++calls;
    co_return answer_;
  }
  int calls = 0;

 private:
  CredentialResult answer_;
};

class HttpSourceTest : public ::testing::Test {
 protected:
  enum class Scheme { kHttp, kHttps };

  // Starts the server and a client that sends every name in `hosts` to it.
  void Start(Scheme scheme, std::vector<std::string> hosts) {
    std::shared_ptr<asio::ssl::context> tls;
    net::HttpClientOptions options;
    if (scheme == Scheme::kHttps) {
      pki_ = net::testing::MakeTestPki(hosts);
      tls = net::testing::ServerTls(*pki_, "http/1.1");
      options.ca_file = pki_->ca_file;
    }
    server_ = std::make_unique<LoopbackServer>(io_, LoopbackServer::Protocol::kHttp1, tls,
                                               [this](const ServedRequest& request) {
                                                 requests_.push_back(request);
                                                 if (answer_) {
                                                   return answer_(request);
                                                 }
                                                 if (replies_.empty()) {
                                                   return ScriptedReply{.status = 404};
                                                 }
                                                 ScriptedReply reply = replies_.front();
                                                 replies_.pop_front();
                                                 return reply;
                                               });
    for (const std::string& host : hosts) {
      options.static_hosts.emplace(
          host, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server_->port()));
    }
    auto client = net::HttpClient::Create(io_.get_executor(), std::move(options));
    ASSERT_TRUE(client.ok());
    http_ = std::move(client).value();
  }

  ProviderContext Context() {
    return ProviderContext{.executor = io_.get_executor(),
                           .http = http_.get(),
                           .env = MapEnvironment(&env_),
                           .region = "us-east-1",
                           .now = [this] { return now_; }};
  }

  CredentialResult Fetch(CredentialProvider& provider) {
    CredentialResult result = RunFetch(provider, io_);
    if (!result.ok() && result.error().message == "the test fetch did not finish") {
      ADD_FAILURE() << "Fetch did not finish";
    }
    return result;
  }

  // A file under this test's temporary directory, written with `content`; its path.
  std::string WriteFile(const std::string& relative, const std::string& content) {
    return dir_.Write(relative, content);
  }

  std::filesystem::path Dir() { return dir_.path(); }

  static std::string KindName(const CredentialResult& result) {
    if (result.ok()) {
      return "ok";
    }
    return result.error().kind == CredentialFailure::kUnavailable ? "unavailable"
                                                                  : "invalid configuration";
  }

  asio::io_context io_;
  std::unique_ptr<net::testing::TestPki> pki_;
  std::unique_ptr<LoopbackServer> server_;
  std::unique_ptr<net::HttpClient> http_;
  std::map<std::string, std::string> env_;
  WallClock::time_point now_ = Epoch(1700000000);
  std::deque<ScriptedReply> replies_;
  std::function<ScriptedReply(const ServedRequest&)> answer_;
  std::vector<ServedRequest> requests_;
  TempDir dir_;
};

// The value of form field `name` in an application/x-www-form-urlencoded body ("" when absent),
// still encoded; nullopt when absent.
inline std::optional<std::string> FormField(const std::string& body, const std::string& name) {
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string::npos) {
      end = body.size();
    }
    const std::string pair = body.substr(start, end - start);
    if (pair.starts_with(name + "=")) {
      return pair.substr(name.size() + 1);
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace xb::attach::testing
