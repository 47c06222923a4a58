// XIP-83 waves of a stream session (docs/v3-api.md 4.3, G10; fanout/stream_session.h): each
// Mutate's adds are caught up as one wave, its rows sent in one merged ascending-id pass across
// the wave's topics (rows arriving meanwhile folded in), each row a response message stamped with
// the wave's mutate_id; the wave's topics turn live together once all of them reached their
// targets, and the API layer then writes TopicsLive and CatchupComplete (WaveDone) before any live
// row of them can be sent.
#include <algorithm>
#include <cstring>
#include <utility>

#include "fanout/session_endings.h"
#include "fanout/stream_session.h"
#include "fanout/wave_merge.h"
#include "fanout/wave_read.h"

namespace xb::fanout {

namespace asio = boost::asio;

bool StreamSession::WaveInFlight(uint64_t mutate_id) const {
  return std::any_of(waves_.begin(), waves_.end(),
                     [mutate_id](const PendingWave& wave) { return wave.mutate_id == mutate_id; });
}

namespace {

// The wave's topics as the merge sees them; a removed topic counts as caught up.
std::vector<WaveTopicState> StatesOf(Registry& registry, const std::vector<RegistrationPtr>& regs) {
  std::vector<WaveTopicState> states(regs.size());
  for (size_t i = 0; i < regs.size(); ++i) {
    const Registration& reg = *regs[i];
    if (reg.active) {
      states[i] = WaveTopicState{reg.floor, registry.Needed(reg), reg.peek};
    }
  }
  return states;
}

}  // namespace

// implements: docs/v3-api.md 4.3 (G10: one merged ascending-id pass per wave, folded rows
// included; a frame belongs to one wave)
asio::awaitable<std::optional<Ending>> StreamSession::WavePass() {
  const uint64_t lane = waves_.front().mutate_id;
  std::vector<RegistrationPtr> regs = waves_.front().regs;
  std::vector<WaveTopicState> states = StatesOf(*deps_.registry, regs);
  const std::vector<size_t> chosen = ChoosePassTopics(states, limits_.turn_topics);
  if (chosen.empty()) {
    co_return TryFinishWave();
  }
  std::vector<store::CatchUpRange> ranges;
  std::vector<RegistrationPtr> read_regs;
  for (size_t i : chosen) {
    ranges.push_back(store::CatchUpRange{regs[i]->topic, regs[i]->floor, states[i].needed});
    read_regs.push_back(regs[i]);
  }
  FetchedWave read = co_await FetchWave(ranges, read_regs);
  if (!read.wave) {
    co_return std::move(read.ending);
  }
  Wave& fetched = *read.wave;
  std::vector<TopicRead> reads(regs.size());
  for (size_t k = 0; k < chosen.size(); ++k) {
    const auto& rows = fetched.per_range[k];
    reads[chosen[k]] =
        TopicRead{true, ranges[k].through, rows.empty() ? 0 : rows.back().sequence_id};
  }
  // `needed` read again: a topic that gained a row during the read limits the pass (wave_merge.h).
  const int64_t frontier = WaveFrontier(StatesOf(*deps_.registry, regs), reads);
  std::optional<Ending> ending = QueueMergedRows(regs, chosen, fetched, frontier, lane);
  if (deps_.wave_buffers != nullptr) {
    deps_.wave_buffers->Give(std::move(fetched.bytes));  // every message has copied its row
  }
  if (ending) {
    co_return ending;
  }
  co_return TryFinishWave();
}

std::optional<Ending> StreamSession::QueueMergedRows(const std::vector<RegistrationPtr>& regs,
                                                     const std::vector<size_t>& chosen,
                                                     const Wave& fetched, int64_t frontier,
                                                     uint64_t lane) {
  struct Sendable {
    int64_t id;
    size_t range;
    size_t row;
  };
  std::vector<Sendable> sendable;
  for (size_t k = 0; k < chosen.size(); ++k) {
    const Registration& reg = *regs[chosen[k]];
    const auto& rows = fetched.per_range[k];
    for (size_t r = 0; r < rows.size() && rows[r].sequence_id <= frontier; ++r) {
      if (reg.active && rows[r].sequence_id > reg.floor) {
        sendable.push_back(Sendable{rows[r].sequence_id, k, r});
      }
    }
  }
  std::sort(sendable.begin(), sendable.end(),
            [](const Sendable& a, const Sendable& b) { return a.id < b.id; });
  for (const Sendable& s : sendable) {
    Registration& reg = *regs[chosen[s.range]];
    const WaveRow& row = fetched.per_range[s.range][s.row];
    if (row.size + RowFraming::kMaxHead + RowFraming::kMaxTail > limits_.frame_bytes) {
      return TooLarge();
    }
    QueueFramedRow(reg.topic, fetched.Encoded(row), lane, nullptr);
    reg.floor = row.sequence_id;
  }
  // What the pass learned of each topic's next row (wave_merge.h).
  for (size_t k = 0; k < chosen.size(); ++k) {
    Registration& reg = *regs[chosen[k]];
    const auto& rows = fetched.per_range[k];
    auto next = std::find_if(rows.begin(), rows.end(),
                             [&reg](const WaveRow& row) { return row.sequence_id > reg.floor; });
    reg.peek = next == rows.end() ? 0 : next->sequence_id;
  }
  return std::nullopt;
}

// implements: docs/v3-api.md 4.3 (TopicsLive and CatchupComplete after the wave's last row; its
// topics' live rows only after them; history-only topics are not kept)
std::optional<Ending> StreamSession::TryFinishWave() {
  PendingWave& wave = waves_.front();
  if (!deps_.registry->TrySwitchLiveAll(wave.regs)) {
    return std::nullopt;  // a topic gained a row meanwhile: the next pass folds it in
  }
  std::vector<std::string> topics;
  std::vector<std::string> history_only;
  for (const RegistrationPtr& reg : wave.regs) {
    if (!reg->active) {
      continue;
    }
    reg->in_queue = false;
    topics.push_back(reg->topic);
    if (reg->history_only) {
      history_only.push_back(reg->topic);
    }
  }
  const uint64_t mutate_id = wave.mutate_id;
  waves_.pop_front();
  Remove(history_only);
  return wave_done_ ? wave_done_(mutate_id, topics) : std::nullopt;
}

void StreamSession::QueueFramedRow(std::string_view topic, std::string_view bytes, uint64_t lane,
                                   const RowPtr* shared) {
  RowFraming framing;
  wire_.wrap(topic, bytes.size(), lane, &framing);
  const std::string_view head(framing.head, framing.head_size);
  const std::string_view tail(framing.tail, framing.tail_size);
  const size_t total = head.size() + bytes.size() + tail.size();
  if (shared != nullptr && call_->can_share() && bytes.size() >= kShareMinBytes) {
    if (!call_->BeginMessage(total).ok()) {
      return;
    }
    call_->AppendCopy(head);
    call_->AppendShared(bytes, *shared);
    if (!tail.empty()) {
      call_->AppendCopy(tail);
    }
    call_->EndMessage();
  } else if (!call_
                  ->WriteNowInPlace(total,
                                    [&](char* dst) {
                                      std::memcpy(dst, head.data(), head.size());
                                      std::memcpy(dst + head.size(), bytes.data(), bytes.size());
                                      std::memcpy(dst + head.size() + bytes.size(), tail.data(),
                                                  tail.size());
                                    })
                  .ok()) {
    return;
  }
  CountFrame(1, /*live=*/shared != nullptr);
}

}  // namespace xb::fanout
