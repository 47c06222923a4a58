// HistoryCache: catch-up rows recently read from the store, already encoded for the wire, shared
// by every stream that catches up on the same topic. Many devices reading one group's history then
// cost the database one read, and each of them a copy from memory.
//
// Why a cached chunk never goes stale: every snapshot shows each topic as a prefix of its id order,
// and nothing is ever inserted below an id already visible on that topic (STORE.md "Per-topic
// prefix visibility", API-201); rows never change and are never deleted (OPS-001). So a read that
// returned the rows of topic T after id `after` up to id `last` saw every row of T in
// (after, last], and that set is final, on either engine and on a replica. A chunk is exactly
// that: all rows of one topic in (after, last]. (This rests on the database keeping what it
// committed: a database restored from a backup or a failover that loses commits must come with a
// restart of the backend, as it must anyway for clients' cursors.) The one exception is the
// pruning pass (STORE.md 9.2, issue 35; any instance of a deployment may run it): it may delete a
// row once the store's clock is past its expiry. So a chunk keeps its rows' earliest expiry, and
// a lookup given a time at or after it drops the chunk: the stream reads the store, which shows
// exactly the surviving rows.
//
// Bounded by bytes: the least recently used chunks are dropped first. Chunks of one topic never
// overlap (an overlapping insert is ignored). Thread-safe; chunks are immutable and shared, so a
// reader keeps the ones it uses alive without holding the lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xb::fanout {

struct HistoryRow {
  int64_t sequence_id = 0;
  size_t offset = 0;  // into HistoryChunk::bytes
  size_t size = 0;
};

struct HistoryChunk {
  std::string topic;
  int64_t after = 0;                    // exclusive
  int64_t last = 0;                     // inclusive: the id of the last row
  std::string bytes;                    // the rows' encodings, back to back
  std::vector<HistoryRow> rows;         // ascending; all of the topic's rows in (after, last]
  int64_t first_expiry_ns = INT64_MAX;  // the rows' earliest expiry; INT64_MAX: none expires

  std::string_view Encoded(const HistoryRow& row) const {
    return std::string_view(bytes).substr(row.offset, row.size);
  }
  // What the chunk holds in memory, as the cache counts it.
  size_t footprint() const;
};
using HistoryChunkPtr = std::shared_ptr<const HistoryChunk>;

class HistoryCache {
 public:
  explicit HistoryCache(size_t capacity_bytes) : capacity_(capacity_bytes) {}
  HistoryCache(const HistoryCache&) = delete;
  HistoryCache& operator=(const HistoryCache&) = delete;

  // The chunk of `topic` that holds the rows right after `after` (chunk.after <= after <
  // chunk.last), nullptr when none. A hit counts as a use for the eviction order. A chunk with a
  // row expiring at or before `prunable_at_ns` (the pruning pass may have deleted it) is dropped
  // instead.
  HistoryChunkPtr Find(std::string_view topic, int64_t after, int64_t prunable_at_ns = INT64_MIN);

  // Adds `chunk` (at least one row, rows ascending, the last one's id == last). Ignored when it
  // overlaps a chunk of its topic or takes more than a quarter of the capacity.
  void Insert(HistoryChunkPtr chunk);

  size_t bytes() const;
  size_t chunks() const;

 private:
  struct TopicHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  struct Node {
    HistoryChunkPtr chunk;
    std::list<const HistoryChunk*>::iterator lru;  // position in lru_
  };
  using TopicChunks = std::map<int64_t, Node>;  // by chunk.after

  void EvictLocked();
  void DropLocked(const HistoryChunk* chunk);

  const size_t capacity_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, TopicChunks, TopicHash, std::equal_to<>> by_topic_;  // mu_
  std::list<const HistoryChunk*> lru_;  // guarded by mu_; most recently used first
  size_t bytes_ = 0;                    // guarded by mu_
};

}  // namespace xb::fanout
