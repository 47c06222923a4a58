// Sends an export body over plain TCP without copying it into the kernel: vmsplice(2) hands the
// body's pages to a pipe, splice(2) moves them into the socket's send queue. A copying write of a
// 750 KB span batch, cold in cache by the time it is sent, was the largest cost of the exporter
// thread (perf: copy_from_iter, 44% of its time, about 1% of a GetConfiguration's CPU). Spliced,
// the network card (or on loopback, the collector's own read) takes the bytes from our pages.
//
// The pages stay referenced by the kernel until the collector acknowledged them, so the caller
// must not write the body again before the exchange it belongs to is over: its HTTP response has
// been read (every byte was received), or the connection was closed with Abort (which drops
// whatever is still queued). TLS cannot splice; it writes through the TLS stream as before.
//
// Threading: one SplicePipe per connection owner (the exporter thread).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <string_view>

namespace xb::telemetry {

class SplicePipe {
 public:
  SplicePipe() = default;
  ~SplicePipe() { Close(); }
  SplicePipe(const SplicePipe&) = delete;
  SplicePipe& operator=(const SplicePipe&) = delete;

  // False once splicing failed in a way that will not pass (no pipe, or vmsplice refused, as a
  // seccomp filter may): the caller writes bodies by copying from then on.
  bool usable() const { return usable_; }

  // Sends `body` on `socket` (connected, with nothing of the body sent yet). Falls back to a
  // copying write for the rest of the body when splicing turns out to be unavailable. Errors go
  // to `ec`; the pipe is then emptied (closed, reopened on the next use).
  boost::asio::awaitable<void> Send(boost::asio::ip::tcp::socket& socket, std::string_view body,
                                    boost::system::error_code& ec);

 private:
  bool Open();
  void Close();

  int read_fd_ = -1;
  int write_fd_ = -1;
  size_t capacity_ = 0;  // the pipe's size: the most one vmsplice hands over
  bool usable_ = true;
};

// Closes `socket` so that the kernel drops what it has not sent yet (a RST instead of a FIN): a
// spliced body's pages are then no longer referenced, and the buffer may be reused.
void Abort(boost::asio::ip::tcp::socket& socket);

}  // namespace xb::telemetry
