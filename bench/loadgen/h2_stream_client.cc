#include "h2_stream_client.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace xb::bench {
namespace {

constexpr size_t kReadBuffer = 256 << 10;
constexpr int kMaxEvents = 64;
constexpr int kPollTimeoutMs = 1000;  // the eventfd wakes the loop; this only bounds the wait

// Set on a worker's own thread: requests made there need no eventfd write (see Wake).
thread_local const void* tls_worker = nullptr;

constexpr char kSubscribeStaticPath[] = "/xmtp.backend.v1.SubscriptionService/SubscribeStatic";
constexpr char kSubscribePath[] = "/xmtp.backend.v1.SubscriptionService/Subscribe";

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "loadgen: h2 transport: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

}  // namespace

H2Stream::H2Stream(StreamSpec spec, StreamObserver* observer, H2Host* host, uint64_t key)
    : Stream(std::move(spec), observer), host_(host), key_(key) {
  SetRequest(RegistrationRequest(spec_.kind, spec_.topics, spec_.cursor),
             spec_.kind == StreamKind::kStatic ? RequestEnd::kHalfClose : RequestEnd::kKeepOpen);
}

std::string_view H2Stream::path() const {
  return spec_.kind == StreamKind::kStatic ? kSubscribeStaticPath : kSubscribePath;
}

void H2Stream::Cancel() {
  if (MarkCancelled()) host_->RequestCancel(key_);
}

void H2Stream::End(const grpc::Status& status) {
  if (ended_) return;
  ended_ = true;
  // A call we cancelled ends CANCELLED whatever raced with the RST_STREAM, as with TryCancel.
  NotifyDone(cancelled() ? grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled") : status);
  host_->Finished(this);  // may destroy this
}

H2StreamWorker::H2StreamWorker(std::string target, StreamObserver* observer)
    : target_(std::move(target)),
      observer_(observer),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)),
      buf_(kReadBuffer) {
  if (!epoll_.valid()) Die("epoll_create1");
  if (!wake_.valid()) Die("eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the eventfd; connections carry their PolledConnection
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev) != 0) Die("epoll_ctl");

  resolve_error_ = ResolveTarget(target_, &addr_, &addr_len_);
  thread_ = std::thread([this] { Loop(); });
}

H2StreamWorker::~H2StreamWorker() { Shutdown(); }

void H2StreamWorker::Open(StreamSpec spec) {
  const uint64_t key = next_key_.fetch_add(1, std::memory_order_relaxed);
  H2Host* host = this;  // a private base: converted here, inside the class
  auto owned = std::make_unique<H2Stream>(std::move(spec), observer_, host, key);
  H2Stream* s = owned.get();
  live_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.emplace(key, std::move(owned));
    opens_.push_back(s);
  }
  Wake();
}

void H2StreamWorker::CancelAll() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, s] : streams_) {
      if (s->MarkCancelledByHost()) cancels_.push_back(key);
    }
  }
  Wake();
}

void H2StreamWorker::RequestCancel(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(key);
  }
  Wake();
}

void H2StreamWorker::Finished(H2Stream* s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.erase(s->key());
  }
  live_.fetch_sub(1, std::memory_order_acq_rel);
}

void H2StreamWorker::Wake() {
  if (tls_worker == this) {
    requested_here_ = true;  // served before the loop blocks again
    return;
  }
  if (wake_pending_.exchange(true, std::memory_order_acq_rel)) return;
  const uint64_t one = 1;
  // The counter cannot overflow (the loop reads it); a failure would leave the loop to its
  // poll timeout, which still serves the queue.
  (void)!::write(wake_.get(), &one, sizeof(one));
}

void H2StreamWorker::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  CancelAndDrain();
  stop_.store(true, std::memory_order_release);
  Wake();
  thread_.join();
}

H2Connection* H2StreamWorker::ConnectionFor(size_t channel) {
  auto it = conns_.find(channel);
  if (it != conns_.end() && it->second->conn().draining()) {
    // Its open streams finish there (FlushConnections drops it after them); new ones need a
    // new connection.
    retired_.push_back(std::move(it->second));
    conns_.erase(it);
    it = conns_.end();
  }
  if (it == conns_.end()) {
    auto p = std::make_unique<PolledConnection>(
        epoll_.get(), std::make_unique<H2Connection>(addr_, addr_len_, target_));
    p->Watch(p.get());
    it = conns_.emplace(channel, std::move(p)).first;
  }
  return &it->second->conn();
}

void H2StreamWorker::ServeRequests() {
  std::vector<H2Stream*> opens;
  std::vector<uint64_t> cancels;
  {
    std::lock_guard<std::mutex> lock(mu_);
    opens.swap(opens_);
    cancels.swap(cancels_);
  }
  for (H2Stream* s : opens) {
    if (s->cancelled()) {
      s->End(grpc::Status(grpc::StatusCode::CANCELLED, "Cancelled"));
    } else if (!resolve_error_.empty()) {
      s->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, resolve_error_));
    } else {
      ConnectionFor(s->spec().channel)->Start(s, s->path());  // may end it (UNAVAILABLE)
    }
  }
  for (uint64_t key : cancels) {
    H2Stream* s = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(key);
      if (it != streams_.end()) s = it->second.get();
    }
    // Streams are freed on this thread only, so `s` stays valid outside the lock; one that is
    // not found has ended already.
    if (s != nullptr && s->connection() != nullptr) s->connection()->Cancel(s);
  }
}

void H2StreamWorker::FlushConnections() {
  for (auto it = conns_.begin(); it != conns_.end();) {
    it = it->second->Flush() ? std::next(it) : conns_.erase(it);
  }
  for (size_t i = 0; i < retired_.size();) {
    if (retired_[i]->Flush()) {
      ++i;
    } else {
      retired_[i] = std::move(retired_.back());
      retired_.pop_back();
    }
  }
}

void H2StreamWorker::Loop() {
  tls_worker = this;
  epoll_event events[kMaxEvents];
  while (true) {
    requested_here_ = false;
    ServeRequests();
    FlushConnections();
    if (stop_.load(std::memory_order_acquire)) break;
    // A request queued on this thread since ServeRequests (an observer reopening a stream from
    // OnDone, which a flush can call) must not wait for the next event.
    const int n =
        ::epoll_wait(epoll_.get(), events, kMaxEvents, requested_here_ ? 0 : kPollTimeoutMs);
    if (n < 0 && errno != EINTR) Die("epoll_wait");
    for (int i = 0; i < n; ++i) {
      auto* p = static_cast<PolledConnection*>(events[i].data.ptr);
      if (p == nullptr) {
        uint64_t count = 0;
        (void)!::read(wake_.get(), &count, sizeof(count));
        // Cleared before the queue is served (next iteration), so a request queued after the
        // serving wakes us again.
        wake_pending_.store(false, std::memory_order_release);
        continue;
      }
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        p->conn().OnReadable(buf_.data(), buf_.size());
      }
      if (events[i].events & EPOLLOUT) p->conn().OnWritable();
    }
  }
  // Only reached with no live stream (Shutdown waits for that); closing ends nothing.
  conns_.clear();
  retired_.clear();
}

}  // namespace xb::bench
