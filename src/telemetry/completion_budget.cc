#include "telemetry/completion_budget.h"

#include <utility>

namespace xb::telemetry {

CompletionBudget::CompletionBudget(Logger& logger, Metrics& metrics, Options options)
    : logger_(logger),
      metrics_(metrics),
      identifier_(std::move(options.identifier)),
      budget_(options.budget) {}

bool CompletionBudget::Admit(Clock::time_point now) {
  if (!logger_.Enabled(LogLevel::kInfo)) {
    return true;  // no line would be written: nothing to suppress or count
  }
  if (budget_.Admit(now)) {
    return true;
  }
  metrics_.log().suppressed.Inc(SuppressedLine::kRequestCompleted);
  return false;
}

void CompletionBudget::Summarize() {
  const uint64_t suppressed = budget_.TakeSuppressed();
  if (suppressed == 0) {
    return;
  }
  // implements: OPS-018 for the requests past the budget, as a count (issue 28); OPS-013.
  logger_.Info("request completion lines suppressed",
               {Field::Identifier(identifier_), Field::Reason("cancelled_before_response"),
                Field::Count(suppressed)});
}

void CompletionBudget::Start(boost::asio::any_io_executor executor) {
  timer_ = std::make_unique<boost::asio::steady_timer>(std::move(executor));
  Arm();
}

void CompletionBudget::Stop() {
  stopped_ = true;  // a wait that already completed must not re-arm
  if (timer_) {
    timer_->cancel();
  }
}

void CompletionBudget::Arm() {
  timer_->expires_after(budget_.options().interval);
  timer_->async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) {
      return;
    }
    Summarize();
    Arm();
  });
}

}  // namespace xb::telemetry
