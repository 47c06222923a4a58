// The merged pass of an XIP-83 catch-up wave (docs/v3-api.md 4.3, G10): a wave's rows go out in
// ascending id across all of the wave's topics, while each read takes a bounded number of rows per
// topic. A read of several topics knows each topic only up to the last row it read, so a row can be
// sent only when no topic of the wave may still hold a smaller one: below the wave's frontier, the
// least of what is known of each topic. Rows read above it are read again by a later pass.
//
// To guarantee progress when the byte budget admits few rows (a read always admits its first
// range's first row, store/catch_up_cutoff.h), each topic remembers the id of its next row once a
// read has seen it (`peek`); a pass reads topics whose next row is unknown first, then those with
// the smallest known next row, so the smallest unsent row of the wave is soon both known and read.
//
// Pure functions; no I/O; per topic order relies on the store's per-topic commit order (a topic's
// rows become visible in id order, STORE.md 2.3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xb::fanout {

// One topic of a wave, as a pass sees it.
struct WaveTopicState {
  int64_t floor = 0;   // rows at or below were sent (or were below the add's cursor)
  int64_t needed = 0;  // the id the topic must reach (its catch-up target, raised by new rows)
  int64_t peek = 0;    // the id of its first row above `floor` once known, else 0
  bool caught_up() const { return floor >= needed; }
};

// The topics a pass reads (indices into `topics`): those not caught up, the ones whose next row is
// unknown first, then by ascending known next row; at most `max_topics`.
std::vector<size_t> ChoosePassTopics(const std::vector<WaveTopicState>& topics, size_t max_topics);

// What a pass read of one topic.
struct TopicRead {
  bool read = false;    // the topic was in the pass
  int64_t through = 0;  // the range's upper bound (its `needed` when the pass began)
  int64_t last = 0;     // the last row read, 0 when none
};

// The greatest id below which every row of the wave is known after the pass: rows of the pass at
// or below it can be sent in id order. `topics` holds each topic's state after the read (`needed`
// re-read: a row that arrived meanwhile keeps an unread topic from being passed). INT64_MAX when no
// topic limits it.
int64_t WaveFrontier(const std::vector<WaveTopicState>& topics,
                     const std::vector<TopicRead>& reads);

}  // namespace xb::fanout
