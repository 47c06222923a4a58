// What the listener needs of a connection of either HTTP version, and the per-worker set of open
// connections used to close them all at shutdown.
#pragma once

#include <memory>
#include <unordered_set>

namespace xb::net {

class ServerConnection {
 public:
  virtual ~ServerConnection() = default;
  // Finish writing what is queued, then close: HTTP/2 sends GOAWAY; HTTP/1.1 closes after the
  // response in progress (at once when idle). Call on the connection's executor.
  virtual void GracefulClose() = 0;
};

// Touched only on its worker's executor.
class ConnectionSet {
 public:
  void Add(const std::shared_ptr<ServerConnection>& c) { open_.insert(c.get()); }
  void Remove(ServerConnection* c) { open_.erase(c); }
  void CloseAll() {
    auto open = open_;
    for (auto* c : open) {
      c->GracefulClose();
    }
  }

 private:
  std::unordered_set<ServerConnection*> open_;
};

}  // namespace xb::net
