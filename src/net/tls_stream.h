// TLS for the gRPC port (DECISIONS.md, Native TLS: our optional [server.tls] extension): a server
// context with ALPN choosing "h2" or "http/1.1", and a ByteStream over an OpenSSL stream.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <memory>
#include <string>

#include "base/status.h"
#include "net/byte_stream.h"

namespace xb::net {

// Loads the PEM certificate chain and private key. Errors name the key path only
// ("server.tls.cert_file" / "server.tls.key_file"), never file contents.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(
    const std::string& cert_file, const std::string& key_file);

class TlsStream final : public ByteStream {
 public:
  TlsStream(boost::asio::ip::tcp::socket socket, boost::asio::ssl::context& context);

  // Runs the server handshake; false when it failed. Its deadline is the caller's (the listener's
  // handshake timeout closes the stream). Suspends.
  boost::asio::awaitable<bool> Handshake();

  boost::asio::awaitable<size_t> ReadSome(boost::asio::mutable_buffer buffer,
                                          boost::system::error_code& ec) override;
  boost::asio::awaitable<void> WriteAll(boost::asio::const_buffer buffer,
                                        boost::system::error_code& ec) override;
  void Close() override;
  std::string alpn() const override;
  boost::asio::any_io_executor executor() override { return stream_.get_executor(); }

 private:
  boost::asio::ssl::stream<boost::asio::ip::tcp::socket> stream_;
};

}  // namespace xb::net
