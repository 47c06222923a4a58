// net/http_client against real servers on 127.0.0.1 (net/testing/loopback_servers.h): HTTP/1.1
// and HTTP/2 over TLS with a test CA made at run time, plain HTTP/1.1, kept connections, the
// deadline, the body cap, redirects, the resolver hook, a server that closes mid-response, the
// head handed back with an error that came after it, a burst to a fresh origin waiting for one
// connection attempt, and requests the server did not process (REFUSED_STREAM, GOAWAY) sent again.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

#include "net/http_client.h"
#include "net/testing/loopback_servers.h"

namespace xb::net {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Protocol = testing::LoopbackServer::Protocol;
using Reply = Expected<HttpResponse, HttpError>;

class HttpClientLoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override { pki_ = testing::MakeTestPki(); }

  std::unique_ptr<HttpClient> Client(HttpClientOptions options = {}) {
    if (options.ca_file.empty()) {
      options.ca_file = pki_->ca_file;
    }
    auto client = HttpClient::Create(io_.get_executor(), std::move(options));
    EXPECT_TRUE(client.ok());
    return std::move(client).value();
  }
  std::unique_ptr<testing::LoopbackServer> Server(Protocol protocol, bool tls = true) {
    return std::make_unique<testing::LoopbackServer>(
        io_, protocol,
        tls ? testing::ServerTls(*pki_, protocol == Protocol::kHttp2 ? "h2" : "http/1.1")
            : nullptr);
  }
  static HttpRequest Get(std::string url, Clock::duration budget = std::chrono::seconds(5)) {
    return HttpRequest{.url = std::move(url), .deadline = Clock::now() + budget};
  }
  // Runs the requests at once on the test's io_context (the servers run there too).
  std::vector<Reply> SendAll(HttpClient& client, std::vector<HttpRequest> requests) {
    std::vector<std::optional<Reply>> replies(requests.size());
    finished_at_.assign(requests.size(), Clock::time_point{});
    size_t done = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      asio::co_spawn(
          io_,
          [&, i]() -> asio::awaitable<void> {
            replies[i].emplace(co_await client.Send(requests[i]));
            finished_at_[i] = Clock::now();
            ++done;
          },
          asio::detached);
    }
    const auto give_up = Clock::now() + std::chrono::seconds(20);
    while (done < requests.size() && Clock::now() < give_up) {
      io_.run_one_for(std::chrono::milliseconds(100));
    }
    std::vector<Reply> out;
    for (auto& reply : replies) {
      EXPECT_TRUE(reply.has_value());
      out.push_back(reply.has_value() ? std::move(*reply)
                                      : Reply(HttpError{HttpErrorKind::kTimeout, "test"}));
    }
    return out;
  }
  Reply SendOne(HttpClient& client, HttpRequest request) {
    return std::move(SendAll(client, {std::move(request)})[0]);
  }
  static std::string Url(const testing::LoopbackServer& server, std::string path,
                         std::string scheme = "https") {
    return scheme + "://127.0.0.1:" + std::to_string(server.port()) + path;
  }

  asio::io_context io_;
  std::unique_ptr<testing::TestPki> pki_;
  std::vector<Clock::time_point> finished_at_;  // when each reply of the last SendAll came
};

TEST_F(HttpClientLoopbackTest, Http1OverTlsWithTheTestCa) {
  auto server = Server(Protocol::kHttp1);
  auto client = Client();
  Reply reply = SendOne(*client, Get(Url(*server, "/hello")));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->status, 200u);
  EXPECT_EQ(reply->body, "hello");
  EXPECT_EQ(reply->version, HttpVersion::kHttp1);
}

TEST_F(HttpClientLoopbackTest, Http2OverTlsChosenByAlpn) {
  auto server = Server(Protocol::kHttp2);
  auto client = Client();
  HttpRequest post = Get(Url(*server, "/echo"));
  post.method = "POST";
  post.body = std::string(100000, 'x');  // over one DATA frame and the initial window
  auto replies = SendAll(*client, {Get(Url(*server, "/hello")), post});
  ASSERT_TRUE(replies[0].ok()) << replies[0].error().message;
  EXPECT_EQ(replies[0]->version, HttpVersion::kHttp2);
  EXPECT_EQ(replies[0]->body, "hello");
  ASSERT_TRUE(replies[1].ok()) << replies[1].error().message;
  EXPECT_EQ(replies[1]->body, post.body);
}

TEST_F(HttpClientLoopbackTest, PlainHttpIsHttp1) {
  auto server = Server(Protocol::kHttp1, /*tls=*/false);
  auto client = Client();
  Reply reply = SendOne(*client, Get(Url(*server, "/hello", "http")));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->body, "hello");
}

// A client made http2_only (gRPC, the OTLP exporter's) speaks h2c with prior knowledge to a
// plain origin, keeps that connection, and hands the trailer section back apart from the head.
TEST_F(HttpClientLoopbackTest, Http2OnlySpeaksH2cAndKeepsTrailersApart) {
  auto server = std::make_unique<testing::LoopbackServer>(
      io_, Protocol::kHttp2, nullptr, [](const testing::ServedRequest& request) {
        return testing::ScriptedReply{.headers = {{"content-type", "application/grpc"}},
                                      .body = request.body,
                                      .trailers = {{"grpc-status", "0"}}};
      });
  auto client = Client(HttpClientOptions{.http2_only = true});
  HttpRequest post = Get(Url(*server, "/svc/Method", "http"));
  post.method = "POST";
  post.body = std::string(200000, 'g');  // past the initial flow-control window
  auto replies = SendAll(*client, {post, post});
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->version, HttpVersion::kHttp2);
    EXPECT_EQ(reply->body, post.body);
    ASSERT_EQ(reply->trailers.size(), 1u);
    EXPECT_EQ(reply->trailers[0].name, "grpc-status");
    EXPECT_EQ(reply->trailers[0].value, "0");
    EXPECT_EQ(reply->Find("grpc-status"), nullptr);
  }
  EXPECT_EQ(server->accepted(), 1);
  EXPECT_EQ(client->kept_connections(), 1u);
}

TEST_F(HttpClientLoopbackTest, Http2OnlyFailsWhenTlsChoosesHttp1) {
  auto server = Server(Protocol::kHttp1);
  auto client = Client(HttpClientOptions{.http2_only = true});
  Reply reply = SendOne(*client, Get(Url(*server, "/hello")));
  ASSERT_FALSE(reply.ok());
  // Offered "h2" alone, the HTTP/1.1-only server selects no protocol.
  EXPECT_EQ(reply.error().kind, HttpErrorKind::kProtocol) << reply.error().message;
}

TEST_F(HttpClientLoopbackTest, KeptHttp1ConnectionIsReused) {
  auto server = Server(Protocol::kHttp1);
  auto client = Client();
  for (int i = 0; i < 3; ++i) {
    Reply reply = SendOne(*client, Get(Url(*server, "/hello")));
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->reused_connection, i > 0);
  }
  EXPECT_EQ(server->accepted(), 1);
  EXPECT_EQ(client->kept_connections(), 1u);
}

TEST_F(HttpClientLoopbackTest, Http2MultiplexesOneConnection) {
  auto server = Server(Protocol::kHttp2);
  auto client = Client();
  ASSERT_TRUE(SendOne(*client, Get(Url(*server, "/hello"))).ok());
  auto replies = SendAll(*client, {Get(Url(*server, "/hello")), Get(Url(*server, "/hello")),
                                   Get(Url(*server, "/hello"))});
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_TRUE(reply->reused_connection);
  }
  EXPECT_EQ(server->accepted(), 1);
}

TEST_F(HttpClientLoopbackTest, DeadlineCoversTheWholeExchange) {
  for (Protocol protocol : {Protocol::kHttp1, Protocol::kHttp2}) {
    auto server = Server(protocol);
    auto client = Client();
    const auto start = Clock::now();
    Reply reply = SendOne(*client, Get(Url(*server, "/slow"), std::chrono::milliseconds(300)));
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kTimeout);
    EXPECT_FALSE(reply.error().head.has_value());  // nothing came back
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  }
}

TEST_F(HttpClientLoopbackTest, BodyStallingAfterTheHeadTimesOutWithTheHead) {
  for (Protocol protocol : {Protocol::kHttp1, Protocol::kHttp2}) {
    testing::LoopbackServer server(
        io_, protocol, testing::ServerTls(*pki_, protocol == Protocol::kHttp2 ? "h2" : "http/1.1"),
        [](const testing::ServedRequest&) {
          return testing::ScriptedReply{
              .status = 429, .headers = {{"retry-after", "120"}}, .body = "{}", .stall_body = true};
        });
    auto client = Client();
    const auto start = Clock::now();
    Reply reply = SendOne(*client, Get(Url(server, "/"), std::chrono::milliseconds(300)));
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kTimeout);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
    ASSERT_TRUE(reply.error().head.has_value());
    const HttpHead& head = *reply.error().head;
    EXPECT_EQ(head.status, 429u);
    ASSERT_NE(head.Find("retry-after"), nullptr);
    EXPECT_EQ(*head.Find("retry-after"), "120");
    // OPS-014: the words stay plain; the head is data beside them.
    EXPECT_EQ(reply.error().message, "the deadline passed");
  }
}

TEST_F(HttpClientLoopbackTest, BodyOverTheCapIsItsOwnError) {
  for (Protocol protocol : {Protocol::kHttp1, Protocol::kHttp2}) {
    auto server = Server(protocol);
    auto client = Client();
    HttpRequest request = Get(Url(*server, "/big"));
    request.max_body_bytes = 1000;
    Reply reply = SendOne(*client, request);
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kBodyTooLarge);
    // The declared length is over the cap: failed once the head is in, and with it.
    ASSERT_TRUE(reply.error().head.has_value());
    EXPECT_EQ(reply.error().head->status, 200u);
    ASSERT_NE(reply.error().head->Find("content-length"), nullptr);
    EXPECT_EQ(*reply.error().head->Find("content-length"), "65536");
    request.max_body_bytes = 64 << 10;  // exactly the body: fits
    Reply fits = SendOne(*client, request);
    ASSERT_TRUE(fits.ok()) << fits.error().message;
    EXPECT_EQ(fits->body.size(), 64u << 10);
  }
}

TEST_F(HttpClientLoopbackTest, RedirectsAreNotFollowedUnlessAsked) {
  for (Protocol protocol : {Protocol::kHttp1, Protocol::kHttp2}) {
    auto server = Server(protocol);
    auto client = Client();
    HttpRequest request = Get(Url(*server, "/redirect"));
    Reply returned = SendOne(*client, request);
    ASSERT_TRUE(returned.ok()) << returned.error().message;
    EXPECT_EQ(returned->status, 302u);
    request.redirects = RedirectPolicy::kRefuse;
    Reply refused = SendOne(*client, request);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().kind, HttpErrorKind::kRedirect);
    request.redirects = RedirectPolicy::kFollow;
    Reply followed = SendOne(*client, request);
    ASSERT_TRUE(followed.ok()) << followed.error().message;
    EXPECT_EQ(followed->body, "hello");
    request.max_redirects = 0;
    Reply too_many = SendOne(*client, request);
    ASSERT_FALSE(too_many.ok());
    EXPECT_EQ(too_many.error().kind, HttpErrorKind::kRedirect);
  }
}

TEST_F(HttpClientLoopbackTest, VetoedAddressIsNeverConnected) {
  auto server = Server(Protocol::kHttp1);
  std::vector<std::string> seen;
  auto client = Client({.resolve_hook = [&](std::string_view host, ResolvedAddresses addresses)
                            -> Expected<ResolvedAddresses, std::string> {
    seen.emplace_back(host);
    for (const auto& a : addresses) {
      if (a.address().is_loopback()) {
        return std::string("a loopback address is not allowed");
      }
    }
    return addresses;
  }});
  Reply reply = SendOne(*client, Get(Url(*server, "/hello")));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, HttpErrorKind::kVetoed);
  EXPECT_EQ(reply.error().message, "a loopback address is not allowed");
  EXPECT_EQ(seen, std::vector<std::string>{"127.0.0.1"});
  EXPECT_EQ(server->accepted(), 0);
}

TEST_F(HttpClientLoopbackTest, PinnedAddressIsUsedAndTheNameStillChecked) {
  auto server = Server(Protocol::kHttp1);
  const asio::ip::tcp::endpoint pinned(asio::ip::make_address("127.0.0.1"), server->port());
  auto client =
      Client({.resolve_hook = [&](std::string_view,
                                  ResolvedAddresses) -> Expected<ResolvedAddresses, std::string> {
        return ResolvedAddresses{pinned};
      }});
  // 127.0.0.2 is pinned to the server, whose certificate names 127.0.0.1 and localhost only.
  Reply wrong = SendOne(*client, Get("https://127.0.0.2:" + std::to_string(server->port()) + "/"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().kind, HttpErrorKind::kTls);
  Reply named = SendOne(*client, Get("https://localhost:1/hello"));  // port 1: pinned anyway
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->body, "hello");
}

TEST_F(HttpClientLoopbackTest, StaticHostIsNotLookedUpAndItsNameIsStillChecked) {
  auto server = Server(Protocol::kHttp2);
  const asio::ip::tcp::endpoint fixed(asio::ip::make_address("127.0.0.1"), server->port());
  std::vector<std::string> hooked;
  auto client = Client({.resolve_hook = [&](std::string_view host, ResolvedAddresses addresses)
                            -> Expected<ResolvedAddresses, std::string> {
                          hooked.emplace_back(host);
                          return addresses;
                        },
                        .static_hosts = {{"localhost", fixed}, {"no-such-host.invalid", fixed}}});
  // Port 443 in the URL: the table's address (and port) is used, the hook still sees it.
  Reply named = SendOne(*client, Get("https://localhost/hello"));
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->body, "hello");
  // A name that does not resolve is served from the table, and the certificate must name it.
  Reply unnamed = SendOne(*client, Get("https://no-such-host.invalid/hello"));
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.error().kind, HttpErrorKind::kTls);
  EXPECT_EQ(hooked, (std::vector<std::string>{"localhost", "no-such-host.invalid"}));
}

TEST_F(HttpClientLoopbackTest, UntrustedCertificateFailsTls) {
  auto server = Server(Protocol::kHttp2);
  auto client = HttpClient::Create(io_.get_executor(), {});  // system roots only
  ASSERT_TRUE(client.ok());
  Reply reply = SendOne(**client, Get(Url(*server, "/hello")));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, HttpErrorKind::kTls);
}

TEST_F(HttpClientLoopbackTest, ServerClosingMidResponseIsClosed) {
  for (Protocol protocol : {Protocol::kHttp1, Protocol::kHttp2}) {
    auto server = Server(protocol);
    auto client = Client();
    Reply reply = SendOne(*client, Get(Url(*server, "/cut")));
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kClosed) << reply.error().message;
    ASSERT_TRUE(reply.error().head.has_value());
    EXPECT_EQ(reply.error().head->status, 200u);
    // OPS-014: the words never carry the URL or address.
    EXPECT_EQ(reply.error().message.find("127.0.0.1"), std::string::npos);
    EXPECT_EQ(reply.error().message.find("/cut"), std::string::npos);
  }
}

TEST_F(HttpClientLoopbackTest, ClosedKeptConnectionIsReplaced) {
  auto server = Server(Protocol::kHttp1, /*tls=*/false);
  auto client = Client();
  ASSERT_TRUE(SendOne(*client, Get(Url(*server, "/hello", "http"))).ok());
  // The server ends the kept connection: a request through "Connection: close" makes it close.
  HttpRequest closing = Get(Url(*server, "/hello", "http"));
  closing.headers.push_back({"connection", "close"});
  ASSERT_TRUE(SendOne(*client, closing).ok());
  Reply next = SendOne(*client, Get(Url(*server, "/hello", "http")));
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_FALSE(next->reused_connection);
  EXPECT_EQ(server->accepted(), 2);
}

// A burst to a fresh HTTP/2 origin waits for the one connection attempt and shares it.
TEST_F(HttpClientLoopbackTest, BurstToFreshHttp2OriginOpensOneConnection) {
  auto server = Server(Protocol::kHttp2);
  auto client = Client();
  auto replies = SendAll(*client, std::vector<HttpRequest>(20, Get(Url(*server, "/hello"))));
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->body, "hello");
    EXPECT_EQ(reply->version, HttpVersion::kHttp2);
  }
  EXPECT_EQ(server->accepted(), 1);
  EXPECT_EQ(client->kept_connections(), 1u);
}

// The attempt comes up HTTP/1.1: the waiters go on to connections of their own, as before.
TEST_F(HttpClientLoopbackTest, BurstToFreshHttp1OriginIsAnsweredOnSeveralConnections) {
  auto server = Server(Protocol::kHttp1);
  auto client = Client();
  auto replies = SendAll(*client, std::vector<HttpRequest>(20, Get(Url(*server, "/hello"))));
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->body, "hello");
    EXPECT_EQ(reply->version, HttpVersion::kHttp1);
  }
  EXPECT_GT(server->accepted(), 1);
  EXPECT_LE(client->kept_connections(), 4u);  // max_idle_per_origin
  // Known to choose HTTP/1.1 now: a second burst waits for no attempt and reuses the kept ones.
  const int accepted = server->accepted();
  replies = SendAll(*client, std::vector<HttpRequest>(4, Get(Url(*server, "/hello"))));
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
  }
  EXPECT_LE(server->accepted(), accepted + 4);
}

TEST_F(HttpClientLoopbackTest, WaiterFailsAtItsOwnDeadline) {
  // Listening but never accepting: TCP connects (the backlog), the TLS handshake gets no answer.
  asio::ip::tcp::acceptor silent(io_, {asio::ip::make_address("127.0.0.1"), 0});
  const std::string url = "https://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  auto client = Client();
  const auto start = Clock::now();
  auto replies = SendAll(*client, {Get(url + "/a", std::chrono::milliseconds(1500)),
                                   Get(url + "/b", std::chrono::milliseconds(200))});
  for (const auto& reply : replies) {
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kTimeout);
  }
  // The second waited for the first one's attempt, and gave up at its own deadline.
  EXPECT_LT(finished_at_[1] - start, std::chrono::milliseconds(1000));
  EXPECT_GE(finished_at_[0] - start, std::chrono::milliseconds(1500));
}

TEST_F(HttpClientLoopbackTest, FailedAttemptFailsEveryWaiter) {
  auto server = Server(Protocol::kHttp2);
  // System roots only: the test CA is not trusted.
  auto untrusting = HttpClient::Create(io_.get_executor(), {});
  ASSERT_TRUE(untrusting.ok());
  auto replies = SendAll(**untrusting, std::vector<HttpRequest>(20, Get(Url(*server, "/hello"))));
  for (const auto& reply : replies) {
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kTls);
  }
  // Nothing listens on the port any more: refused.
  uint16_t port = 0;
  {
    asio::ip::tcp::acceptor gone(io_, {asio::ip::make_address("127.0.0.1"), 0});
    port = gone.local_endpoint().port();
  }
  auto client = Client();
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/hello";
  replies = SendAll(*client, std::vector<HttpRequest>(20, Get(url)));
  for (const auto& reply : replies) {
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.error().kind, HttpErrorKind::kConnect);
  }
}

// The server allows 2 streams per connection and two requests that never get an answer fill the
// kept one: the others must not fail for it, they get (and share) a second connection, kept when
// the origin has room for it (max_http2_per_origin), else used once by each.
TEST_F(HttpClientLoopbackTest, FullHttp2ConnectionOpensAnother) {
  for (size_t kept : {4u, 1u}) {
    testing::LoopbackServer server(io_, Protocol::kHttp2, testing::ServerTls(*pki_, "h2"), {},
                                   {.max_concurrent_streams = 2});
    auto client = Client({.max_http2_per_origin = kept});
    ASSERT_TRUE(SendOne(*client, Get(Url(server, "/hello"))).ok());  // its SETTINGS are in
    const auto start = Clock::now();
    std::vector<HttpRequest> requests(2, Get(Url(server, "/slow"), std::chrono::seconds(1)));
    for (int i = 0; i < 6; ++i) {
      requests.push_back(Get(Url(server, "/hello")));
    }
    auto replies = SendAll(*client, requests);
    for (size_t i = 0; i < replies.size(); ++i) {
      if (i < 2) {
        ASSERT_FALSE(replies[i].ok());
        EXPECT_EQ(replies[i].error().kind, HttpErrorKind::kTimeout);
        continue;
      }
      ASSERT_TRUE(replies[i].ok()) << replies[i].error().message;
      EXPECT_EQ(replies[i]->body, "hello");
      EXPECT_LT(finished_at_[i] - start, std::chrono::seconds(1));  // not behind the full one
    }
    EXPECT_EQ(server.accepted(), kept > 1 ? 2 : 1 + 6);
    EXPECT_EQ(client->kept_connections(), std::min<size_t>(kept, 2));
  }
}

// RFC 9113 8.7: a stream reset with REFUSED_STREAM was not processed; the client sends the
// request again itself, on the same connection while it is open.
TEST_F(HttpClientLoopbackTest, RefusedStreamsAreRetriedOnTheSameConnection) {
  testing::LoopbackServer server(io_, Protocol::kHttp2, testing::ServerTls(*pki_, "h2"), {},
                                 {.refuse_first = 2});
  auto client = Client();
  auto replies = SendAll(*client, std::vector<HttpRequest>(4, Get(Url(server, "/hello"))));
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->body, "hello");
  }
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(server.h2_requests(), 4 + 2);
  EXPECT_EQ(client->kept_connections(), 1u);
}

// APNs: a new connection allows one stream until a request succeeds; a burst sent before its
// SETTINGS arrive has the streams over the limit refused. Here the first three streams are refused
// and the limit is 1: the refused requests go again on the same connection, where nghttp2 holds
// each new stream until the one open ends (nghttp2_submit_request queues requests over the
// server's SETTINGS_MAX_CONCURRENT_STREAMS). The server would refuse (before its SETTINGS are
// acknowledged) or fail the connection (after) on a stream over its limit: the count shows none.
TEST_F(HttpClientLoopbackTest, RefusedBurstOnAOneStreamConnectionWaitsForTheLimit) {
  testing::LoopbackServer server(io_, Protocol::kHttp2, testing::ServerTls(*pki_, "h2"), {},
                                 {.max_concurrent_streams = 1, .refuse_first = 3});
  auto client = Client();
  auto replies = SendAll(*client, std::vector<HttpRequest>(10, Get(Url(server, "/hello"))));
  for (const auto& reply : replies) {
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->body, "hello");
  }
  EXPECT_EQ(server.accepted(), 1);
  EXPECT_EQ(server.h2_requests(), 10 + 3);
}

// A server that refuses everything does not loop the client: the request goes max_refused_retries
// more times, then fails with kClosed, well before its deadline.
TEST_F(HttpClientLoopbackTest, ServerRefusingEveryStreamFailsAfterBoundedRetries) {
  testing::LoopbackServer server(io_, Protocol::kHttp2, testing::ServerTls(*pki_, "h2"), {},
                                 {.refuse_first = testing::Http2Script::kRefuseAll});
  auto client = Client({.max_refused_retries = 3});
  const auto start = Clock::now();
  Reply reply = SendOne(*client, Get(Url(server, "/hello"), std::chrono::seconds(5)));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, HttpErrorKind::kClosed);
  EXPECT_EQ(reply.error().message, "the server did not process the request");
  EXPECT_FALSE(reply.error().head.has_value());
  EXPECT_EQ(server.h2_requests(), 1 + 3);
  EXPECT_EQ(server.accepted(), 1);  // the connection stayed open: every try went on it
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

// RFC 9113 6.8: the streams above a GOAWAY's last stream id were not processed; they go again on
// a new connection (the one that went away takes no new stream). With a limit of 1, the requests
// still waiting in nghttp2 behind it when the GOAWAY comes are refused by nghttp2 and go again
// too.
TEST_F(HttpClientLoopbackTest, StreamsAboveGoawayLastStreamIdAreRetried) {
  struct Case {
    testing::Http2Script script;
    size_t requests;
  };
  for (const Case& c :
       {Case{{.goaway_after = 3}, 3}, Case{{.max_concurrent_streams = 1, .goaway_after = 1}, 5}}) {
    testing::LoopbackServer server(io_, Protocol::kHttp2, testing::ServerTls(*pki_, "h2"), {},
                                   c.script);
    auto client = Client();
    auto replies =
        SendAll(*client, std::vector<HttpRequest>(c.requests, Get(Url(server, "/hello"))));
    for (const auto& reply : replies) {
      ASSERT_TRUE(reply.ok()) << reply.error().message;
      EXPECT_EQ(reply->body, "hello");
    }
    EXPECT_EQ(server.accepted(), 2);
    // The first connection saw goaway_after requests and answered one; the rest came again.
    EXPECT_EQ(server.h2_requests(), c.script.goaway_after + static_cast<int>(c.requests) - 1);
  }
}

}  // namespace
}  // namespace xb::net
