// What happens to one delivery after each of its attempts (spec/PUSH.md 8.5): retry after a
// clamped delay or stop, and with which final outcome label. Pure; no clock, no store.
//
// A delivery starts with a fresh AttemptState; after each attempt the dispatcher calls
// AfterAttempt with the channel's answer and follows the returned step. The "gone" rule (HTTPS
// 404/410) needs the whole history: terminal only when every attempt of the delivery answered
// gone and max_attempts attempts were made.
#pragma once

#include <chrono>
#include <cstdint>

#include "push/channel.h"
#include "telemetry/vocabulary.h"

namespace xb::push {

// Fixed values of PUSH.md 12.
inline constexpr std::chrono::milliseconds kMinRetryDelay{1000};
inline constexpr std::chrono::milliseconds kMaxRetryDelay{300000};
inline constexpr std::chrono::milliseconds kGoneRetryDelay{1000};

// The retry delay clamped to [1 s, 300 s] (PUSH.md 8.5).
std::chrono::milliseconds ClampRetryDelay(std::chrono::milliseconds delay);

// The history of one delivery's attempts within this dispatcher run.
struct AttemptState {
  uint32_t attempts = 0;   // attempts made so far
  bool every_gone = true;  // every attempt so far answered gone (404/410)
};

struct NextStep {
  enum class Kind : uint8_t { kRetry, kFinal };
  Kind kind = Kind::kFinal;
  telemetry::PushOutcome outcome = telemetry::PushOutcome::kFailed;  // kFinal only
  std::chrono::milliseconds delay{0};                                // kRetry only: already clamped
  bool delete_recipient = false;  // kFinal with kDead: try the dead deletion (PUSH-234)
};

// Records one attempt answered `result` in `state` and says what comes next. `max_attempts` is
// push.max_attempts (1..10).
NextStep AfterAttempt(AttemptState& state, const AttemptResult& result, uint32_t max_attempts);

// The final step of a delivery that gets no request: its channel has no sender on this instance
// (failed), or sender suppression (suppressed).
NextStep NoSender();
NextStep SuppressedStep();

// A retry AfterAttempt asked for is abandoned (final failed, PUSH.md 8.5, our choice) when the
// same recipient configuration was just deleted as dead. (The other abandonment of 8.5, a full
// retained queue, cannot happen: push/delivery_queue.h keeps a retry's place.)
enum class RetryBlock : uint8_t { kNone, kConfigurationDead };
NextStep AbandonIfBlocked(const NextStep& step, RetryBlock block);

}  // namespace xb::push
