#include "telemetry/spliced_send.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>

namespace xb::telemetry {

namespace asio = boost::asio;

namespace {

// A span batch is about 750 KB: a pipe this large takes one in a single vmsplice. The kernel
// caps it at fs.pipe-max-size (1 MiB by default); a smaller pipe only means more rounds.
constexpr int kPipeBytes = 1 << 20;

// splice(2) into a socket whose peer has gone raises SIGPIPE, as write(2) does, and has no
// MSG_NOSIGNAL; the process does not ignore SIGPIPE (asio's own writes pass MSG_NOSIGNAL). So the
// call runs with SIGPIPE blocked on this thread, and a SIGPIPE it raised is taken before the mask
// is restored.
ssize_t SpliceWithoutSignal(int from, int to, size_t length, unsigned flags) {
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  const ssize_t moved = ::splice(from, nullptr, to, nullptr, length, flags);
  const int error = errno;
  if (moved < 0 && error == EPIPE) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_signal, nullptr, &zero) > 0) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = error;
  return moved;
}

}  // namespace

bool SplicePipe::Open() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    usable_ = false;
    return false;
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  (void)::fcntl(write_fd_, F_SETPIPE_SZ, kPipeBytes);  // best effort
  const int size = ::fcntl(write_fd_, F_GETPIPE_SZ);
  capacity_ = size > 0 ? static_cast<size_t>(size) : 4096;
  return true;
}

void SplicePipe::Close() {
  // Closing the pipe releases the pages still in it.
  if (read_fd_ >= 0) {
    ::close(read_fd_);
    ::close(write_fd_);
  }
  read_fd_ = -1;
  write_fd_ = -1;
}

asio::awaitable<void> SplicePipe::Send(asio::ip::tcp::socket& socket, std::string_view body,
                                       boost::system::error_code& ec) {
  size_t sent = 0;
  if (usable_ && (read_fd_ >= 0 || Open())) {
    socket.non_blocking(true, ec);  // splice must not block the exporter's io_context
    if (ec) {
      co_return;
    }
    const int fd = socket.native_handle();
    size_t in_pipe = 0;  // the pipe is empty between calls: it holds [sent, sent + in_pipe)
    while (sent < body.size()) {
      if (in_pipe == 0) {
        iovec iov{const_cast<char*>(body.data() + sent), std::min(body.size() - sent, capacity_)};
        const ssize_t n = ::vmsplice(write_fd_, &iov, 1, SPLICE_F_NONBLOCK);
        if (n <= 0) {
          // Refused (nothing is in the pipe): copy the rest, and every body from now on.
          usable_ = false;
          Close();
          break;
        }
        in_pipe = static_cast<size_t>(n);
      }
      const bool more = sent + in_pipe < body.size();
      const ssize_t m = SpliceWithoutSignal(
          read_fd_, fd, in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK | (more ? SPLICE_F_MORE : 0));
      if (m > 0) {
        in_pipe -= static_cast<size_t>(m);
        sent += static_cast<size_t>(m);
        continue;
      }
      if (m < 0 && errno == EINTR) {
        continue;
      }
      if (m < 0 && errno == EAGAIN) {  // the socket's send queue is full
        co_await socket.async_wait(asio::ip::tcp::socket::wait_write,
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (!ec) {
          continue;
        }
      } else {
        ec = boost::system::error_code(m < 0 ? errno : EPIPE, boost::system::system_category());
      }
      Close();  // what is left in the pipe must not reach the next connection
      co_return;
    }
  }
  if (sent < body.size()) {
    co_await asio::async_write(socket, asio::buffer(body.substr(sent)),
                               asio::redirect_error(asio::use_awaitable, ec));
  }
}

void Abort(asio::ip::tcp::socket& socket) {
  boost::system::error_code ignored;
  if (socket.is_open()) {
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
  }
}

}  // namespace xb::telemetry
