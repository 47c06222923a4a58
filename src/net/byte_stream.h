// A connected byte stream: plain TCP or TLS over TCP. The HTTP layers read and write through this
// so that one implementation of each serves both.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/error_code.hpp>
#include <memory>
#include <string>

namespace xb::net {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Suspends until some bytes arrive; sets `ec` at end of stream or on error.
  virtual boost::asio::awaitable<size_t> ReadSome(boost::asio::mutable_buffer buffer,
                                                  boost::system::error_code& ec) = 0;
  // Suspends until every byte is written or an error is set.
  virtual boost::asio::awaitable<void> WriteAll(boost::asio::const_buffer buffer,
                                                boost::system::error_code& ec) = 0;
  // Writes what the socket takes without waiting and returns its count (`ec` set on error; a full
  // socket is not an error). Only where can_try_write(); the caller must not have a WriteAll in
  // flight.
  virtual bool can_try_write() const { return false; }
  virtual size_t TryWrite(boost::asio::const_buffer /*buffer*/, boost::system::error_code& ec) {
    ec = boost::asio::error::operation_not_supported;
    return 0;
  }
  // Closes at once; pending operations complete with an error.
  virtual void Close() = 0;
  // The ALPN protocol the TLS handshake chose ("h2", "http/1.1"), empty for plain TCP.
  virtual std::string alpn() const { return {}; }
  virtual boost::asio::any_io_executor executor() = 0;
};

}  // namespace xb::net
