// The client side of TLS for every outbound connection (net/http_client, the OTLP exporter's own
// socket): one verifying context and the peer-name check. OpenSSL through asio::ssl.
//
// Trust: OpenSSL's default verify paths (SSL_CTX_set_default_verify_paths), so SSL_CERT_FILE and
// SSL_CERT_DIR select another bundle as operators expect, in the shipped binary too; or only the
// certificates of a caller-supplied CA file (tests). TLS 1.2 at least; the peer is always verified.
//
// Pure setup, no I/O: callable from any thread. A context is shared by the connections made with
// it (OpenSSL contexts are thread-safe once set up).
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"

struct ssl_st;

namespace xb::net {

struct TlsClientOptions {
  std::string ca_file{};  // PEM; empty: the system roots (default verify paths)
  // ALPN protocols offered, in preference order ("h2", "http/1.1"); empty: no ALPN extension.
  std::vector<std::string> alpn{};
};

// A verifying client context; the error is plain words (never a path or a certificate).
Expected<std::shared_ptr<boost::asio::ssl::context>, std::string> MakeClientTlsContext(
    const TlsClientOptions& options);

// Sets what the peer's certificate must name: an IP-literal host (IPv4, or IPv6 without
// brackets) is checked against the certificate's IP addresses and sends no SNI; a name sends SNI
// and is checked as a DNS name (RFC 6125, no partial wildcards). False when OpenSSL refuses it.
bool SetTlsPeerName(ssl_st* ssl, std::string_view host);

}  // namespace xb::net
