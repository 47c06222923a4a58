// ByteStream over a plain TCP socket (TCP_NODELAY set: gRPC responses are small and latency-bound).
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "net/byte_stream.h"

namespace xb::net {

class TcpStream final : public ByteStream {
 public:
  explicit TcpStream(boost::asio::ip::tcp::socket socket);
  boost::asio::awaitable<size_t> ReadSome(boost::asio::mutable_buffer buffer,
                                          boost::system::error_code& ec) override;
  boost::asio::awaitable<void> WriteAll(boost::asio::const_buffer buffer,
                                        boost::system::error_code& ec) override;
  bool can_try_write() const override { return true; }
  size_t TryWrite(boost::asio::const_buffer buffer, boost::system::error_code& ec) override;
  void Close() override;
  boost::asio::any_io_executor executor() override { return socket_.get_executor(); }
  boost::asio::ip::tcp::socket& socket() { return socket_; }

 private:
  boost::asio::ip::tcp::socket socket_;
};

}  // namespace xb::net
