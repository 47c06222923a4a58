#include "fanout/wave_merge.h"

#include <algorithm>
#include <limits>

namespace xb::fanout {

std::vector<size_t> ChoosePassTopics(const std::vector<WaveTopicState>& topics, size_t max_topics) {
  std::vector<size_t> chosen;
  for (size_t i = 0; i < topics.size(); ++i) {
    if (!topics[i].caught_up()) {
      chosen.push_back(i);
    }
  }
  // A next row not known yet sorts first (key 0), then the smallest known next row.
  auto key = [&topics](size_t i) { return topics[i].peek > topics[i].floor ? topics[i].peek : 0; };
  std::stable_sort(chosen.begin(), chosen.end(),
                   [&key](size_t a, size_t b) { return key(a) < key(b); });
  if (chosen.size() > max_topics) {
    chosen.resize(max_topics);
  }
  return chosen;
}

namespace {

// How far the topic's rows are known: every row at or below the result was read by the pass (or
// does not exist).
int64_t KnownThrough(const WaveTopicState& topic, const TopicRead& read) {
  if (read.read && read.last > 0 && read.last >= read.through) {
    // Read to its end: no limit, unless a row arrived meanwhile (it is read by the next pass).
    return topic.needed > read.through ? read.through : std::numeric_limits<int64_t>::max();
  }
  if (read.read && read.last > 0) {
    return read.last;
  }
  if (topic.peek > topic.floor) {
    return topic.peek - 1;  // nothing lies between the floor and the known next row
  }
  return topic.floor;
}

}  // namespace

int64_t WaveFrontier(const std::vector<WaveTopicState>& topics,
                     const std::vector<TopicRead>& reads) {
  int64_t frontier = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < topics.size(); ++i) {
    const TopicRead& read = reads[i];
    // A caught-up topic is no limit: a row it gains later is folded into the wave after the rows
    // already sent (docs/v3-api.md 4.3).
    if (topics[i].caught_up()) {
      continue;
    }
    frontier = std::min(frontier, KnownThrough(topics[i], read));
  }
  return frontier;
}

}  // namespace xb::fanout
