#include "net/tcp_stream.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <limits>

namespace xb::net {

namespace asio = boost::asio;

TcpStream::TcpStream(asio::ip::tcp::socket socket) : socket_(std::move(socket)) {
  boost::system::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  // Synchronous writes (TryWrite) return at once when the socket is full; the asynchronous
  // operations are unaffected.
  socket_.non_blocking(true, ignored);
}

size_t TcpStream::TryWrite(asio::const_buffer buffer, boost::system::error_code& ec) {
  const size_t n = socket_.write_some(buffer, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    ec.clear();
  }
  return n;
}

asio::awaitable<size_t> TcpStream::ReadSome(asio::mutable_buffer buffer,
                                            boost::system::error_code& ec) {
  co_return co_await socket_.async_read_some(buffer, asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> TcpStream::WriteAll(asio::const_buffer buffer,
                                          boost::system::error_code& ec) {
  // Asio's own completion conditions cap each send at 64 KiB, and every further piece waits
  // behind the executor's queue: with many connections flushing at once, a connection's second
  // half left only after every other connection's first. Offer the whole rest per send.
  const auto whole_rest = [](const boost::system::error_code& error, size_t) -> size_t {
    return error ? 0 : std::numeric_limits<size_t>::max();
  };
  co_await asio::async_write(socket_, buffer, whole_rest,
                             asio::redirect_error(asio::use_awaitable, ec));
}

void TcpStream::Close() {
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace xb::net
