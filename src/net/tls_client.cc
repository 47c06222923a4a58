#include "net/tls_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>

#include "base/ip_address.h"

namespace xb::net {

namespace ssl = boost::asio::ssl;

Expected<std::shared_ptr<ssl::context>, std::string> MakeClientTlsContext(
    const TlsClientOptions& options) {
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  if (options.ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(options.ca_file, ec);
  }
  if (ec) {
    return std::string("the TLS trust store cannot be loaded");
  }
  context->set_verify_mode(ssl::verify_peer, ec);
  if (ec) {
    return std::string("the TLS client cannot be set up");
  }
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  if (!options.alpn.empty()) {
    std::string wire;  // RFC 7301 3.1: length-prefixed protocol names
    for (const auto& protocol : options.alpn) {
      wire.push_back(static_cast<char>(protocol.size()));
      wire += protocol;
    }
    if (SSL_CTX_set_alpn_protos(context->native_handle(),
                                reinterpret_cast<const unsigned char*>(wire.data()),
                                static_cast<unsigned>(wire.size())) != 0) {
      return std::string("the TLS client cannot be set up");
    }
  }
  return context;
}

bool SetTlsPeerName(SSL* ssl, std::string_view host_view) {
  const std::string host(host_view);
  std::array<uint8_t, 4> v4;
  std::array<uint8_t, 16> v6;
  if (ParseIpv4(host, &v4) || ParseIpv6(host, &v6)) {
    // RFC 6066 3: SNI carries no IP literal; the certificate must list the address.
    return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  }
  X509_VERIFY_PARAM_set_hostflags(SSL_get0_param(ssl), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
}

}  // namespace xb::net
