#include "fanout/history_cache.h"

namespace xb::fanout {

size_t HistoryChunk::footprint() const {
  return sizeof(HistoryChunk) + topic.capacity() + bytes.capacity() +
         rows.capacity() * sizeof(HistoryRow);
}

HistoryChunkPtr HistoryCache::Find(std::string_view topic, int64_t after, int64_t prunable_at_ns) {
  std::lock_guard lock(mu_);
  auto topic_it = by_topic_.find(topic);
  if (topic_it == by_topic_.end()) {
    return nullptr;
  }
  TopicChunks& chunks = topic_it->second;
  // Chunks of a topic never overlap: only the one starting last at or below `after` can hold it.
  auto it = chunks.upper_bound(after);
  if (it == chunks.begin()) {
    return nullptr;
  }
  --it;
  Node& node = it->second;
  if (after >= node.chunk->last) {
    return nullptr;
  }
  if (node.chunk->first_expiry_ns <= prunable_at_ns) {
    lru_.erase(node.lru);
    DropLocked(node.chunk.get());  // destroys `node`
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, node.lru);
  return node.chunk;
}

void HistoryCache::Insert(HistoryChunkPtr chunk) {
  if (chunk == nullptr || chunk->rows.empty() || chunk->rows.back().sequence_id != chunk->last ||
      chunk->after >= chunk->last || chunk->footprint() > capacity_ / 4) {
    return;
  }
  std::lock_guard lock(mu_);
  auto topic_it = by_topic_.find(std::string_view(chunk->topic));
  if (topic_it == by_topic_.end()) {
    topic_it = by_topic_.emplace(chunk->topic, TopicChunks{}).first;
  }
  TopicChunks& chunks = topic_it->second;
  auto next = chunks.upper_bound(chunk->after);
  if (next != chunks.end() && next->second.chunk->after < chunk->last) {
    return;  // overlaps the next chunk
  }
  if (next != chunks.begin() && std::prev(next)->second.chunk->last > chunk->after) {
    return;  // overlaps the previous chunk (or starts where one does)
  }
  lru_.push_front(chunk.get());
  bytes_ += chunk->footprint();
  const int64_t key = chunk->after;
  chunks.emplace_hint(next, key, Node{std::move(chunk), lru_.begin()});
  EvictLocked();
}

void HistoryCache::EvictLocked() {
  while (bytes_ > capacity_ && !lru_.empty()) {
    const HistoryChunk* oldest = lru_.back();
    lru_.pop_back();
    DropLocked(oldest);
  }
}

// Removes `chunk` (already out of lru_) from its topic's map; may destroy it.
void HistoryCache::DropLocked(const HistoryChunk* chunk) {
  bytes_ -= chunk->footprint();
  auto topic_it = by_topic_.find(std::string_view(chunk->topic));
  TopicChunks& chunks = topic_it->second;
  const int64_t key = chunk->after;
  chunks.erase(key);  // may destroy *chunk: nothing below reads it
  if (chunks.empty()) {
    by_topic_.erase(topic_it);
  }
}

size_t HistoryCache::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

size_t HistoryCache::chunks() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

}  // namespace xb::fanout
