// The request pipeline of Dispatcher::Start: which answer a request gets before its handler, and
// in which order the checks run (AUTH-001 before OPS-007 drain admission).
#include "rpc/dispatcher.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

namespace xb::rpc {
namespace {

namespace asio = boost::asio;

constexpr char kKnown[] = "/grpc.health.v1.Health/Check";
constexpr char kUnknown[] = "/xmtp.backend.v1.NoSuchService/Nothing";
// Served, but not a row of the OPS route table (DECISIONS.md).
constexpr char kGet[] = "/xmtp.backend.v1.QueryService/Get";

struct Pipeline {
  explicit Pipeline(Authenticate authenticate = nullptr) {
    router.Add(kKnown, CallKind::kUnary,
               [this](std::shared_ptr<Call> call) { return Answer(this, std::move(call)); });
    DispatcherOptions options;
    options.authenticate = std::move(authenticate);
    dispatcher = std::make_unique<Dispatcher>(router, admission, metrics, logger, options);
  }

  static asio::awaitable<void> Answer(Pipeline* self, std::shared_ptr<Call> call) {
    ++self->handled;
    call->Finish(Status::Ok());
    co_return;
  }

  std::shared_ptr<net::Exchange> Start(std::string method, std::string path,
                                       std::vector<net::Header> headers,
                                       net::HttpVersion version = net::HttpVersion::kHttp2) {
    net::RequestHead head;
    head.version = version;
    head.method = std::move(method);
    head.path = std::move(path);
    head.headers = std::move(headers);
    return dispatcher->Start(std::move(head), io.get_executor(), [] {});
  }

  // A gRPC POST to `path` with `extra` headers.
  std::shared_ptr<Call> Grpc(std::string path, std::vector<net::Header> extra = {}) {
    extra.push_back({"content-type", "application/grpc"});
    auto call = std::dynamic_pointer_cast<Call>(Start("POST", std::move(path), std::move(extra)));
    EXPECT_NE(call, nullptr);
    return call;
  }

  asio::io_context io;
  Router router;
  Admission admission;
  telemetry::Metrics metrics{"test"};
  std::vector<std::string> lines;  // the completion lines (OPS-018)
  telemetry::Logger logger{telemetry::LoggerOptions{
      .sink = [this](std::string_view line) { lines.emplace_back(line); }, .clock = {}}};
  std::unique_ptr<Dispatcher> dispatcher;
  int handled = 0;
};

Result<Principal> Refuse(std::string_view, const std::string*, std::string_view) {
  return Status(StatusCode::kPermissionDenied, "no");
}

TEST(DispatcherStart, PreflightIsAnsweredWithoutACall) {
  Pipeline p;
  auto exchange = p.Start("OPTIONS", kKnown,
                          {{"origin", "https://app.example"},
                           {"access-control-request-method", "POST"},
                           {"access-control-request-headers", "x-custom"}});
  ASSERT_NE(exchange->head(), nullptr);
  EXPECT_EQ(exchange->head()->status, 204);
  EXPECT_EQ(std::dynamic_pointer_cast<Call>(exchange), nullptr);
}

TEST(DispatcherStart, RequestsThatAreNotGrpcGet405Or415) {
  Pipeline p;
  auto get = p.Start("GET", kKnown, {{"content-type", "application/grpc"}});
  ASSERT_NE(get->head(), nullptr);
  EXPECT_EQ(get->head()->status, 405);
  auto text = p.Start("POST", kKnown, {{"content-type", "text/plain"}});
  ASSERT_NE(text->head(), nullptr);
  EXPECT_EQ(text->head()->status, 415);
  // Native gRPC needs HTTP/2.
  auto http1 =
      p.Start("POST", kKnown, {{"content-type", "application/grpc"}}, net::HttpVersion::kHttp1);
  ASSERT_NE(http1->head(), nullptr);
  EXPECT_EQ(http1->head()->status, 415);
}

// verifies: AUTH-001 (a request that is not gRPC gets the auth rejection first, as HTTP 403)
TEST(DispatcherStart, NonGrpcRequestGetsTheAuthRejectionFirst) {
  Pipeline p(Refuse);
  auto get = p.Start("GET", kKnown, {});
  ASSERT_NE(get->head(), nullptr);
  EXPECT_EQ(get->head()->status, 403);
}

// verifies: AUTH-001, OPS-007 (a draining instance still answers a bad credential with it)
TEST(DispatcherStart, AuthenticationComesBeforeDrainAdmission) {
  Pipeline p(Refuse);
  p.admission.BeginDrain();
  auto call = p.Grpc(kKnown);
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE(call->finished());
  EXPECT_EQ(call->final_status().code(), StatusCode::kPermissionDenied);
}

TEST(DispatcherStart, CompressedRequestIsUnimplemented) {
  Pipeline p;
  auto call = p.Grpc(kKnown, {{"grpc-encoding", "gzip"}});
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->final_status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(call->final_status().message(), "compressed requests are not supported");
  auto identity = p.Grpc(kKnown, {{"grpc-encoding", "identity"}});
  p.io.poll();
  EXPECT_TRUE(identity->final_status().ok());
}

// verifies: OPS-007 (new requests refused while draining, health probes still answered)
TEST(DispatcherStart, DrainRefusesAllButHealthProbes) {
  Pipeline p;
  p.router.Add("/xmtp.backend.v1.QueryService/Query", CallKind::kUnary,
               [&p](std::shared_ptr<Call> call) { return Pipeline::Answer(&p, std::move(call)); });
  p.admission.BeginDrain();
  auto query = p.Grpc("/xmtp.backend.v1.QueryService/Query");
  ASSERT_NE(query, nullptr);
  EXPECT_EQ(query->final_status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(query->final_status().message(), "the server is shutting down");
  auto health = p.Grpc(kKnown);
  p.io.poll();
  EXPECT_TRUE(health->final_status().ok());
  EXPECT_EQ(p.handled, 1);
}

TEST(DispatcherStart, UnknownMethodIsUnimplemented) {
  Pipeline p;
  auto call = p.Grpc(kUnknown);
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->final_status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(call->final_status().message(), "unknown method");
}

TEST(DispatcherStart, MalformedTimeoutIsInvalidArgument) {
  Pipeline p;
  auto call = p.Grpc(kKnown, {{"grpc-timeout", "soon"}});
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->final_status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(call->final_status().message(), "grpc-timeout is malformed");
  p.io.poll();
  EXPECT_EQ(p.handled, 0);
}

TEST(DispatcherStart, AdmittedUnaryCallRunsItsHandlerAndCountsAsLive) {
  Pipeline p;
  auto call = p.Grpc(kKnown, {{"grpc-timeout", "5S"}});
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE(call->admitted_unary);
  EXPECT_EQ(p.admission.live_unary(), 1);
  p.io.poll();
  EXPECT_EQ(p.handled, 1);
  EXPECT_TRUE(call->final_status().ok());
  call->OnResponseComplete();
  EXPECT_EQ(p.admission.live_unary(), 0);
}

// verifies: OPS-018 (method is the request path), OPS-014 (a path no handler serves is logged as
// "unknown", never as the bytes sent)
TEST(DispatcherCompletion, LogNamesTheServedPathOfGetAndUnknownForAnUnservedPath) {
  Pipeline p;
  p.router.Add(kGet, CallKind::kUnary,
               [&p](std::shared_ptr<Call> call) { return Pipeline::Answer(&p, std::move(call)); });
  auto get = p.Grpc(kGet);
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get->route().rpc, telemetry::Rpc::kUnknown);  // metric labels and span stay unknown
  // The router's copy of the path, not the request's bytes.
  EXPECT_EQ(get->served_path().data(), p.router.Find(kGet)->path.data());
  p.io.poll();
  EXPECT_TRUE(get->final_status().ok());
  get->OnResponseComplete();
  auto unknown = p.Grpc(kUnknown);
  ASSERT_NE(unknown, nullptr);
  EXPECT_TRUE(unknown->served_path().empty());
  unknown->OnResponseComplete();

  ASSERT_EQ(p.lines.size(), 2u);
  EXPECT_NE(p.lines[0].find(" method=/xmtp.backend.v1.QueryService/Get "), std::string::npos)
      << p.lines[0];
  EXPECT_NE(p.lines[1].find(" method=unknown "), std::string::npos) << p.lines[1];
  EXPECT_NE(p.lines[1].find(" grpc_code=Unimplemented"), std::string::npos) << p.lines[1];
  EXPECT_EQ(p.lines[1].find("NoSuchService"), std::string::npos) << p.lines[1];
}

}  // namespace
}  // namespace xb::rpc
