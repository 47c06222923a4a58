#include "api/chain_rpc.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <memory>

#include "base/url.h"

namespace xb::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
constexpr size_t kMaxReplyBytes = 4 * 1024 * 1024;

// One verifying TLS client context for every chain call (system trust store).
ssl::context& ClientTlsContext() {
  static ssl::context* const context = [] {
    auto* c = new ssl::context(ssl::context::tls_client);
    boost::system::error_code ec;
    c->set_default_verify_paths(ec);
    c->set_verify_mode(ssl::verify_peer, ec);
    return c;
  }();
  return *context;
}

std::string HexQuantity(uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v, 16);
  (void)ec;
  return "0x" + std::string(buf, end);
}

std::optional<uint64_t> ParseQuantity(const json::value& v) {
  if (!v.is_string()) {
    return std::nullopt;
  }
  std::string_view s = v.get_string();
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return std::nullopt;
  }
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), out, 16);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> ParseData(const json::value& v) {
  if (!v.is_string()) {
    return std::nullopt;
  }
  std::string_view s = v.get_string();
  if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || s.size() % 2 != 0) {
    return std::nullopt;
  }
  std::string out;
  for (size_t i = 2; i < s.size(); i += 2) {
    uint8_t b = 0;
    auto [end, ec] = std::from_chars(s.data() + i, s.data() + i + 2, b, 16);
    if (ec != std::errc() || end != s.data() + i + 2) {
      return std::nullopt;
    }
    out.push_back(static_cast<char>(b));
  }
  return out;
}

template <typename Stream>
asio::awaitable<std::variant<std::string, RpcFailure>> Exchange(
    Stream& stream, http::request<http::string_body>& req) {
  auto [wec, written] = co_await http::async_write(stream, req, kNoThrow);
  (void)written;
  if (wec) {
    co_return RpcFailure{"chain rpc request failed"};
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxReplyBytes);
  auto [rec, read] = co_await http::async_read(stream, buffer, parser, kNoThrow);
  (void)read;
  if (rec) {
    co_return RpcFailure{"chain rpc reply failed"};
  }
  if (parser.get().result() != http::status::ok) {
    co_return RpcFailure{"chain rpc answered an http error"};
  }
  co_return std::move(parser.get().body());
}

// One JSON-RPC call: the `result` member of the reply, or a failure (transport, HTTP status,
// malformed reply, or a JSON-RPC `error` member — API-231: never a verdict).
asio::awaitable<std::variant<json::value, RpcFailure>> Call(std::string url_text,
                                                            std::string method, json::array params,
                                                            std::chrono::milliseconds timeout) {
  auto url = ParseUrl(url_text);
  if (!url.ok() || !IsHttpUrlWithHost(*url)) {
    co_return RpcFailure{"chain rpc url is not usable"};
  }
  const bool tls = EqualsIgnoreCase(url->scheme, "https");
  const std::string port = std::to_string(url->port.value_or(tls ? 443 : 80));
  const std::string target = url->path.empty() ? "/" : url->path;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto executor = co_await asio::this_coro::executor;

  // Resolution, bounded by the same deadline (a timer cancels the resolver).
  auto resolver = std::make_shared<tcp::resolver>(executor);
  asio::steady_timer guard(executor);
  guard.expires_at(deadline);
  guard.async_wait([weak = std::weak_ptr<tcp::resolver>(resolver)](boost::system::error_code ec) {
    if (!ec) {
      if (auto r = weak.lock()) {
        r->cancel();
      }
    }
  });
  auto [ec, endpoints] = co_await resolver->async_resolve(url->host, port, kNoThrow);
  guard.cancel();
  if (ec) {
    co_return RpcFailure{"chain rpc host did not resolve"};
  }

  json::object body;
  body["jsonrpc"] = "2.0";
  body["id"] = 1;
  body["method"] = method;
  body["params"] = std::move(params);
  http::request<http::string_body> req{http::verb::post, target, 11};
  req.set(http::field::host, url->host);
  req.set(http::field::content_type, "application/json");
  req.body() = json::serialize(body);
  req.prepare_payload();

  std::variant<std::string, RpcFailure> reply = RpcFailure{"chain rpc failed"};
  if (tls) {
    beast::ssl_stream<beast::tcp_stream> stream(executor, ClientTlsContext());
    if (!SSL_set_tlsext_host_name(stream.native_handle(), url->host.c_str())) {
      co_return RpcFailure{"chain rpc tls setup failed"};
    }
    stream.set_verify_callback(ssl::host_name_verification(url->host));
    beast::get_lowest_layer(stream).expires_at(deadline);
    auto [cec, ep] = co_await beast::get_lowest_layer(stream).async_connect(endpoints, kNoThrow);
    (void)ep;
    if (cec) {
      co_return RpcFailure{"chain rpc connection failed"};
    }
    auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, kNoThrow);
    if (hec) {
      co_return RpcFailure{"chain rpc tls handshake failed"};
    }
    reply = co_await Exchange(stream, req);
  } else {
    beast::tcp_stream stream(executor);
    stream.expires_at(deadline);
    auto [cec, ep] = co_await stream.async_connect(endpoints, kNoThrow);
    (void)ep;
    if (cec) {
      co_return RpcFailure{"chain rpc connection failed"};
    }
    reply = co_await Exchange(stream, req);
  }
  if (auto* f = std::get_if<RpcFailure>(&reply)) {
    co_return std::move(*f);
  }
  boost::system::error_code jec;
  json::value doc = json::parse(std::get<std::string>(reply), jec);
  if (jec || !doc.is_object()) {
    co_return RpcFailure{"chain rpc reply is not json-rpc"};
  }
  const json::object& obj = doc.get_object();
  if (obj.contains("error")) {
    co_return RpcFailure{"chain rpc returned an error"};
  }
  const json::value* result = obj.if_contains("result");
  if (result == nullptr) {
    co_return RpcFailure{"chain rpc reply has no result"};
  }
  co_return *result;
}

}  // namespace

asio::awaitable<std::variant<std::string, RpcFailure>> EthCall(std::string url,
                                                               std::string call_data,
                                                               std::optional<uint64_t> block,
                                                               std::chrono::milliseconds timeout) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string data = "0x";
  data.reserve(2 + call_data.size() * 2);
  for (char c : call_data) {
    data.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
    data.push_back(kHex[static_cast<uint8_t>(c) & 0x0f]);
  }
  json::object tx;
  tx["data"] = data;
  json::array params{tx, json::value(block ? HexQuantity(*block) : std::string("latest"))};
  auto r = co_await Call(std::move(url), "eth_call", std::move(params), timeout);
  if (auto* f = std::get_if<RpcFailure>(&r)) {
    co_return std::move(*f);
  }
  auto bytes = ParseData(std::get<json::value>(r));
  if (!bytes) {
    co_return RpcFailure{"chain rpc eth_call result is not data"};
  }
  co_return *std::move(bytes);
}

asio::awaitable<std::variant<uint64_t, RpcFailure>> EthBlockNumber(
    std::string url, std::chrono::milliseconds timeout) {
  auto r = co_await Call(std::move(url), "eth_blockNumber", json::array{}, timeout);
  if (auto* f = std::get_if<RpcFailure>(&r)) {
    co_return std::move(*f);
  }
  auto n = ParseQuantity(std::get<json::value>(r));
  if (!n) {
    co_return RpcFailure{"chain rpc block number is not a quantity"};
  }
  co_return *n;
}

asio::awaitable<std::variant<std::optional<BlockInfo>, RpcFailure>> EthGetBlock(
    std::string url, std::optional<uint64_t> block, std::chrono::milliseconds timeout) {
  json::array params{json::value(block ? HexQuantity(*block) : std::string("latest")),
                     json::value(false)};
  auto r = co_await Call(std::move(url), "eth_getBlockByNumber", std::move(params), timeout);
  if (auto* f = std::get_if<RpcFailure>(&r)) {
    co_return std::move(*f);
  }
  const json::value& v = std::get<json::value>(r);
  if (v.is_null()) {
    co_return std::optional<BlockInfo>();
  }
  if (!v.is_object()) {
    co_return RpcFailure{"chain rpc block is not an object"};
  }
  const json::value* number = v.get_object().if_contains("number");
  const json::value* timestamp = v.get_object().if_contains("timestamp");
  auto n = number ? ParseQuantity(*number) : std::nullopt;
  auto t = timestamp ? ParseQuantity(*timestamp) : std::nullopt;
  if (!n || !t) {
    co_return RpcFailure{"chain rpc block lacks number or timestamp"};
  }
  co_return std::optional<BlockInfo>(BlockInfo{.number = *n, .timestamp = *t});
}

}  // namespace xb::api
