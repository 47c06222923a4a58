#include "net/tls_stream.h"

#include <openssl/ssl.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace xb::net {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;

namespace {

// ALPN (RFC 7301): prefer h2, else http/1.1; a client offering neither gets no protocol and is
// then served by sniffing, as on the plaintext port.
int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  static constexpr unsigned char kPreference[] = "\x02h2\x08http/1.1";
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kPreference, sizeof(kPreference) - 1, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const std::string& cert_file,
                                                           const std::string& key_file) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  context->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return InvalidArgument("configuration is invalid: server.tls.cert_file (cannot be loaded)");
  }
  context->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    return InvalidArgument("configuration is invalid: server.tls.key_file (cannot be loaded)");
  }
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    return InvalidArgument(
        "configuration is invalid: server.tls.key_file (does not match the certificate)");
  }
  SSL_CTX_set_alpn_select_cb(context->native_handle(), &SelectAlpn, nullptr);
  return context;
}

TlsStream::TlsStream(asio::ip::tcp::socket socket, ssl::context& context)
    : stream_(std::move(socket), context) {
  boost::system::error_code ignored;
  stream_.next_layer().set_option(asio::ip::tcp::no_delay(true), ignored);
}

asio::awaitable<bool> TlsStream::Handshake() {
  boost::system::error_code ec;
  co_await stream_.async_handshake(ssl::stream_base::server,
                                   asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

asio::awaitable<size_t> TlsStream::ReadSome(asio::mutable_buffer buffer,
                                            boost::system::error_code& ec) {
  co_return co_await stream_.async_read_some(buffer, asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> TlsStream::WriteAll(asio::const_buffer buffer,
                                          boost::system::error_code& ec) {
  co_await asio::async_write(stream_, buffer, asio::redirect_error(asio::use_awaitable, ec));
}

void TlsStream::Close() {
  boost::system::error_code ignored;
  stream_.next_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.next_layer().close(ignored);
}

std::string TlsStream::alpn() const {
  const unsigned char* data = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(const_cast<TlsStream*>(this)->stream_.native_handle(), &data, &len);
  return std::string(reinterpret_cast<const char*>(data), len);
}

}  // namespace xb::net
