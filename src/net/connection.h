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
  // The drain has begun: ask the client to open no more requests here, without refusing any
  // (HTTP/2: GOAWAY with the greatest stream id, RFC 9113 6.8). A balancer then moves
  // new calls to another server before GracefulClose's final GOAWAY, instead of having one in
  // flight when the process exits. HTTP/1.1 has no such notice: nothing.
  virtual void NotifyShutdown() {}
};

// Touched only on its worker's executor.
class ConnectionSet {
 public:
  // A connection opened after the drain began gets no notice: a balancer's health check opens one
  // per check and must read the NOT_SERVING answer (HAProxy 2.6, given the notice first, waits
  // out its check timeout instead, which keeps a draining server in rotation longer).
  void Add(const std::shared_ptr<ServerConnection>& c) { open_.insert(c.get()); }
  void Remove(ServerConnection* c) { open_.erase(c); }
  void CloseAll() {
    auto open = open_;
    for (auto* c : open) {
      c->GracefulClose();
    }
  }
  void NotifyShutdown() {
    for (auto* c : open_) {
      c->NotifyShutdown();
    }
  }

 private:
  std::unordered_set<ServerConnection*> open_;
};

}  // namespace xb::net
