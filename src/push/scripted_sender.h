// A scripted ChannelSender for the dispatcher's tests: records every attempt, answers as the
// test's script says, and can hold a channel's attempts in flight until released.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "push/channel.h"

namespace xb::push::testing {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What every scripted sender saw, and how it answers: `answer(channel, target, message, n)` where
// n counts this (recipient, sequence id)'s attempts from 1. `hold` keeps attempts of a channel
// in flight until released (or their deadline).
struct Script {
  std::mutex mu;
  std::vector<std::tuple<Channel, std::string, uint64_t>> calls;  // (channel, recipient, seq)
  std::function<AttemptResult(Channel, const Target&, const PushMessage&, int)> answer =
      [](Channel, const Target&, const PushMessage&, int) {
        return AttemptResult{.answer = AnswerClass::kDelivered};
      };
  std::set<Channel> held;
  std::atomic<int> in_flight{0};

  int Calls() {
    std::lock_guard lock(mu);
    return static_cast<int>(calls.size());
  }
  int CallsTo(const std::string& recipient, uint64_t seq) {
    std::lock_guard lock(mu);
    return CallsToLocked(recipient, seq);
  }
  int CallsToLocked(const std::string& recipient, uint64_t seq) {
    return static_cast<int>(std::count_if(calls.begin(), calls.end(), [&](const auto& c) {
      return std::get<1>(c) == recipient && std::get<2>(c) == seq;
    }));
  }
  void Release(Channel channel) {
    std::lock_guard lock(mu);
    held.erase(channel);
  }
};

class ScriptedSender : public ChannelSender {
 public:
  ScriptedSender(Channel channel, std::shared_ptr<Script> script)
      : channel_(channel), script_(std::move(script)) {}

  asio::awaitable<AttemptResult> Attempt(const Target& target, const PushMessage& message,
                                         Clock::time_point deadline) override {
    int n = 0;
    {
      std::lock_guard lock(script_->mu);
      script_->calls.emplace_back(channel_, target.recipient_id, message.sequence_id);
      n = script_->CallsToLocked(target.recipient_id, message.sequence_id);
    }
    ++script_->in_flight;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (Held() && Clock::now() < deadline) {
      timer.expires_after(milliseconds(2));
      co_await timer.async_wait(asio::use_awaitable);
    }
    --script_->in_flight;
    if (Clock::now() >= deadline) {
      co_return AttemptResult{.answer = AnswerClass::kTransient};
    }
    co_return script_->answer(channel_, target, message, n);
  }

 private:
  bool Held() {
    std::lock_guard lock(script_->mu);
    return script_->held.contains(channel_);
  }
  Channel channel_;
  std::shared_ptr<Script> script_;
};

}  // namespace xb::push::testing
