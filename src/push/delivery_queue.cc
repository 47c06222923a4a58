#include "push/delivery_queue.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace xb::push {

namespace {

bool LaterDue(const auto& a, const auto& b) { return a.due > b.due; }

}  // namespace

DeliveryQueue::DeliveryQueue(size_t capacity, uint32_t max_in_flight)
    : capacity_(capacity), max_in_flight_(max_in_flight) {}

DeliveryQueue::ChannelLane& DeliveryQueue::Lane(Channel channel) {
  const auto index = static_cast<size_t>(channel) - 1;
  XB_CHECK(index < lanes_.size());
  return lanes_[index];
}

const DeliveryQueue::ChannelLane& DeliveryQueue::Lane(Channel channel) const {
  const auto index = static_cast<size_t>(channel) - 1;
  XB_CHECK(index < lanes_.size());
  return lanes_[index];
}

void DeliveryQueue::Push(Delivery delivery) {
  XB_CHECK(retained_ < capacity_);
  ++retained_;
  Lane(delivery.channel).ready.push_back(std::move(delivery));
}

std::optional<Delivery> DeliveryQueue::NextReady(Channel channel, TimePoint now) {
  ChannelLane& lane = Lane(channel);
  while (!lane.waiting.empty() && lane.waiting.front().due <= now) {
    std::pop_heap(lane.waiting.begin(), lane.waiting.end(), LaterDue<Waiting, Waiting>);
    lane.ready.push_back(std::move(lane.waiting.back().delivery));
    lane.waiting.pop_back();
  }
  if (lane.ready.empty() || lane.in_flight >= max_in_flight_) {
    return std::nullopt;
  }
  Delivery next = std::move(lane.ready.front());
  lane.ready.pop_front();
  ++lane.in_flight;
  return next;
}

void DeliveryQueue::Finished(Channel channel) {
  ChannelLane& lane = Lane(channel);
  XB_CHECK(lane.in_flight > 0 && retained_ > 0);
  --lane.in_flight;
  --retained_;
}

void DeliveryQueue::Retry(Delivery delivery, TimePoint due) {
  ChannelLane& lane = Lane(delivery.channel);
  XB_CHECK(lane.in_flight > 0);
  --lane.in_flight;  // still retained: it keeps the place it had in flight
  lane.waiting.push_back(Waiting{.due = due, .delivery = std::move(delivery)});
  std::push_heap(lane.waiting.begin(), lane.waiting.end(), LaterDue<Waiting, Waiting>);
}

std::vector<Delivery> DeliveryQueue::DiscardConfiguration(const store::PushRecipient& recipient) {
  std::vector<Delivery> out;
  for (ChannelLane& lane : lanes_) {
    std::deque<Delivery> kept;
    for (Delivery& d : lane.ready) {
      if (d.recipient == recipient) {
        out.push_back(std::move(d));
      } else {
        kept.push_back(std::move(d));
      }
    }
    lane.ready = std::move(kept);
    std::vector<Waiting> waiting;
    for (Waiting& w : lane.waiting) {
      if (w.delivery.recipient == recipient) {
        out.push_back(std::move(w.delivery));
      } else {
        waiting.push_back(std::move(w));
      }
    }
    lane.waiting = std::move(waiting);
    std::make_heap(lane.waiting.begin(), lane.waiting.end(), LaterDue<Waiting, Waiting>);
  }
  retained_ -= out.size();
  return out;
}

std::vector<Delivery> DeliveryQueue::TakeAll() {
  std::vector<Delivery> out;
  for (ChannelLane& lane : lanes_) {
    for (Delivery& d : lane.ready) {
      out.push_back(std::move(d));
    }
    lane.ready.clear();
    for (Waiting& w : lane.waiting) {
      out.push_back(std::move(w.delivery));
    }
    lane.waiting.clear();
  }
  retained_ -= out.size();
  return out;
}

std::optional<DeliveryQueue::TimePoint> DeliveryQueue::NextDue() const {
  std::optional<TimePoint> next;
  for (const ChannelLane& lane : lanes_) {
    if (!lane.waiting.empty() && (!next || lane.waiting.front().due < *next)) {
      next = lane.waiting.front().due;
    }
  }
  return next;
}

size_t DeliveryQueue::in_flight() const {
  size_t n = 0;
  for (const ChannelLane& lane : lanes_) {
    n += lane.in_flight;
  }
  return n;
}

}  // namespace xb::push
