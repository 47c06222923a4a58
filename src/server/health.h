// Readiness as one status for every registered health name (OPS-004): "" and each served
// xmtp.backend.v1 service. Set() also sets xmtp_backend_ready in the same step.
//
// Thread-safe: Set() runs on the lifecycle thread; Watch handlers on worker threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/metrics.h"

namespace xb::server {

class HealthState {
 public:
  using Watcher = std::function<void(bool serving)>;

  HealthState(std::vector<std::string> names, telemetry::Metrics& metrics);

  bool serving() const { return serving_.load(std::memory_order_acquire); }
  // implements: OPS-005 (SERVING only once initialised), OPS-007 (NOT_SERVING at shutdown).
  void Set(bool serving);

  bool Known(std::string_view name) const;
  const std::vector<std::string>& names() const { return names_; }

  // The watcher is called (on the thread calling Set) after every change; it must only post.
  uint64_t AddWatcher(Watcher watcher);
  void RemoveWatcher(uint64_t id);

 private:
  const std::vector<std::string> names_;  // sorted, includes ""
  telemetry::Metrics& metrics_;
  std::atomic<bool> serving_{false};
  std::mutex mu_;
  uint64_t next_id_ = 1;                  // guarded by mu_
  std::map<uint64_t, Watcher> watchers_;  // guarded by mu_
};

}  // namespace xb::server
