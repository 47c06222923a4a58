// CompletionBudget: bounds what requests reset by their client before any response byte cost the
// log (issue 28, log amplification). Such a request costs its client two frames (HEADERS and
// RST_STREAM) and cost the log a whole completion line, so a client resetting streams as fast as
// it could wrote the log at ~11 MB/s. Now, per interval, the first lines_per_interval of them get
// their OPS-018 line as before; the rest are counted (xmtp_log_lines_suppressed_total{line=
// "request_completed"}) and the count is written once per interval as one summary line:
//   msg="request completion lines suppressed" identifier=... reason=cancelled_before_response
//   count=N
// which carries counts only (OPS-014). Every other request (a response byte went out, or it ended
// with a status of its own before any reset) always gets its line; this budget never sees it.
//
// One CompletionBudget per process, shared by every worker's dispatcher. Admit is lock-free
// (LineBudget). The periodic summary runs on the executor given to Start; Summarize may be called
// from any thread. Nothing suspends.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "telemetry/line_budget.h"
#include "telemetry/logger.h"
#include "telemetry/metrics.h"

namespace xb::telemetry {

class CompletionBudget {
 public:
  using Clock = LineBudget::Clock;
  struct Options {
    // Per process. The defaults and the reasoning behind them: docs/telemetry.md, Logs.
    LineBudget::Options budget{.lines_per_interval = 200, .interval = std::chrono::seconds(10)};
    std::string identifier;  // server.identifier, carried by the summary line (OPS-013)
  };

  // `logger` and `metrics` outlive this.
  CompletionBudget(Logger& logger, Metrics& metrics, Options options);
  CompletionBudget(const CompletionBudget&) = delete;
  CompletionBudget& operator=(const CompletionBudget&) = delete;

  // For a request reset by its client before any response byte, completed at `now`: true when its
  // completion line is to be written (or the logger would write no INFO line anyway); false when
  // the line is suppressed, and then it has been counted. Any thread.
  bool Admit(Clock::time_point now);

  // Writes the summary line when lines were suppressed since the previous one. Any thread.
  void Summarize();

  // Summarizes once per interval on `executor` until Stop. Stop must run on that executor (or
  // after it stopped running); the caller summarizes once more after the last request completed.
  // The executor's context must outlive this object (the timer is destroyed with it).
  void Start(boost::asio::any_io_executor executor);
  void Stop();

 private:
  void Arm();

  Logger& logger_;
  Metrics& metrics_;
  const std::string identifier_;
  LineBudget budget_;
  // Used on Start's executor only.
  std::unique_ptr<boost::asio::steady_timer> timer_;
  bool stopped_ = false;
};

}  // namespace xb::telemetry
