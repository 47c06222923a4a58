#include "api/chain_rpc.h"

#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <memory>

#include "base/encoding.h"
#include "net/http_client.h"
#include "net/tls_client.h"

namespace xb::api {
namespace {

namespace asio = boost::asio;
namespace json = boost::json;
constexpr size_t kMaxReplyBytes = 4 * 1024 * 1024;

// One verifying TLS client context for every chain call (system trust store), HTTP/1.1 only as
// before; null when it cannot be made (every https call then fails).
std::shared_ptr<asio::ssl::context> ChainTlsContext() {
  static const std::shared_ptr<asio::ssl::context> context = [] {
    auto made = net::MakeClientTlsContext({.alpn = {"http/1.1"}});
    return made.ok() ? std::move(made).value() : nullptr;
  }();
  return context;
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

// The words for a failed exchange (never the URL, an address or the reply: OPS-014).
RpcFailure TransportFailure(net::HttpErrorKind kind) {
  switch (kind) {
    case net::HttpErrorKind::kInvalidRequest:
      return RpcFailure{"chain rpc url is not usable"};
    case net::HttpErrorKind::kResolve:
    case net::HttpErrorKind::kVetoed:
      return RpcFailure{"chain rpc host did not resolve"};
    case net::HttpErrorKind::kConnect:
      return RpcFailure{"chain rpc connection failed"};
    case net::HttpErrorKind::kTls:
      return RpcFailure{"chain rpc tls handshake failed"};
    default:
      return RpcFailure{"chain rpc reply failed"};
  }
}

// POSTs one JSON-RPC body to `url` within `timeout` (one connection per call): the reply body of
// a 200 answer, or a failure.
asio::awaitable<Expected<std::string, RpcFailure>> Post(std::string url, std::string body,
                                                        std::chrono::milliseconds timeout) {
  auto tls = ChainTlsContext();
  if (tls == nullptr) {
    co_return RpcFailure{"chain rpc tls setup failed"};
  }
  net::HttpClientOptions options;
  options.tls_context = std::move(tls);
  auto client = net::HttpClient::Create(co_await asio::this_coro::executor, std::move(options));
  if (!client.ok()) {
    co_return RpcFailure{"chain rpc tls setup failed"};
  }
  // Named and filled field by field: GCC 12 mishandles braced temporaries in coroutines.
  net::HttpRequest request;
  request.method = "POST";
  request.url = std::move(url);
  request.headers.push_back(net::Header{"content-type", "application/json"});
  request.body = std::move(body);
  request.deadline = std::chrono::steady_clock::now() + timeout;
  request.max_body_bytes = kMaxReplyBytes;
  auto reply = co_await (*client)->Send(std::move(request));
  if (!reply.ok()) {
    co_return TransportFailure(reply.error().kind);
  }
  if (reply->status != 200) {
    co_return RpcFailure{"chain rpc answered an http error"};
  }
  co_return std::move(reply->body);
}

// One JSON-RPC call: the `result` member of the reply, or a failure (transport, HTTP status,
// malformed reply, or a JSON-RPC `error` member — API-231: never a verdict).
asio::awaitable<Expected<json::value, RpcFailure>> Call(std::string url, std::string method,
                                                        json::array params,
                                                        std::chrono::milliseconds timeout) {
  json::object body;
  body["jsonrpc"] = "2.0";
  body["id"] = 1;
  body["method"] = method;
  body["params"] = std::move(params);
  XB_TRY_CO(std::string reply, co_await Post(std::move(url), json::serialize(body), timeout));
  boost::system::error_code jec;
  json::value doc = json::parse(reply, jec);
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

asio::awaitable<Expected<std::string, RpcFailure>> EthCall(std::string url, std::string call_data,
                                                           std::optional<uint64_t> block,
                                                           std::chrono::milliseconds timeout) {
  const std::string data = "0x" + LowerHex(call_data);
  json::object tx;
  tx["data"] = data;
  json::array params{tx, json::value(block ? HexQuantity(*block) : std::string("latest"))};
  XB_TRY_CO(json::value r, co_await Call(std::move(url), "eth_call", std::move(params), timeout));
  auto bytes = ParseData(r);
  if (!bytes) {
    co_return RpcFailure{"chain rpc eth_call result is not data"};
  }
  co_return *std::move(bytes);
}

asio::awaitable<Expected<uint64_t, RpcFailure>> EthBlockNumber(std::string url,
                                                               std::chrono::milliseconds timeout) {
  XB_TRY_CO(json::value r,
            co_await Call(std::move(url), "eth_blockNumber", json::array{}, timeout));
  auto n = ParseQuantity(r);
  if (!n) {
    co_return RpcFailure{"chain rpc block number is not a quantity"};
  }
  co_return *n;
}

asio::awaitable<Expected<std::optional<BlockInfo>, RpcFailure>> EthGetBlock(
    std::string url, std::optional<uint64_t> block, std::chrono::milliseconds timeout) {
  json::array params{json::value(block ? HexQuantity(*block) : std::string("latest")),
                     json::value(false)};
  XB_TRY_CO(json::value v,
            co_await Call(std::move(url), "eth_getBlockByNumber", std::move(params), timeout));
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
