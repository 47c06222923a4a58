// The 8.5 table of spec/PUSH.md: answer class x attempts -> next step and final outcome label.
#include "push/attempt_state.h"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

namespace xb::push {
namespace {

using std::chrono::milliseconds;
using telemetry::PushOutcome;

AttemptResult Answer(AnswerClass answer, milliseconds delay = milliseconds(1000)) {
  return AttemptResult{.answer = answer, .delay = delay};
}

// Feeds `answers` in order and returns the last step.
NextStep Feed(const std::vector<AttemptResult>& answers, uint32_t max_attempts) {
  AttemptState state;
  NextStep step;
  for (const AttemptResult& answer : answers) {
    step = AfterAttempt(state, answer, max_attempts);
  }
  return step;
}

void ExpectFinal(const NextStep& step, PushOutcome outcome, bool delete_recipient = false) {
  EXPECT_EQ(step.kind, NextStep::Kind::kFinal);
  EXPECT_EQ(step.outcome, outcome);
  EXPECT_EQ(step.delete_recipient, delete_recipient);
}

void ExpectRetry(const NextStep& step, milliseconds delay) {
  EXPECT_EQ(step.kind, NextStep::Kind::kRetry);
  EXPECT_EQ(step.delay, delay);
  EXPECT_FALSE(step.delete_recipient);
}

// verifies: PUSH-259
TEST(AttemptStateTest, StoppingClassesEndAfterOneAttempt) {
  ExpectFinal(Feed({Answer(AnswerClass::kDelivered)}, 3), PushOutcome::kDelivered);
  ExpectFinal(Feed({Answer(AnswerClass::kRejected)}, 3), PushOutcome::kRejected);
  ExpectFinal(Feed({Answer(AnswerClass::kMismatch)}, 3), PushOutcome::kMismatch);
}

// verifies: PUSH-234
TEST(AttemptStateTest, TerminalIsDeadAndAsksForTheDeletion) {
  ExpectFinal(Feed({Answer(AnswerClass::kTerminal)}, 3), PushOutcome::kDead,
              /*delete_recipient=*/true);
  // After a transient retry too.
  ExpectFinal(Feed({Answer(AnswerClass::kTransient), Answer(AnswerClass::kTerminal)}, 3),
              PushOutcome::kDead, /*delete_recipient=*/true);
}

// verifies: PUSH-259
TEST(AttemptStateTest, TransientRetriesWhileAttemptsRemainThenFails) {
  AttemptState state;
  ExpectRetry(AfterAttempt(state, Answer(AnswerClass::kTransient, milliseconds(10000)), 3),
              milliseconds(10000));
  ExpectRetry(AfterAttempt(state, Answer(AnswerClass::kTransient, milliseconds(60000)), 3),
              milliseconds(60000));
  ExpectFinal(AfterAttempt(state, Answer(AnswerClass::kTransient), 3), PushOutcome::kFailed);
  EXPECT_EQ(state.attempts, 3u);
  // max_attempts = 1: the first transient is final.
  ExpectFinal(Feed({Answer(AnswerClass::kTransient)}, 1), PushOutcome::kFailed);
  // A success on a retry.
  ExpectFinal(Feed({Answer(AnswerClass::kTransient), Answer(AnswerClass::kDelivered)}, 3),
              PushOutcome::kDelivered);
}

// verifies: PUSH-259
TEST(AttemptStateTest, RetryDelayIsClampedToOneSecondThroughFiveMinutes) {
  ExpectRetry(Feed({Answer(AnswerClass::kTransient, milliseconds(0))}, 3), milliseconds(1000));
  ExpectRetry(Feed({Answer(AnswerClass::kTransient, milliseconds(999))}, 3), milliseconds(1000));
  ExpectRetry(Feed({Answer(AnswerClass::kTransient, milliseconds(300000))}, 3),
              milliseconds(300000));
  ExpectRetry(Feed({Answer(AnswerClass::kTransient, milliseconds(300001))}, 3),
              milliseconds(300000));
  EXPECT_EQ(ClampRetryDelay(milliseconds(-5)), milliseconds(1000));
  EXPECT_EQ(ClampRetryDelay(milliseconds(4200)), milliseconds(4200));
}

// verifies: PUSH-234
TEST(AttemptStateTest, GoneIsTerminalOnlyWhenEveryAttemptAnsweredGone) {
  // Every one of max_attempts attempts answered 404/410: dead.
  AttemptState state;
  ExpectRetry(AfterAttempt(state, Answer(AnswerClass::kGone, milliseconds(7000)), 3),
              milliseconds(1000));  // gone retries after 1 s, whatever the channel said
  ExpectRetry(AfterAttempt(state, Answer(AnswerClass::kGone), 3), milliseconds(1000));
  ExpectFinal(AfterAttempt(state, Answer(AnswerClass::kGone), 3), PushOutcome::kDead,
              /*delete_recipient=*/true);
  // max_attempts = 1: a single gone is terminal.
  ExpectFinal(Feed({Answer(AnswerClass::kGone)}, 1), PushOutcome::kDead,
              /*delete_recipient=*/true);
  // A transient among them: the last gone ends failed, nothing deleted.
  ExpectFinal(Feed({Answer(AnswerClass::kTransient), Answer(AnswerClass::kGone),
                    Answer(AnswerClass::kGone)},
                   3),
              PushOutcome::kFailed);
  ExpectFinal(Feed({Answer(AnswerClass::kGone), Answer(AnswerClass::kTransient),
                    Answer(AnswerClass::kGone)},
                   3),
              PushOutcome::kFailed);
  // A transient after gones: failed too.
  ExpectFinal(Feed({Answer(AnswerClass::kGone), Answer(AnswerClass::kGone),
                    Answer(AnswerClass::kTransient)},
                   3),
              PushOutcome::kFailed);
}

TEST(AttemptStateTest, NoRequestOutcomes) {
  ExpectFinal(NoSender(), PushOutcome::kFailed);
  ExpectFinal(SuppressedStep(), PushOutcome::kSuppressed);
}

// verifies: PUSH-259
TEST(AttemptStateTest, RetryOfAConfigurationJustDeletedAsDeadIsAbandonedAsFailed) {
  const NextStep retry = Feed({Answer(AnswerClass::kTransient)}, 3);
  ExpectRetry(AbandonIfBlocked(retry, RetryBlock::kNone), milliseconds(1000));
  ExpectFinal(AbandonIfBlocked(retry, RetryBlock::kConfigurationDead), PushOutcome::kFailed);
  // A final step is never changed.
  ExpectFinal(
      AbandonIfBlocked(Feed({Answer(AnswerClass::kDelivered)}, 3), RetryBlock::kConfigurationDead),
      PushOutcome::kDelivered);
}

}  // namespace
}  // namespace xb::push
