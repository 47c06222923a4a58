// WaveBuffers: the byte buffers catch-up waves encode into, kept for the next wave instead of
// freed. A wave's buffer is a few MiB (the catch-up budget); allocated fresh, every wave would map
// new pages, fault each one in zeroed and unmap them again, which costs more than the rows' own
// encoding. At most `max_kept` buffers are kept (one per fetch permit: no more waves run at once),
// each at most `max_bytes` of capacity, so what this holds is bounded and known.
//
// Thread-safety: Take and Give may be called from any thread.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace xb::fanout {

class WaveBuffers {
 public:
  WaveBuffers(size_t max_kept, size_t max_bytes) : max_kept_(max_kept), max_bytes_(max_bytes) {}

  // An empty buffer, with the capacity of one given back earlier when there is one.
  std::string Take() {
    std::lock_guard lock(mu_);
    if (kept_.empty()) {
      return std::string();
    }
    std::string buffer = std::move(kept_.back());
    kept_.pop_back();
    return buffer;
  }

  // Keeps `buffer`'s storage for a later Take, unless enough are kept or it is too large.
  void Give(std::string&& buffer) {
    if (buffer.capacity() > max_bytes_) {
      return;
    }
    buffer.clear();
    std::lock_guard lock(mu_);
    if (kept_.size() < max_kept_) {
      kept_.push_back(std::move(buffer));
    }
  }

  size_t kept() const {
    std::lock_guard lock(mu_);
    return kept_.size();
  }

 private:
  const size_t max_kept_;
  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::vector<std::string> kept_;  // guarded by mu_
};

}  // namespace xb::fanout
