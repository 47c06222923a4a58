// The request pipeline (ARCHITECTURE.md section 3) from an HTTP exchange to a handler:
// CORS preflight ▸ dialect ▸ route labels ▸ request id ▸ metrics started/in-flight ▸ auth ▸
// compression check ▸ drain admission ▸ deadline ▸ handler ▸ completion (metrics, log, drain
// tracking).
//
// One Dispatcher per worker io_context; it is used only on that context. The state shared by all
// workers (drain flag, live unary count) lives in Admission, which is thread-safe.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "net/exchange.h"
#include "rpc/call.h"
#include "rpc/response_budget.h"
#include "rpc/router.h"
#include "telemetry/completion_budget.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"
#include "telemetry/tracer.h"

namespace xb::rpc {

// implements: OPS-007 admission, shared by all workers.
class Admission {
 public:
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  void BeginDrain() { draining_.store(true, std::memory_order_release); }
  int64_t live_unary() const { return live_unary_.load(std::memory_order_acquire); }
  void UnaryStarted() { live_unary_.fetch_add(1, std::memory_order_acq_rel); }
  // Calls `on_idle` (from the finishing worker's thread) when the count reaches 0 during a drain.
  void UnaryDone();
  void SetOnIdle(std::function<void()> on_idle) { on_idle_ = std::move(on_idle); }

 private:
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> live_unary_{0};
  std::function<void()> on_idle_;  // set before serving; const afterwards
};

// The authentication step (AUTH-001), provided by server/ from auth/ while auth.enabled. Called
// on the worker's thread; never blocks. `authorization` is the first authorization header or
// nullptr. Returns who the credential names (AUTH-028: the API key's name; the JWT's subject;
// both empty on a public path) or the rejection status. Empty: auth is off and the header is never
// read (AUTH-003).
using Authenticate = std::function<Result<Principal>(
    std::string_view path, const std::string* authorization, std::string_view request_id)>;

struct DispatcherOptions {
  uint64_t max_request_bytes = 26214400;
  std::string identifier;  // server.identifier, for the completion log (OPS-013)
  bool request_logger = true;
  // The completion lines of requests reset before any response byte are written within this
  // budget and summarised past it (issue 28); shared by every worker. nullptr: all written.
  telemetry::CompletionBudget* reset_lines = nullptr;
  // Starts the request and handler spans (OPS-012, OPS-019); nullptr: no spans.
  telemetry::Tracer* tracer = nullptr;
  Authenticate authenticate;
  // Response memory of this worker's calls (issue 28): its share of the process budget and the
  // per-connection bound.
  ResponseBudget::Limits response_budget;
  // A finished call whose reader takes no response bytes for this long is reset (issue 28:
  // server.stalled_write_timeout_ms); zero: never.
  std::chrono::milliseconds stalled_write_timeout{0};
};

class Dispatcher final : public net::ExchangeFactory, public CallObserver {
 public:
  Dispatcher(const Router& router, Admission& admission, telemetry::Metrics& metrics,
             telemetry::Logger& logger, DispatcherOptions options);

  bool WantsHeader(std::string_view name) const override;
  std::shared_ptr<net::Exchange> Start(net::RequestHead head, boost::asio::any_io_executor executor,
                                       net::Waker wake) override;
  void OnCallDone(Call& call) override;

  // On this worker's context: end every streaming call with UNAVAILABLE (OPS-007).
  void EndStreams();
  // On this worker's context: end every remaining call with UNAVAILABLE (OPS-008 deadline); the
  // stalled-write sweep stops.
  void EndAll();

  // On this worker's context: starts the stalled-write sweep (a timer on `executor`, stopped by
  // EndAll). No-op without a stalled-write timeout.
  void StartStallSweep(boost::asio::any_io_executor executor);

  ResponseBudget& response_budget() { return budget_; }

 private:
  std::shared_ptr<net::Exchange> Preflight(const net::RequestHead& head);
  // The auth answer to a request that is not gRPC, or nullptr when auth is off or admits it.
  std::shared_ptr<net::Exchange> NonGrpcAuthRejection(const net::RequestHead& head);
  // The answer to a request that is not gRPC: its auth rejection, else 405 or 415.
  std::shared_ptr<net::Exchange> NonGrpcAnswer(const net::RequestHead& head);
  // A new live call with its request span started and counted as started (OPS section 5).
  // `handler` is nullptr for an unknown method.
  std::shared_ptr<Call> MakeCall(const net::RequestHead& head, const telemetry::Route& route,
                                 const Handler* handler, Dialect dialect,
                                 boost::asio::any_io_executor executor, net::Waker wake);
  // The pipeline's checks before the handler, in order: auth (AUTH-001), compression (API.md
  // 1.4), drain (OPS-007), method, grpc-timeout (sets the call's deadline). The status the call
  // ends with when one refuses it; OK when it may run.
  Status Admit(Call& call, const net::RequestHead& head, const telemetry::Route& route,
               const Handler* handler);
  // Starts the handler coroutine of an admitted call, with its handler span (OPS-019).
  void RunHandler(std::shared_ptr<Call> call, const telemetry::Route& route, const Handler& handler,
                  boost::asio::any_io_executor executor);
  // Whether the completion line of `call`, done at `done`, is written (OPS-018, issue 28).
  bool LogsCompletion(const Call& call, Call::Clock::time_point done);

  const Router& router_;
  Admission& admission_;
  telemetry::Metrics& metrics_;
  telemetry::Logger& logger_;
  DispatcherOptions options_;
  // Resets the finished calls whose readers took nothing since the last sweep and for a whole
  // stalled-write timeout.
  void SweepStalled();

  // Calls whose response has not completed.
  boost::intrusive::list<Call, boost::intrusive::constant_time_size<false>> live_;
  ResponseBudget budget_;
  // Shared with the sweep coroutine, which may wake once more after EndAll.
  std::shared_ptr<boost::asio::steady_timer> sweep_timer_;
  bool sweep_stopped_ = false;
};

}  // namespace xb::rpc
