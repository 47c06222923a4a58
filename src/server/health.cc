#include "server/health.h"

#include <algorithm>

namespace xb::server {

HealthState::HealthState(std::vector<std::string> names, telemetry::Metrics& metrics)
    : names_([&] {
        names.push_back("");
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        return names;
      }()),
      metrics_(metrics) {}

void HealthState::Set(bool serving) {
  std::lock_guard lock(mu_);
  serving_.store(serving, std::memory_order_release);
  metrics_.SetReady(serving);  // same step as the health status (OPS section 5)
  for (auto& [id, watcher] : watchers_) {
    watcher(serving);
  }
}

bool HealthState::Known(std::string_view name) const {
  return std::binary_search(names_.begin(), names_.end(), name);
}

uint64_t HealthState::AddWatcher(Watcher watcher) {
  std::lock_guard lock(mu_);
  const uint64_t id = next_id_++;
  watchers_.emplace(id, std::move(watcher));
  return id;
}

void HealthState::RemoveWatcher(uint64_t id) {
  std::lock_guard lock(mu_);
  watchers_.erase(id);
}

}  // namespace xb::server
