#include "rpc/dispatcher.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/request_id.h"
#include "rpc/timeout.h"

namespace xb::rpc {

namespace asio = boost::asio;

namespace {

// A response decided without a handler: CORS preflight and non-gRPC requests.
class FixedExchange final : public net::Exchange {
 public:
  FixedExchange(int status, std::vector<net::Header> headers) {
    head_.status = status;
    head_.headers = std::move(headers);
  }
  void OnRequestBody(std::string_view) override {}
  void OnRequestEnd() override {}
  void OnReset() override {}
  void OnResponseComplete() override {}
  bool streaming() const override { return false; }
  const net::ResponseHead* head() const override { return &head_; }
  size_t PullBody(char*, size_t) override { return 0; }
  size_t pending_body() const override { return 0; }
  bool body_complete() const override { return true; }
  const std::vector<net::Header>& trailers() const override { return trailers_; }

 private:
  net::ResponseHead head_;
  std::vector<net::Header> trailers_;
};

std::optional<Dialect> DialectOf(const std::string* content_type) {
  if (content_type == nullptr) {
    return std::nullopt;
  }
  std::string_view ct = *content_type;
  if (const auto semi = ct.find(';'); semi != std::string_view::npos) {
    ct = ct.substr(0, semi);
  }
  if (ct == "application/grpc" || ct == "application/grpc+proto") {
    return Dialect::kGrpc;
  }
  if (ct == "application/grpc-web" || ct == "application/grpc-web+proto") {
    return Dialect::kGrpcWeb;
  }
  if (ct == "application/grpc-web-text" || ct == "application/grpc-web-text+proto") {
    return Dialect::kGrpcWebText;
  }
  return std::nullopt;
}

// API.md 1.2: headers a browser must be allowed to send even when a preflight names none.
constexpr std::string_view kMinimumAllowHeaders =
    "content-type,authorization,x-app-version,x-libxmtp-version,traceparent,tracestate,"
    "x-grpc-web,x-user-agent,grpc-timeout";

}  // namespace

void Admission::UnaryDone() {
  if (live_unary_.fetch_sub(1, std::memory_order_acq_rel) == 1 && draining() && on_idle_) {
    on_idle_();
  }
}

Dispatcher::Dispatcher(const Router& router, Admission& admission, telemetry::Metrics& metrics,
                       telemetry::Logger& logger, DispatcherOptions options)
    : router_(router),
      admission_(admission),
      metrics_(metrics),
      logger_(logger),
      options_(std::move(options)),
      budget_(options_.response_budget) {}

bool Dispatcher::WantsHeader(std::string_view name) const {
  // The headers the pipeline reads; x-request-id is deliberately not among them (OPS-011).
  static constexpr std::string_view kKept[] = {
      "content-type",
      "grpc-encoding",
      "grpc-timeout",
      "authorization",
      "traceparent",
      "tracestate",
      "access-control-request-method",
      "access-control-request-headers",
      "origin",
  };
  for (std::string_view kept : kKept) {
    if (name == kept) {
      return true;
    }
  }
  return false;
}

std::shared_ptr<net::Exchange> Dispatcher::Preflight(const net::RequestHead& head) {
  // implements: API.md 1.2 CORS preflight, answered before auth and during a drain (OPS-007);
  // names traceparent/tracestate among the allowed headers (OPS-012).
  std::vector<net::Header> headers;
  headers.push_back({"access-control-allow-origin", "*"});
  const std::string* method = head.Find("access-control-request-method");
  headers.push_back(
      {"access-control-allow-methods", method != nullptr ? *method : "GET,POST,OPTIONS"});
  std::string allow(kMinimumAllowHeaders);
  if (const std::string* requested = head.Find("access-control-request-headers")) {
    allow += ",";
    allow += *requested;
  }
  headers.push_back({"access-control-allow-headers", std::move(allow)});
  headers.push_back({"access-control-expose-headers",
                     "grpc-status,grpc-message,grpc-status-details-bin,x-request-id"});
  headers.push_back({"access-control-max-age", "86400"});
  return std::make_shared<FixedExchange>(204, std::move(headers));
}

std::shared_ptr<net::Exchange> Dispatcher::NonGrpcAuthRejection(const net::RequestHead& head) {
  if (!options_.authenticate) {
    return nullptr;
  }
  std::string request_id = NewRequestId();
  auto admitted = options_.authenticate(head.path, head.Find("authorization"), request_id);
  if (admitted.ok()) {
    return nullptr;
  }
  const Status& status = admitted.status();
  const int http_status = status.code() == StatusCode::kPermissionDenied ? 403 : 401;
  return std::make_shared<FixedExchange>(
      http_status,
      std::vector<net::Header>{{"grpc-status", std::to_string(static_cast<int>(status.code()))},
                               {"grpc-message", status.message()},
                               {"x-request-id", std::move(request_id)}});
}

std::shared_ptr<net::Exchange> Dispatcher::Start(net::RequestHead head,
                                                 asio::any_io_executor executor, net::Waker wake) {
  // AUTH section 2: a preflight is an OPTIONS carrying Origin and Access-Control-Request-Method;
  // any other OPTIONS is an ordinary request and needs a credential.
  if (head.method == "OPTIONS" && head.Find("origin") != nullptr &&
      head.Find("access-control-request-method") != nullptr) {
    return Preflight(head);
  }
  const auto dialect = DialectOf(head.Find("content-type"));
  const bool grpc_request =
      head.method == "POST" && dialect &&
      (*dialect != Dialect::kGrpc || head.version == net::HttpVersion::kHttp2);
  if (!grpc_request) {
    return NonGrpcAnswer(head);
  }
  const telemetry::Route& route = telemetry::LookupRoute(head.path);
  const Handler* handler = router_.Find(head.path);
  std::shared_ptr<Call> call = MakeCall(head, route, handler, *dialect, executor, std::move(wake));
  if (Status admitted = Admit(*call, head, route, handler); !admitted.ok()) {
    call->Finish(std::move(admitted));
    return call;
  }
  RunHandler(call, route, *handler, executor);
  return call;
}

std::shared_ptr<net::Exchange> Dispatcher::NonGrpcAnswer(const net::RequestHead& head) {
  // implements: AUTH-001 for requests that are not gRPC (any method or content type): the auth
  // rejection comes first, as HTTP 401/403 carrying the gRPC status.
  if (auto rejected = NonGrpcAuthRejection(head)) {
    return rejected;
  }
  if (head.method != "POST") {
    return std::make_shared<FixedExchange>(405, std::vector<net::Header>{{"allow", "POST"}});
  }
  return std::make_shared<FixedExchange>(415, std::vector<net::Header>{});
}

std::shared_ptr<Call> Dispatcher::MakeCall(const net::RequestHead& head,
                                           const telemetry::Route& route, const Handler* handler,
                                           Dialect dialect, asio::any_io_executor executor,
                                           net::Waker wake) {
  CallOptions call_options{
      .route = &route,
      .served_path = handler != nullptr ? handler->path : std::string_view(),
      .dialect = dialect,
      .kind = handler != nullptr ? handler->kind : CallKind::kUnary,
      .request_id = NewRequestId(),
      .max_request_bytes = options_.max_request_bytes,
      .observer = this,
      .connection = head.connection,
      .peer = head.peer,
      .budget = &budget_,
  };
  auto call = std::make_shared<Call>(std::move(call_options), executor, std::move(wake));
  live_.push_back(*call);
  if (options_.tracer != nullptr) {
    // implements: OPS-012 (the caller's trace context is the request span's parent)
    // The span starts when the call was made: one clock read serves both.
    call->request_span = options_.tracer->StartRequest(route.rpc, head.Find("traceparent"),
                                                       head.Find("tracestate"), call->started_at());
  }
  if (!route.is_health) {
    metrics_.RequestStarted(route.rpc);  // before authentication (OPS section 5)
  }
  return call;
}

Status Dispatcher::Admit(Call& call, const net::RequestHead& head, const telemetry::Route& route,
                         const Handler* handler) {
  // implements: AUTH-001 — before the body is read and before drain admission (OPS-007), so a
  // draining instance still answers a bad credential with its auth status.
  if (options_.authenticate) {
    auto admitted = options_.authenticate(head.path, head.Find("authorization"), call.request_id());
    if (!admitted.ok()) {
      return admitted.status();
    }
    call.principal = std::move(admitted).value();
    if (!call.principal.api_key_name.empty()) {
      call.request_span.SetPrincipal(call.principal.api_key_name);
    }
  }

  // API.md 1.4: a declared compression encoding fails UNIMPLEMENTED.
  if (const std::string* encoding = head.Find("grpc-encoding");
      encoding != nullptr && *encoding != "identity") {
    return Unimplemented("compressed requests are not supported");
  }
  // implements: OPS-007 — after authentication (AUTH-001), every new request is
  // refused while draining. Health Check and List keep answering so a probe reads NOT_SERVING.
  const bool health_probe =
      route.rpc == telemetry::Rpc::kHealthCheck || route.rpc == telemetry::Rpc::kHealthList;
  if (admission_.draining() && !health_probe) {
    return Unavailable("the server is shutting down");
  }
  if (handler == nullptr) {
    return Unimplemented("unknown method");
  }
  if (const std::string* timeout = head.Find("grpc-timeout")) {
    const auto parsed = ParseGrpcTimeout(*timeout);
    if (!parsed) {
      return InvalidArgument("grpc-timeout is malformed");
    }
    call.SetDeadline(*parsed);
  }
  return Status::Ok();
}

void Dispatcher::RunHandler(std::shared_ptr<Call> call, const telemetry::Route& route,
                            const Handler& handler, asio::any_io_executor executor) {
  if (handler.kind == CallKind::kUnary) {
    call->admitted_unary = true;
    admission_.UnaryStarted();
  }
  if (const auto op = telemetry::HandlerOperation(route.rpc); op && options_.tracer != nullptr) {
    call->handler_span = options_.tracer->Start(*op, call->request_span.context());
  }
  asio::co_spawn(executor, handler.fn(call), [call](std::exception_ptr error) {
    if (error) {
      call->Finish(Internal("internal error"));
    }
    if (call->handler_span.active()) {
      if (error || (call->finished() && !call->final_status().ok())) {
        call->handler_span.SetError();
      }
      call->handler_span.End();
    }
  });
}

void Dispatcher::OnCallDone(Call& call) {
  call.unlink();
  const telemetry::Route& route = call.route();
  const Call::Clock::time_point done = Call::Clock::now();  // also the request span's end
  const double seconds = std::chrono::duration<double>(done - call.started_at()).count();
  const telemetry::SpanContext trace = call.request_span.context();
  if (call.request_span.active()) {
    call.request_span.Set(telemetry::IntAttribute::kGrpcStatusCode,
                          static_cast<int64_t>(call.outcome()));
    call.request_span.Set(telemetry::IntAttribute::kRequestBytes,
                          static_cast<int64_t>(call.request_bytes()));
    call.request_span.Set(telemetry::IntAttribute::kResponseBytes,
                          static_cast<int64_t>(call.response_bytes()));
    if (call.outcome() != StatusCode::kOk) {
      call.request_span.SetError();
    }
    call.request_span.EndAt(done);
  }
  if (!route.is_health) {
    metrics_.RequestBytes(route.rpc, call.request_bytes());
    metrics_.ResponseBytes(route.rpc, call.response_bytes());
    metrics_.RequestHandled(route.rpc, call.outcome(), seconds);
    if (LogsCompletion(call, done)) {
      const telemetry::TraceIdHex trace_hex = telemetry::ToHex(trace.trace_id);
      // implements: OPS-018 (one completion line per non-health request), OPS-013 (identifier)
      logger_.Completion(telemetry::CompletionEvent{
          .request_id = call.request_id(),
          .identifier = options_.identifier,
          .rpc = route.rpc,
          .served_path = call.served_path(),
          .duration_ms = seconds * 1000.0,
          .request_size_bytes = call.request_bytes(),
          .response_size_bytes = call.response_bytes(),
          .grpc_code = call.outcome(),
          .trace_id = trace.has_trace_id() ? trace_hex.view() : std::string_view(),
      });
    }
  }
  if (call.admitted_unary) {
    call.admitted_unary = false;
    admission_.UnaryDone();
  }
}

bool Dispatcher::LogsCompletion(const Call& call, Call::Clock::time_point done) {
  if (!options_.request_logger) {
    return false;
  }
  // A request its client reset before any response byte went out cost the client two frames;
  // only its line's cost is bounded (a budget per interval, then a summary). Every other request
  // keeps its own line.
  if (options_.reset_lines != nullptr && call.reset() && call.response_bytes() == 0) {
    return options_.reset_lines->Admit(done);
  }
  return true;
}

void Dispatcher::EndStreams() {
  std::vector<std::shared_ptr<Call>> calls;
  for (Call& c : live_) {
    if (c.kind() != CallKind::kUnary) {
      calls.push_back(c.shared_from_this());
    }
  }
  for (auto& c : calls) {
    c->Abort(Unavailable("the server is shutting down"));
  }
}

void Dispatcher::EndAll() {
  if (sweep_timer_) {
    sweep_stopped_ = true;  // a wake already queued still sees it
    sweep_timer_->cancel();
  }
  std::vector<std::shared_ptr<Call>> calls;
  for (Call& c : live_) {
    calls.push_back(c.shared_from_this());
  }
  for (auto& c : calls) {
    c->Finish(Unavailable("the server is shutting down"));
  }
}

// implements: issue 28 (2) — a response stuck in flow control (a reader that stopped taking
// bytes) is reset after the stalled-write timeout instead of holding its memory for as long as
// the client likes. A call is reset once it took nothing over a whole timeout: sweeps run four
// times per timeout, so the cut comes between one and one and a quarter timeouts after the stall.
void Dispatcher::StartStallSweep(asio::any_io_executor executor) {
  if (options_.stalled_write_timeout.count() <= 0) {
    return;
  }
  sweep_timer_ = std::make_shared<asio::steady_timer>(executor);
  asio::co_spawn(
      executor,
      [this, timer = sweep_timer_]() -> asio::awaitable<void> {
        const auto period = std::max<Call::Clock::duration>(options_.stalled_write_timeout / 4,
                                                            std::chrono::milliseconds(10));
        while (true) {
          timer->expires_after(period);
          boost::system::error_code ec;
          co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
          if (ec || sweep_stopped_) {
            co_return;  // EndAll
          }
          SweepStalled();
        }
      },
      asio::detached);
}

void Dispatcher::SweepStalled() {
  const auto now = Call::Clock::now();
  std::vector<std::shared_ptr<Call>> stalled;
  for (Call& c : live_) {
    if (!c.StalledSinceLastCheck()) {
      c.stalled_since = {};
      continue;
    }
    if (c.stalled_since == Call::Clock::time_point{}) {
      c.stalled_since = now;
    } else if (now - c.stalled_since >= options_.stalled_write_timeout) {
      stalled.push_back(c.shared_from_this());
    }
  }
  for (auto& c : stalled) {
    c->Cancel(StatusCode::kCancelled);
  }
}

}  // namespace xb::rpc
