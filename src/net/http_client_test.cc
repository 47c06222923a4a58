// net/http_client without a server: request checks, error words, the hook and the deadline
// before anything connects, the TLS client context (loopback tests: http_client_loopback_test.cc).
#include "net/http_client.h"

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <set>

#include "net/tls_client.h"

namespace xb::net {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Reply = Expected<HttpResponse, HttpError>;

Reply SendNow(HttpClientOptions options, HttpRequest request) {
  asio::io_context io;
  auto client = HttpClient::Create(io.get_executor(), std::move(options));
  EXPECT_TRUE(client.ok());
  std::optional<Reply> reply;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { reply.emplace(co_await (*client)->Send(request)); },
      asio::detached);
  io.run_for(std::chrono::seconds(10));
  EXPECT_TRUE(reply.has_value());
  return reply.has_value() ? std::move(*reply) : Reply(HttpError{HttpErrorKind::kTimeout, ""});
}

HttpRequest At(std::string url) {
  return HttpRequest{.url = std::move(url), .deadline = Clock::now() + std::chrono::seconds(5)};
}

TEST(HttpClientTest, RefusesUrlsItCannotFetch) {
  for (const char* url : {"", "ftp://127.0.0.1/x", "http:///path", "https://user@127.0.0.1/",
                          "http://h h/", "127.0.0.1:80"}) {
    Reply reply = SendNow({}, At(url));
    ASSERT_FALSE(reply.ok()) << url;
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kInvalidRequest) << url;
  }
}

TEST(HttpClientTest, HookVetoesAnIpLiteralBeforeConnecting) {
  int calls = 0;
  HttpClientOptions options{
      .resolve_hook = [&](std::string_view,
                          ResolvedAddresses) -> Expected<ResolvedAddresses, std::string> {
        ++calls;
        return ResolvedAddresses{};  // nothing left: a veto too
      }};
  Reply reply = SendNow(std::move(options), At("http://192.0.2.1:9/"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, HttpErrorKind::kVetoed);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(reply.error().message.find("192.0.2.1"), std::string::npos);  // OPS-014
}

TEST(HttpClientTest, PassedDeadlineIsATimeout) {
  HttpRequest request = At("http://127.0.0.1:9/");
  request.deadline = Clock::now() - std::chrono::seconds(1);
  Reply reply = SendNow({}, request);
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, HttpErrorKind::kTimeout);
}

TEST(HttpClientTest, ErrorKindsHaveDistinctNames) {
  std::set<std::string_view> names;
  for (HttpErrorKind kind :
       {HttpErrorKind::kInvalidRequest, HttpErrorKind::kResolve, HttpErrorKind::kVetoed,
        HttpErrorKind::kConnect, HttpErrorKind::kTls, HttpErrorKind::kTimeout,
        HttpErrorKind::kBodyTooLarge, HttpErrorKind::kProtocol, HttpErrorKind::kClosed,
        HttpErrorKind::kRedirect}) {
    names.insert(HttpErrorKindName(kind));
  }
  EXPECT_EQ(names.size(), 10u);
}

TEST(HttpClientTest, MissingCaFileFailsCreate) {
  asio::io_context io;
  auto client = HttpClient::Create(io.get_executor(), {.ca_file = "/nonexistent/ca.pem"});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error(), "the TLS trust store cannot be loaded");
}

TEST(TlsClientTest, PeerNameIsAnIpOrADnsName) {
  auto context = MakeClientTlsContext({.alpn = {"h2", "http/1.1"}});
  ASSERT_TRUE(context.ok());
  EXPECT_EQ(SSL_CTX_get_verify_mode((*context)->native_handle()), SSL_VERIFY_PEER);
  SSL* by_name = SSL_new((*context)->native_handle());
  ASSERT_TRUE(SetTlsPeerName(by_name, "api.example"));
  EXPECT_STREQ(SSL_get_servername(by_name, TLSEXT_NAMETYPE_host_name), "api.example");
  SSL_free(by_name);
  SSL* by_ip = SSL_new((*context)->native_handle());
  ASSERT_TRUE(SetTlsPeerName(by_ip, "::1"));
  EXPECT_EQ(SSL_get_servername(by_ip, TLSEXT_NAMETYPE_host_name), nullptr);  // no SNI for an IP
  SSL_free(by_ip);
}

}  // namespace
}  // namespace xb::net
