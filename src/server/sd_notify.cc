#include "server/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

namespace xb::server {

namespace {

// Closes the descriptor on every path out of Send.
class SocketFd {
 public:
  explicit SocketFd(int fd) : fd_(fd) {}
  ~SocketFd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  SocketFd(const SocketFd&) = delete;
  SocketFd& operator=(const SocketFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

SdNotifier SdNotifier::FromEnvironment() {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr) {
    return SdNotifier(std::nullopt);
  }
  return SdNotifier(std::string(socket));
}

SdNotifier::SdNotifier(std::optional<std::string> socket) {
  if (socket && !socket->empty()) {
    socket_ = std::move(socket);
  }
}

Status SdNotifier::Send(std::string_view state) const {
  if (!socket_) {
    return Status::Ok();
  }
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // An abstract-namespace name is the bytes after '@' behind a leading NUL, not NUL-terminated
  // (unix(7)); a path is NUL-terminated, so it needs one byte less than sun_path holds.
  const bool abstract = socket_->front() == '@';
  if (socket_->size() + (abstract ? 0 : 1) > sizeof(address.sun_path)) {
    return InvalidArgument("NOTIFY_SOCKET is too long for a unix socket address");
  }
  std::memcpy(address.sun_path, socket_->data(), socket_->size());
  if (abstract) {
    address.sun_path[0] = '\0';
  }
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_->size() +
                                             (abstract ? 0 : 1));
  SocketFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) {
    return Unavailable(std::string("systemd notification socket: ") + std::strerror(errno));
  }
  const ssize_t sent = ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                                reinterpret_cast<const sockaddr*>(&address), length);
  if (sent < 0) {
    return Unavailable(std::string("systemd notification not sent: ") + std::strerror(errno));
  }
  if (static_cast<size_t>(sent) != state.size()) {
    return Unavailable("systemd notification truncated");
  }
  return Status::Ok();
}

std::string StoppingState(uint64_t max_drain_duration_ms) {
  // OPS-008: the process exits within the drain deadline plus 5 s. Saturates: the key's range
  // reaches far past what microseconds in 64 bits hold.
  constexpr uint64_t kMaxMs = std::numeric_limits<uint64_t>::max() / 1000 - 5000;
  const uint64_t usec = (std::min(max_drain_duration_ms, kMaxMs) + 5000) * 1000;
  return "STOPPING=1\nEXTEND_TIMEOUT_USEC=" + std::to_string(usec) + "\nSTATUS=draining";
}

}  // namespace xb::server
