// The byte cutoff of a catch-up read (store.h Store::CatchUp, STORE.md 7), shared by both engines
// so they admit exactly the same rows. Header-only; no I/O.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace xb::store {

// Metadata and framing counted per row on top of its payload (ARC-077).
inline constexpr uint64_t kRowOverheadBytes = 256;

// `payload_bytes[r]` lists the payload sizes of range r's candidate rows, ascending by id. Returns,
// per range, how many of its leading rows are admitted: rows are taken in rounds (round k takes
// the k-th row of every range, in range order), each costing its payload + kRowOverheadBytes,
// until the next row would pass `byte_budget`; then nothing more is admitted, so every range keeps
// a prefix. The first row is always admitted, whatever its size.
inline std::vector<size_t> AdmitByRounds(const std::vector<std::vector<uint64_t>>& payload_bytes,
                                         uint64_t byte_budget) {
  std::vector<size_t> admitted(payload_bytes.size(), 0);
  size_t rounds = 0;
  for (const std::vector<uint64_t>& sizes : payload_bytes) {
    rounds = std::max(rounds, sizes.size());
  }
  uint64_t used = 0;
  bool any = false;
  for (size_t k = 0; k < rounds; ++k) {
    for (size_t r = 0; r < payload_bytes.size(); ++r) {
      if (k >= payload_bytes[r].size()) {
        continue;
      }
      const uint64_t payload = payload_bytes[r][k];
      const uint64_t cost =
          payload > UINT64_MAX - kRowOverheadBytes ? UINT64_MAX : payload + kRowOverheadBytes;
      if (any && (used > byte_budget || cost > byte_budget - used)) {
        return admitted;
      }
      used = cost > UINT64_MAX - used ? UINT64_MAX : used + cost;
      any = true;
      ++admitted[r];
    }
  }
  return admitted;
}

}  // namespace xb::store
