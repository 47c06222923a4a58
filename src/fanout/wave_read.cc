#include "fanout/wave_read.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "store/catch_up_cutoff.h"

namespace xb::fanout {

namespace {

// A wave reserves its byte budget (capped) up front, plus room for the rows' framing: reserved
// pages that are never written cost no memory.
constexpr uint64_t kMaxWaveReserve = 8u << 20;
constexpr uint64_t kWaveReserveSlack = 64u << 10;

// The cache serves no row the pruning pass may already have deleted (history_cache.h): one whose
// expiry the store's clock may have passed. The store's clock is another host's on PostgreSQL,
// so the margin covers a clock difference between the hosts.
constexpr std::chrono::seconds kStoreClockMargin{60};

int64_t PrunableAtNs() {
  const auto now = std::chrono::system_clock::now() + kStoreClockMargin;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
}

// Serves a wave from the history cache when every range has cached rows right after its floor,
// admitted by rounds under the byte budget as the store admits its rows (AdmitByRounds). Follows
// a range into the next cached chunk where one continues another. Where the cache ends before a
// range's target, no range gets more rounds than that one has (API-261: the store would have
// given it a row in each round). False, with `out` untouched, when some range has none: the wave
// then reads the store.
bool ServeFromCache(HistoryCache& cache, const std::vector<store::CatchUpRange>& ranges,
                    uint32_t per_range, uint64_t budget, Wave& out) {
  const int64_t prunable_at = PrunableAtNs();
  std::vector<HistoryChunkPtr> chunks;
  std::vector<std::vector<WaveRow>> candidates(ranges.size());
  std::vector<std::vector<uint64_t>> sizes(ranges.size());
  size_t rounds = SIZE_MAX;  // the fewest rows of a range whose cached rows end before its target
  for (size_t r = 0; r < ranges.size(); ++r) {
    const store::CatchUpRange& range = ranges[r];
    int64_t after = range.after;
    uint64_t cost = 0;  // a range alone never gets more than the budget: stop collecting there
    bool more = true;
    while (more && after < range.through) {
      HistoryChunkPtr chunk = cache.Find(range.topic, after, prunable_at);
      if (chunk == nullptr) {
        rounds = std::min(rounds, candidates[r].size());
        break;
      }
      const auto index = static_cast<int32_t>(chunks.size());
      auto it =
          std::upper_bound(chunk->rows.begin(), chunk->rows.end(), after,
                           [](int64_t id, const HistoryRow& row) { return id < row.sequence_id; });
      for (; it != chunk->rows.end(); ++it) {
        if (it->sequence_id > range.through || candidates[r].size() >= per_range || cost > budget) {
          more = false;
          break;
        }
        candidates[r].push_back(WaveRow{it->sequence_id, it->offset, it->size, index});
        sizes[r].push_back(it->size);
        cost += it->size + store::kRowOverheadBytes;
      }
      after = chunk->last;
      chunks.push_back(std::move(chunk));
    }
    if (candidates[r].empty()) {
      return false;
    }
  }
  for (size_t r = 0; r < ranges.size(); ++r) {
    if (sizes[r].size() > rounds) {
      sizes[r].resize(rounds);
    }
  }
  const std::vector<size_t> admitted = store::AdmitByRounds(sizes, budget);
  out.chunks = std::move(chunks);
  out.per_range.resize(ranges.size());
  for (size_t r = 0; r < ranges.size(); ++r) {
    candidates[r].resize(admitted[r]);
    out.per_range[r] = std::move(candidates[r]);
  }
  return true;
}

// Keeps each range's rows of a wave read from the store as a history cache chunk: they are all
// of the topic's rows after the range's floor up to the last of them (see history_cache.h).
void RememberWave(HistoryCache& cache, const std::vector<store::CatchUpRange>& ranges,
                  const Wave& wave) {
  for (size_t r = 0; r < ranges.size() && r < wave.per_range.size(); ++r) {
    const std::vector<WaveRow>& rows = wave.per_range[r];
    if (rows.empty()) {
      continue;
    }
    auto chunk = std::make_shared<HistoryChunk>();
    chunk->topic = ranges[r].topic;
    chunk->after = ranges[r].after;
    chunk->last = rows.back().sequence_id;
    size_t total = 0;
    for (const WaveRow& row : rows) {
      total += row.size;
    }
    chunk->bytes.reserve(total);
    chunk->rows.reserve(rows.size());
    for (const WaveRow& row : rows) {
      chunk->rows.push_back(HistoryRow{row.sequence_id, chunk->bytes.size(), row.size});
      chunk->bytes.append(wave.Encoded(row));
      if (row.expiry_ns != 0) {
        chunk->first_expiry_ns = std::min(chunk->first_expiry_ns, row.expiry_ns);
      }
    }
    cache.Insert(std::move(chunk));
  }
}

// Reads the wave's ranges from the store into `out`. Rows are encoded as the engine hands them
// over, straight from its buffers. The wave's size is not known ahead: room for the budget is
// reserved, and only what is written is touched.
std::optional<store::StoreError> ReadFromStore(const WaveRead& read, Wave& out) {
  if (read.buffers != nullptr) {
    out.bytes = read.buffers->Take();
  }
  out.bytes.reserve(std::min<uint64_t>(read.read_budget, kMaxWaveReserve) + kWaveReserveSlack);
  out.per_range.resize(read.ranges.size());
  bool encoded = true;
  std::optional<store::StoreError> error =
      read.store->VisitCatchUp(read.ranges, read.per_range, read.read_budget,
                               [&](size_t range, const store::StoredEnvelopeView& row) {
                                 WaveRow w;
                                 w.sequence_id = row.sequence_id;
                                 w.expiry_ns = row.expiry_ns;
                                 w.offset = out.bytes.size();
                                 if (!read.encoder(row, &out.bytes)) {
                                   encoded = false;
                                   return false;
                                 }
                                 w.size = out.bytes.size() - w.offset;
                                 out.per_range[range].push_back(w);
                                 return true;
                               });
  if (error) {
    return error;
  }
  if (!encoded) {
    store::StoreError invariant;
    invariant.kind = store::ErrorKind::kInvariant;
    invariant.message = "a stored envelope does not decode";
    return invariant;
  }
  return std::nullopt;
}

}  // namespace

WaveResult ReadWave(const WaveRead& read) {
  Wave out;
  if (read.history != nullptr &&
      ServeFromCache(*read.history, read.ranges, read.per_range, read.budget, out)) {
    return out;
  }
  if (std::optional<store::StoreError> error = ReadFromStore(read, out)) {
    return *std::move(error);
  }
  if (read.history != nullptr) {
    RememberWave(*read.history, read.ranges, out);
    // The stream takes its budget's worth from the cache now and the rest in its next waves.
    Wave served;
    if (read.read_budget > read.budget &&
        ServeFromCache(*read.history, read.ranges, read.per_range, read.budget, served)) {
      if (read.buffers != nullptr) {
        read.buffers->Give(std::move(out.bytes));
      }
      return served;
    }
  }
  return out;
}

bool LostARow(const Wave& fetched, const std::vector<RegistrationPtr>& wave, uint64_t budget,
              size_t max_envelope_bytes) {
  uint64_t fetched_bytes = 0;
  for (const auto& rows : fetched.per_range) {
    for (const auto& row : rows) {
      fetched_bytes += row.size + 256;
    }
  }
  const bool maybe_cut = fetched_bytes + max_envelope_bytes + 512 > budget;
  for (size_t i = 0; i < wave.size(); ++i) {
    if (fetched.per_range[i].empty() && wave[i]->active && !maybe_cut) {
      return true;
    }
  }
  return false;
}

}  // namespace xb::fanout
