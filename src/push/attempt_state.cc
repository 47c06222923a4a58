// The 8.5 table of spec/PUSH.md as a function of (answer class, attempts so far).
#include "push/attempt_state.h"

#include <algorithm>

namespace xb::push {

using telemetry::PushOutcome;

std::chrono::milliseconds ClampRetryDelay(std::chrono::milliseconds delay) {
  return std::clamp(delay, kMinRetryDelay, kMaxRetryDelay);
}

namespace {

NextStep Final(PushOutcome outcome) {
  return NextStep{.kind = NextStep::Kind::kFinal,
                  .outcome = outcome,
                  .delay = std::chrono::milliseconds(0),
                  .delete_recipient = outcome == PushOutcome::kDead};
}

NextStep RetryOrFail(const AttemptState& state, uint32_t max_attempts,
                     std::chrono::milliseconds delay) {
  if (state.attempts < max_attempts) {
    return NextStep{.kind = NextStep::Kind::kRetry,
                    .outcome = PushOutcome::kFailed,
                    .delay = ClampRetryDelay(delay),
                    .delete_recipient = false};
  }
  return Final(PushOutcome::kFailed);
}

}  // namespace

// implements: PUSH-259 (the outcome classes of 8.5, retries bounded by max_attempts)
NextStep AfterAttempt(AttemptState& state, const AttemptResult& result, uint32_t max_attempts) {
  ++state.attempts;
  if (result.answer != AnswerClass::kGone) {
    state.every_gone = false;
  }
  switch (result.answer) {
    case AnswerClass::kDelivered:
      return Final(PushOutcome::kDelivered);
    case AnswerClass::kRejected:
      return Final(PushOutcome::kRejected);
    case AnswerClass::kMismatch:
      return Final(PushOutcome::kMismatch);
    case AnswerClass::kTerminal:
      return Final(PushOutcome::kDead);
    case AnswerClass::kTransient:
      return RetryOrFail(state, max_attempts, result.delay);
    case AnswerClass::kGone:
      // Terminal only once max_attempts attempts all answered 404/410 (with max_attempts = 1, the
      // single one); a gone after a transient retries and ends failed.
      if (state.attempts >= max_attempts && state.every_gone) {
        return Final(PushOutcome::kDead);
      }
      return RetryOrFail(state, max_attempts, kGoneRetryDelay);
  }
  return Final(PushOutcome::kFailed);
}

NextStep NoSender() { return Final(PushOutcome::kFailed); }

NextStep SuppressedStep() { return Final(PushOutcome::kSuppressed); }

NextStep AbandonIfBlocked(const NextStep& step, RetryBlock block) {
  if (step.kind != NextStep::Kind::kRetry || block == RetryBlock::kNone) {
    return step;
  }
  return Final(PushOutcome::kFailed);
}

}  // namespace xb::push
