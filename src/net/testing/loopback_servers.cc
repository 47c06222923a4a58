#include "net/testing/loopback_servers.h"

#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>

namespace xb::net::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

namespace {

std::string Pem(int (*write)(BIO*, void*), void* object) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio, object);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(size));
  BIO_free(bio);
  return out;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* MakeCert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, long serial,
               const std::string& san) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* signer = issuer == nullptr ? cert : issuer;
  X509_set_issuer_name(cert, X509_get_subject_name(signer));
  if (issuer == nullptr) {
    AddExtension(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(cert, signer, NID_subject_key_identifier, "hash");
  } else {
    AddExtension(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert, signer, NID_ext_key_usage, "serverAuth");
    AddExtension(cert, signer, NID_subject_alt_name, san.c_str());
    AddExtension(cert, signer, NID_authority_key_identifier, "keyid");
  }
  X509_sign(cert, issuer_key == nullptr ? key : issuer_key, EVP_sha256());
  return cert;
}

}  // namespace

TestPki::~TestPki() {
  if (!ca_file.empty()) {
    ::unlink(ca_file.c_str());
  }
}

std::unique_ptr<TestPki> MakeTestPki(const std::vector<std::string>& extra_dns_names) {
  auto pki = std::make_unique<TestPki>();
  std::string san = "DNS:localhost,IP:127.0.0.1";
  for (const auto& name : extra_dns_names) {
    san += ",DNS:" + name;
  }
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  EVP_PKEY* leaf_key = EVP_EC_gen("P-256");
  X509* ca = MakeCert(ca_key, "xb test CA", nullptr, nullptr, 1, san);
  X509* leaf = MakeCert(leaf_key, "localhost", ca, ca_key, 2, san);
  pki->ca_pem = Pem(reinterpret_cast<int (*)(BIO*, void*)>(&PEM_write_bio_X509), ca);
  pki->leaf_pem = Pem(reinterpret_cast<int (*)(BIO*, void*)>(&PEM_write_bio_X509), leaf);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, leaf_key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  pki->key_pem.assign(data, static_cast<size_t>(size));
  BIO_free(bio);
  X509_free(leaf);
  X509_free(ca);
  EVP_PKEY_free(leaf_key);
  EVP_PKEY_free(ca_key);
  char path[] = "/tmp/xb_test_ca_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd >= 0) {
    (void)!::write(fd, pki->ca_pem.data(), pki->ca_pem.size());
    ::close(fd);
    pki->ca_file = path;
  }
  return pki;
}

namespace {

int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void* arg) {
  const auto* want = static_cast<const std::string*>(arg);
  for (unsigned i = 0; i < inlen;) {
    const unsigned len = in[i];
    if (std::string_view(reinterpret_cast<const char*>(in + i + 1), len) == *want) {
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

std::shared_ptr<asio::ssl::context> ServerTls(const TestPki& pki, std::string alpn) {
  // The ALPN callback's protocol name lives in the same allocation as the context: the returned
  // pointer aliases the pair, so the name is freed with the context (LeakSanitizer runs the tests).
  struct ContextWithAlpn {
    asio::ssl::context context{asio::ssl::context::tls_server};
    std::string alpn;
  };
  auto both = std::make_shared<ContextWithAlpn>();
  both->alpn = std::move(alpn);
  both->context.use_certificate_chain(asio::buffer(pki.leaf_pem));
  both->context.use_private_key(asio::buffer(pki.key_pem), asio::ssl::context::pem);
  SSL_CTX_set_alpn_select_cb(both->context.native_handle(), &SelectAlpn, &both->alpn);
  return std::shared_ptr<asio::ssl::context>(both, &both->context);
}

namespace {

asio::awaitable<void> WaitLong() {
  asio::steady_timer never(co_await asio::this_coro::executor);
  never.expires_after(std::chrono::seconds(30));
  co_await never.async_wait(kNoThrow);
}

// ---- HTTP/1.1 ----

// One scripted answer; false when the connection is done.
template <typename Stream>
asio::awaitable<bool> ServeScripted(Stream& stream, const http::request<http::string_body>& in,
                                    const Handler& handler) {
  ServedRequest served{.method = std::string(in.method_string()),
                       .path = std::string(in.target()),
                       .headers = {},
                       .body = in.body()};
  for (const auto& field : in) {
    std::string name(field.name_string());
    for (char& c : name) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    served.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  ScriptedReply reply = handler(served);
  if (reply.stall) {
    co_await WaitLong();
    co_return false;
  }
  if (reply.stall_body) {
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " X\r\n";
    for (const auto& [name, value] : reply.headers) {
      head += name + ": " + value + "\r\n";
    }
    head += "Content-Length: " + std::to_string(reply.body.size() + 1) + "\r\n\r\n";
    co_await asio::async_write(stream, asio::buffer(head), kNoThrow);
    co_await WaitLong();
    co_return false;
  }
  http::response<http::string_body> response{static_cast<http::status>(reply.status), 11};
  for (const auto& [name, value] : reply.headers) {
    response.set(name, value);
  }
  response.body() = std::move(reply.body);
  response.keep_alive(in.keep_alive());
  response.prepare_payload();
  auto [wec, w] = co_await http::async_write(stream, response, kNoThrow);
  co_return !wec && in.keep_alive();
}

template <typename Stream>
asio::awaitable<void> ServeHttp1(Stream& stream, const Handler& handler) {
  boost::beast::flat_buffer buffer;
  while (true) {
    http::request<http::string_body> request;
    auto [ec, n] = co_await http::async_read(stream, buffer, request, kNoThrow);
    if (ec) {
      co_return;
    }
    if (handler) {
      if (!co_await ServeScripted(stream, request, handler)) {
        co_return;
      }
      continue;
    }
    const std::string target(request.target());
    if (target == "/slow") {
      co_await WaitLong();
      co_return;
    }
    if (target == "/cut") {
      static const std::string kHead = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart";
      co_await asio::async_write(stream, asio::buffer(kHead), kNoThrow);
      co_return;
    }
    http::response<http::string_body> response{http::status::ok, 11};
    if (target == "/hello") {
      response.body() = "hello";
    } else if (target == "/echo") {
      response.body() = request.body();
    } else if (target == "/big") {
      response.body() = std::string(64 << 10, 'b');
    } else if (target == "/redirect") {
      response.result(http::status::found);
      response.set(http::field::location, "/hello");
    } else {
      response.result(http::status::not_found);
    }
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    auto [wec, w] = co_await http::async_write(stream, response, kNoThrow);
    if (wec || !request.keep_alive()) {
      co_return;
    }
  }
}

// ---- HTTP/2 (nghttp2 server) ----

struct H2Server {
  struct Stream {
    std::string path;
    ServedRequest request;
    std::string request_body;
    std::string body;
    size_t sent = 0;
    std::vector<std::pair<std::string, std::string>> trailers;
    nghttp2_session* session = nullptr;  // to submit the trailers from Read
    int32_t id = 0;
  };
  // Owned: freed in the destructor, also when the serving coroutine's frame is destroyed while
  // suspended (the test's io_context goes away with a kept connection still open).
  nghttp2_session* session = nullptr;
  std::map<int32_t, Stream> streams;
  bool cut = false;  // close the connection after the next write
  Handler handler;
  Http2Script script;
  std::shared_ptr<int> requests;  // the server's count, over all connections
  int received = 0;               // requests on this connection
  std::vector<int32_t> held;      // with script.goaway_after: waiting for the GOAWAY
  bool goaway_sent = false;

  H2Server() = default;
  H2Server(const H2Server&) = delete;
  H2Server& operator=(const H2Server&) = delete;
  ~H2Server() { nghttp2_session_del(session); }

  static ssize_t Read(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                      nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s->body.size() - s->sent);
    std::memcpy(buf, s->body.data() + s->sent, n);
    s->sent += n;
    if (s->sent == s->body.size()) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!s->trailers.empty()) {  // the trailers end the stream instead
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        std::vector<nghttp2_nv> fields;
        for (const auto& [name, value] : s->trailers) {
          fields.push_back(Nv(name, value));
        }
        nghttp2_submit_trailer(s->session, s->id, fields.data(), fields.size());
      }
    }
    return static_cast<ssize_t>(n);
  }

  static nghttp2_nv Nv(const std::string& n, const std::string& v) {
    return nghttp2_nv{(uint8_t*)n.data(), (uint8_t*)v.data(), n.size(), v.size(), 0};
  }

  void RespondScripted(int32_t id, Stream& s) {
    s.request.body = s.request_body;
    ScriptedReply reply = handler(s.request);
    if (reply.stall) {
      return;
    }
    s.body = std::move(reply.body);
    s.trailers = std::move(reply.trailers);
    s.session = session;
    s.id = id;
    // Names and values live in the stream until nghttp2 has packed them (submit copies them).
    std::vector<std::pair<std::string, std::string>> fields{
        {":status", std::to_string(reply.status)},
        {"content-length", std::to_string(s.body.size() + (reply.stall_body ? 1 : 0))}};
    for (auto& [name, value] : reply.headers) {
      fields.emplace_back(name, value);
    }
    std::vector<nghttp2_nv> headers;
    for (const auto& [name, value] : fields) {
      headers.push_back(Nv(name, value));
    }
    if (reply.stall_body) {
      nghttp2_submit_headers(session, NGHTTP2_FLAG_NONE, id, nullptr, headers.data(),
                             headers.size(), nullptr);
      return;
    }
    nghttp2_data_provider provider{};
    provider.source.ptr = &s;
    provider.read_callback = &Read;
    nghttp2_submit_response(session, id, headers.data(), headers.size(), &provider);
  }

  void Respond(int32_t id, Stream& s) {
    if (handler) {
      RespondScripted(id, s);
      return;
    }
    std::string status = "200";
    std::string location;
    if (s.path == "/slow") {
      return;
    }
    if (s.path == "/hello") {
      s.body = "hello";
    } else if (s.path == "/echo") {
      s.body = s.request_body;
    } else if (s.path == "/big") {
      s.body = std::string(64 << 10, 'b');
    } else if (s.path == "/redirect") {
      status = "302";
      location = "/hello";
    } else if (s.path == "/cut") {
      cut = true;
    } else {
      status = "404";
    }
    const std::string length = s.path == "/cut" ? "100" : std::to_string(s.body.size());
    auto nv = [](const std::string& n, const std::string& v) {
      return nghttp2_nv{(uint8_t*)n.data(), (uint8_t*)v.data(), n.size(), v.size(), 0};
    };
    const std::string k_status = ":status", k_length = "content-length", k_location = "location";
    std::vector<nghttp2_nv> headers{nv(k_status, status), nv(k_length, length)};
    if (!location.empty()) {
      headers.push_back(nv(k_location, location));
    }
    if (cut) {
      nghttp2_submit_headers(session, NGHTTP2_FLAG_NONE, id, nullptr, headers.data(),
                             headers.size(), nullptr);
      return;
    }
    nghttp2_data_provider provider{};
    provider.source.ptr = &s;
    provider.read_callback = &Read;
    nghttp2_submit_response(session, id, headers.data(), headers.size(), &provider);
  }

  // A request came whole: refused, held for the GOAWAY, or answered.
  void OnRequest(int32_t id) {
    ++*requests;
    ++received;
    if (script.refuse_first == Http2Script::kRefuseAll || received <= script.refuse_first) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
      return;
    }
    if (script.goaway_after <= 0) {
      Respond(id, streams[id]);
      return;
    }
    if (goaway_sent) {
      return;
    }
    held.push_back(id);
    if (held.size() < static_cast<size_t>(script.goaway_after)) {
      return;
    }
    // nghttp2 closes the held streams above the last stream id once the GOAWAY is sent.
    nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE, held.front(), NGHTTP2_NO_ERROR, nullptr, 0);
    goaway_sent = true;
    Respond(held.front(), streams[held.front()]);
  }
};

int H2OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
               const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* server = static_cast<H2Server*>(user);
  const std::string_view n(reinterpret_cast<const char*>(name), namelen);
  const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  H2Server::Stream& stream = server->streams[frame->hd.stream_id];
  if (n == ":path") {
    stream.path.assign(v);
    stream.request.path.assign(v);
  } else if (n == ":method") {
    stream.request.method.assign(v);
  } else if (!n.starts_with(":")) {
    stream.request.headers.emplace_back(std::string(n), std::string(v));
  }
  return 0;
}

int H2OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* user) {
  static_cast<H2Server*>(user)->streams[id].request_body.append(reinterpret_cast<const char*>(data),
                                                                len);
  return 0;
}

int H2OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* server = static_cast<H2Server*>(user);
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
      (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
    server->OnRequest(frame->hd.stream_id);
  }
  return 0;
}

template <typename Stream>
asio::awaitable<bool> H2Write(Stream& stream, H2Server& server) {
  std::string out;
  const uint8_t* data = nullptr;
  ssize_t n = 0;
  while ((n = nghttp2_session_mem_send(server.session, &data)) > 0) {
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (!out.empty()) {
    auto [ec, w] = co_await asio::async_write(stream, asio::buffer(out), kNoThrow);
    if (ec) {
      co_return false;
    }
  }
  co_return !server.cut;
}

// What every connection of a server is served with.
struct ServeWith {
  Handler handler;
  Http2Script script;
  std::shared_ptr<int> h2_requests;
};

template <typename Stream>
asio::awaitable<void> ServeHttp2(Stream& stream, const ServeWith& with, int connection) {
  H2Server server;
  server.handler = with.handler;
  server.script = with.script;
  if (connection > 1) {
    server.script.goaway_after = 0;  // the first connection only
  }
  server.requests = with.h2_requests;
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &H2OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &H2OnData);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &H2OnFrame);
  nghttp2_session_server_new(&server.session, callbacks, &server);
  nghttp2_session_callbacks_del(callbacks);
  const uint32_t max_streams = with.script.max_concurrent_streams;
  const nghttp2_settings_entry limit{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams};
  nghttp2_submit_settings(server.session, NGHTTP2_FLAG_NONE, &limit, max_streams > 0 ? 1 : 0);
  std::array<uint8_t, 16384> buffer;
  while (co_await H2Write(stream, server)) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(buffer), kNoThrow);
    if (ec || nghttp2_session_mem_recv(server.session, buffer.data(), n) < 0) {
      break;
    }
  }
}

asio::awaitable<void> Serve(tcp::socket socket, LoopbackServer::Protocol protocol,
                            std::shared_ptr<asio::ssl::context> tls,
                            std::shared_ptr<const ServeWith> with, int connection) {
  if (tls == nullptr) {
    if (protocol == LoopbackServer::Protocol::kHttp2) {
      co_await ServeHttp2(socket, *with, connection);  // h2c, prior knowledge
    } else {
      co_await ServeHttp1(socket, with->handler);
    }
    co_return;
  }
  asio::ssl::stream<tcp::socket> stream(std::move(socket), *tls);
  auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kNoThrow);
  if (ec) {
    co_return;
  }
  if (protocol == LoopbackServer::Protocol::kHttp2) {
    co_await ServeHttp2(stream, *with, connection);
  } else {
    co_await ServeHttp1(stream, with->handler);
  }
}

asio::awaitable<void> AcceptLoop(tcp::acceptor& acceptor, LoopbackServer::Protocol protocol,
                                 std::shared_ptr<asio::ssl::context> tls,
                                 std::shared_ptr<int> accepted,
                                 std::shared_ptr<const ServeWith> with) {
  while (true) {
    auto [ec, socket] = co_await acceptor.async_accept(kNoThrow);
    if (ec) {
      co_return;
    }
    const int connection = ++*accepted;
    asio::co_spawn(acceptor.get_executor(),
                   Serve(std::move(socket), protocol, tls, with, connection), asio::detached);
  }
}

}  // namespace

LoopbackServer::LoopbackServer(asio::io_context& io, Protocol protocol,
                               std::shared_ptr<asio::ssl::context> tls, Handler handler,
                               Http2Script script)
    : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  auto with = std::make_shared<const ServeWith>(
      ServeWith{.handler = std::move(handler), .script = script, .h2_requests = h2_requests_});
  asio::co_spawn(io, AcceptLoop(acceptor_, protocol, std::move(tls), accepted_, std::move(with)),
                 asio::detached);
}

std::string ServedRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) {
      return v;
    }
  }
  return "";
}

LoopbackServer::~LoopbackServer() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

}  // namespace xb::net::testing
