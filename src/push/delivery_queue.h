// The dispatcher's retained deliveries (spec/PUSH.md 8.3, 8.5): one ready queue per channel,
// retries waiting for their due time, and the attempts in flight, all bounded. Pure (the caller
// passes the time); used on the dispatcher's thread only.
//
// Bounds: at most `capacity` deliveries retained (ready + waiting retry + in flight; the loader
// asks room() before loading a page), and at most `max_in_flight` attempts per channel. Each
// channel has its own queues, so a saturated channel never holds back another's due attempts.
//
// An attempt in flight keeps its place in the count, so a retry always has room: PUSH.md 8.5's
// "a retry is abandoned when the retained queue is full" cannot happen here (the loader is the
// one that waits for room, never a retry).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "push/attempt_state.h"
#include "push/channel.h"
#include "push/watermark.h"
#include "store/push.h"

namespace xb::push {

// One (envelope, subscription) delivery as the dispatcher retains it.
struct Delivery {
  Watermark::WindowId window = 0;
  bool first_attempted = false;  // its first attempt finished (the watermark counted it)
  AttemptState state;
  Channel channel = Channel::kApns;
  store::PushRecipient recipient;  // the configuration every attempt uses (and DeleteDead)
  PushMessage message;
};

class DeliveryQueue {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  DeliveryQueue(size_t capacity, uint32_t max_in_flight);

  // Deliveries that may still be added (capacity minus retained).
  size_t room() const { return capacity_ - retained_; }
  // Adds a loaded delivery to its channel's ready queue. Precondition: room() > 0.
  void Push(Delivery delivery);

  // The next delivery of `channel` to attempt now: retries due by `now` join the ready queue
  // first. nullopt when nothing is ready or the channel already has max_in_flight attempts. The
  // returned delivery counts as in flight until Finished or Retry.
  std::optional<Delivery> NextReady(Channel channel, TimePoint now);
  // An in-flight attempt of `channel` ended with a final outcome.
  void Finished(Channel channel);
  // An in-flight attempt ended and asks for a retry at `due`; it waits in its channel's lane.
  void Retry(Delivery delivery, TimePoint due);

  // Removes every queued delivery (ready or waiting retry, not in flight) whose configuration
  // equals `recipient` (PUSH.md 8.5, after a dead deletion) and returns them.
  std::vector<Delivery> DiscardConfiguration(const store::PushRecipient& recipient);
  // Removes and returns every queued delivery (ownership loss, drain deadline).
  std::vector<Delivery> TakeAll();

  // The earliest due time of a waiting retry, if any.
  std::optional<TimePoint> NextDue() const;
  size_t in_flight(Channel channel) const { return Lane(channel).in_flight; }
  size_t in_flight() const;
  size_t queued() const { return retained_ - in_flight(); }
  bool empty() const { return retained_ == 0; }

 private:
  struct Waiting {
    TimePoint due;
    Delivery delivery;
  };
  struct ChannelLane {
    std::deque<Delivery> ready;
    std::vector<Waiting> waiting;  // a min-heap on `due`
    size_t in_flight = 0;
  };
  ChannelLane& Lane(Channel channel);
  const ChannelLane& Lane(Channel channel) const;

  const size_t capacity_;
  const uint32_t max_in_flight_;
  std::array<ChannelLane, 3> lanes_;  // by Channel number - 1
  size_t retained_ = 0;
};

}  // namespace xb::push
