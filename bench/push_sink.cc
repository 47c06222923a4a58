// push_sink: an APNs-shaped HTTP/2 sink for bench/push.sh (issue 30). It stands in for
// api.sandbox.push.apple.com: HTTP/2 over TLS (ALPN "h2" only), with the certificate and key the
// script made for that name, listening on 127.0.0.1:0 (prints "port N" on stdout). Every
// `POST /3/device/<token>` is answered 200 with an empty body (END_STREAM on the HEADERS frame);
// anything else 400 {"reason":"BadPath"} and counted as bad. The bearer token and the other APNs
// headers are not checked: tests/integration/push_fakes.py does that; this one only has to be fast.
//
// Per answered request it keeps the arrival time (CLOCK_REALTIME ns, when the request's last frame
// was read), and the body's `topic` and `sequence_id` strings, found by plain string search (no
// JSON library). A body without both is answered 400 and counted as bad. The records are written
// to --records at SIGTERM or SIGINT (then the sink exits), one line each:
//   <arrival_ns> <sequence_id> <topic base64>
// --status is rewritten (write + rename) every 100 ms while it changes:
//   requests=<answered 200> bad=<answered 400> connections=<accepted> last_ns=<last arrival>
//
// One thread, one io_context: Boost.Asio coroutines over asio::ssl::stream, nghttp2's server
// session fed from memory (nghttp2_session_mem_recv / mem_send), each read answered by one write
// of everything nghttp2 has queued. Bench code: never linked into the server.
//
//   push_sink --cert sink.pem --key sink.key --records records.txt --status status.txt
//             [--max-streams 1000]
#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <time.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xb::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view kDevicePrefix = "/3/device/";
constexpr size_t kMaxBody = 4096;  // an APNs body is at most 4 KiB

struct Record {
  int64_t arrival_ns;
  uint8_t sequence_id_size;  // text = sequence id, then topic
  uint8_t topic_size;
  std::array<char, 86> text;  // a 33-byte topic is 44 base64 characters, an id at most 20 digits
};

// Shared by every connection (one thread).
struct Sink {
  std::vector<Record> records;
  uint64_t bad = 0;
  uint64_t connections = 0;
  int64_t last_ns = 0;
};

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The string value of "key" in a compact JSON object: `"key"`, optional spaces, `:`, optional
// spaces, then a quoted string without escapes. Empty when absent or not a plain string.
std::string_view JsonString(std::string_view body, std::string_view quoted_key) {
  size_t at = 0;
  while ((at = body.find(quoted_key, at)) != std::string_view::npos) {
    at += quoted_key.size();
    while (at < body.size() && body[at] == ' ') {
      ++at;
    }
    if (at >= body.size() || body[at] != ':') {
      continue;
    }
    ++at;
    while (at < body.size() && body[at] == ' ') {
      ++at;
    }
    if (at >= body.size() || body[at] != '"') {
      continue;
    }
    const size_t end = body.find_first_of("\"\\", at + 1);
    if (end == std::string_view::npos || body[end] != '"') {
      return {};
    }
    return body.substr(at + 1, end - at - 1);
  }
  return {};
}

// Fills `record` from an APNs body; false when a field is missing or too long.
bool ParseBody(std::string_view body, Record& record) {
  const std::string_view topic = JsonString(body, "\"topic\"");
  const std::string_view sequence_id = JsonString(body, "\"sequence_id\"");
  if (topic.empty() || sequence_id.empty() ||
      topic.size() + sequence_id.size() > record.text.size()) {
    return false;
  }
  std::memcpy(record.text.data(), sequence_id.data(), sequence_id.size());
  std::memcpy(record.text.data() + sequence_id.size(), topic.data(), topic.size());
  record.sequence_id_size = static_cast<uint8_t>(sequence_id.size());
  record.topic_size = static_cast<uint8_t>(topic.size());
  return true;
}

nghttp2_nv Header(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE};
}

// One HTTP/2 connection: owns its nghttp2 server session.
class Connection {
 public:
  Connection(Sink& sink, uint32_t max_streams) : sink_(sink) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, &OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, &OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, &OnFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &OnClose);
    nghttp2_session_server_new(&session_, callbacks, this);
    nghttp2_session_callbacks_del(callbacks);
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
    };
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, 16 << 20);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() { nghttp2_session_del(session_); }

  // False when the peer's bytes are not HTTP/2.
  bool Receive(const uint8_t* data, size_t size) {
    return nghttp2_session_mem_recv(session_, data, size) >= 0;
  }

  // Appends everything nghttp2 has queued to `out`; false when the session is over.
  bool TakeOutput(std::string& out) {
    const uint8_t* data = nullptr;
    ssize_t n = 0;
    while ((n = nghttp2_session_mem_send(session_, &data)) > 0) {
      out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    return n == 0 &&
           (nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0);
  }

 private:
  struct Stream {
    bool post = false;
    bool device_path = false;
    std::string body;
  };

  static Connection& Of(void* user) { return *static_cast<Connection*>(user); }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;
    }
    const std::string_view n(reinterpret_cast<const char*>(name), namelen);
    const std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    Stream& s = Of(user).streams_[frame->hd.stream_id];
    if (n == ":method") {
      s.post = v == "POST";
    } else if (n == ":path") {
      s.device_path = v.size() > kDevicePrefix.size() && v.starts_with(kDevicePrefix) &&
                      v.find('/', kDevicePrefix.size()) == std::string_view::npos;
    }
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len,
                    void* user) {
    auto it = Of(user).streams_.find(id);
    if (it != Of(user).streams_.end() && it->second.body.size() + len <= kMaxBody) {
      it->second.body.append(reinterpret_cast<const char*>(data), len);
    }
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      Of(user).Answer(frame->hd.stream_id);
    }
    return 0;
  }

  static int OnClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    Of(user).streams_.erase(id);
    return 0;
  }

  void Answer(int32_t id) {
    auto it = streams_.find(id);
    if (it == streams_.end()) {
      return;
    }
    const Stream& s = it->second;
    Record record{};
    record.arrival_ns = RealtimeNs();
    if (s.post && s.device_path && ParseBody(s.body, record)) {
      sink_.records.push_back(record);
      sink_.last_ns = record.arrival_ns;
      const nghttp2_nv ok[] = {Header(":status", "200")};
      nghttp2_submit_response(session_, id, ok, std::size(ok), nullptr);
      return;
    }
    ++sink_.bad;
    static constexpr std::string_view kBadBody = R"({"reason":"BadPath"})";
    static_assert(kBadBody.size() == 20);
    const nghttp2_nv bad[] = {Header(":status", "400"), Header("content-length", "20")};
    nghttp2_data_provider provider{};
    provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t, uint32_t* flags,
                                nghttp2_data_source*, void*) -> ssize_t {
      std::memcpy(buf, kBadBody.data(), kBadBody.size());
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return static_cast<ssize_t>(kBadBody.size());
    };
    nghttp2_submit_response(session_, id, bad, std::size(bad), &provider);
  }

  Sink& sink_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, Stream> streams_;
};

asio::awaitable<void> Serve(tcp::socket socket, asio::ssl::context& tls, Sink& sink,
                            uint32_t max_streams) {
  socket.set_option(tcp::no_delay(true));
  asio::ssl::stream<tcp::socket> stream(std::move(socket), tls);
  if (auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kNoThrow); ec) {
    co_return;
  }
  Connection connection(sink, max_streams);
  std::array<uint8_t, 64 << 10> in;
  std::string out;
  while (true) {
    out.clear();
    const bool more = connection.TakeOutput(out);
    if (!out.empty()) {
      if (auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), kNoThrow); ec) {
        co_return;
      }
    }
    if (!more) {
      co_return;
    }
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(in), kNoThrow);
    if (ec || !connection.Receive(in.data(), n)) {
      co_return;
    }
  }
}

asio::awaitable<void> AcceptLoop(tcp::acceptor& acceptor, asio::ssl::context& tls, Sink& sink,
                                 uint32_t max_streams) {
  while (true) {
    auto [ec, socket] = co_await acceptor.async_accept(kNoThrow);
    if (ec) {
      co_return;
    }
    ++sink.connections;
    asio::co_spawn(acceptor.get_executor(), Serve(std::move(socket), tls, sink, max_streams),
                   asio::detached);
  }
}

bool WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && written && std::rename(tmp.c_str(), path.c_str()) == 0;
}

std::string StatusLine(const Sink& sink) {
  return "requests=" + std::to_string(sink.records.size()) + " bad=" + std::to_string(sink.bad) +
         " connections=" + std::to_string(sink.connections) +
         " last_ns=" + std::to_string(sink.last_ns) + "\n";
}

asio::awaitable<void> StatusLoop(const Sink& sink, std::string path) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  std::string written;
  while (true) {
    std::string line = StatusLine(sink);
    if (line != written && WriteFile(path, line)) {
      written = std::move(line);
    }
    timer.expires_after(std::chrono::milliseconds(100));
    if (auto [ec] = co_await timer.async_wait(kNoThrow); ec) {
      co_return;
    }
  }
}

bool WriteRecords(const Sink& sink, const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return false;
  }
  for (const Record& r : sink.records) {
    std::fprintf(f, "%lld %.*s %.*s\n", static_cast<long long>(r.arrival_ns),
                 static_cast<int>(r.sequence_id_size), r.text.data(),
                 static_cast<int>(r.topic_size), r.text.data() + r.sequence_id_size);
  }
  return std::fclose(f) == 0;
}

int SelectH2(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
             unsigned int inlen, void*) {
  unsigned char* selected = nullptr;
  if (nghttp2_select_next_protocol(&selected, outlen, in, inlen) != 1) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;  // ALPN h2 only, as APNs
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

struct Options {
  std::string cert, key, records, status;
  uint32_t max_streams = 1000;
};

bool ParseOptions(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--cert") {
      o.cert = value;
    } else if (flag == "--key") {
      o.key = value;
    } else if (flag == "--records") {
      o.records = value;
    } else if (flag == "--status") {
      o.status = value;
    } else if (flag == "--max-streams") {
      o.max_streams = static_cast<uint32_t>(std::strtoul(value, nullptr, 10));
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && !o.cert.empty() && !o.key.empty() && !o.records.empty() &&
         !o.status.empty() && o.max_streams > 0;
}

int Run(const Options& o) {
  Sink sink;  // outlives the io_context and the connections it still holds
  sink.records.reserve(1 << 20);
  asio::ssl::context tls(asio::ssl::context::tls_server);
  boost::system::error_code ec;
  tls.use_certificate_chain_file(o.cert, ec);
  if (!ec) {
    tls.use_private_key_file(o.key, asio::ssl::context::pem, ec);
  }
  if (ec) {
    std::fprintf(stderr, "push_sink: certificate or key not usable: %s\n", ec.message().c_str());
    return 1;
  }
  SSL_CTX_set_alpn_select_cb(tls.native_handle(), &SelectH2, nullptr);
  asio::io_context io(1);
  tcp::acceptor acceptor(io);
  const tcp::endpoint endpoint(asio::ip::make_address_v4("127.0.0.1"), 0);
  if (acceptor.open(endpoint.protocol(), ec) || acceptor.bind(endpoint, ec) ||
      acceptor.listen(asio::socket_base::max_listen_connections, ec)) {
    std::fprintf(stderr, "push_sink: cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  asio::co_spawn(io, AcceptLoop(acceptor, tls, sink, o.max_streams), asio::detached);
  asio::co_spawn(io, StatusLoop(sink, o.status), asio::detached);
  std::printf("port %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  io.run();
  const bool ok = WriteRecords(sink, o.records) && WriteFile(o.status, StatusLine(sink));
  std::fprintf(stderr, "push_sink: %zu requests, %llu bad, %llu connections\n", sink.records.size(),
               static_cast<unsigned long long>(sink.bad),
               static_cast<unsigned long long>(sink.connections));
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace xb::bench

int main(int argc, char** argv) {
  xb::bench::Options options;
  if (!xb::bench::ParseOptions(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: push_sink --cert PEM --key PEM --records FILE --status FILE "
                 "[--max-streams N]\n");
    return 2;
  }
  return xb::bench::Run(options);
}
