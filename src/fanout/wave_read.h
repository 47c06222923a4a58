// Catch-up wave reads of a stream session (fanout/stream_session.h): what one wave reads, on a DB
// pool thread, from the history cache or the store, and the check that no row went missing.
// Internal to the fan-out: the session's round-robin waves and its XIP-83 waves share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fanout/delivery_row.h"
#include "fanout/history_cache.h"
#include "fanout/registry.h"
#include "fanout/wave_buffers.h"
#include "store/store.h"

namespace xb::fanout {

// A catch-up wave's rows: encoded on the DB pool thread into one buffer (one allocation per wave,
// not per row), or rows of history cache chunks the wave holds.
struct WaveRow {
  int64_t sequence_id = 0;
  size_t offset = 0;
  size_t size = 0;
  int32_t chunk = -1;     // index into Wave::chunks; -1: in Wave::bytes
  int64_t expiry_ns = 0;  // read from the store: the row's expiry (0: none); for the cache
};
struct Wave {
  std::string bytes;
  std::vector<HistoryChunkPtr> chunks;
  std::vector<std::vector<WaveRow>> per_range;
  std::string_view Encoded(const WaveRow& row) const {
    const std::string& from = row.chunk < 0 ? bytes : chunks[row.chunk]->bytes;
    return std::string_view(from).substr(row.offset, row.size);
  }
};

// What one wave reads, handed by value to the DB pool thread.
struct WaveRead {
  store::Store* store = nullptr;
  RowEncoder encoder;
  WaveBuffers* buffers = nullptr;   // nullptr: the wave allocates its own buffer
  HistoryCache* history = nullptr;  // nullptr: the wave reads the store
  std::vector<store::CatchUpRange> ranges;
  uint32_t per_range = 0;    // rows per range, at most
  uint64_t budget = 0;       // bytes the stream may queue now
  uint64_t read_budget = 0;  // bytes a read from the store takes (at least `budget`)
};

using WaveResult = std::variant<Wave, store::StoreError>;

// A wave read as the session sees it: the wave, or else the ending (none when the call ended
// meanwhile): a store error, or a row lost between the pages of the read.
struct FetchedWave {
  std::optional<Wave> wave;
  std::optional<Ending> ending;
};

// The wave job, on a DB pool thread: from the history cache where it holds the rows, else from
// the store (the rows read are then remembered in the cache).
WaveResult ReadWave(const WaveRead& read);

// STORE.md 5.5: a range (floor, needed] with no row although its head exists is a failure; but
// where the byte cutoff was possibly reached, an empty range is not evidence of a lost row.
bool LostARow(const Wave& fetched, const std::vector<RegistrationPtr>& wave, uint64_t budget,
              size_t max_envelope_bytes);

}  // namespace xb::fanout
