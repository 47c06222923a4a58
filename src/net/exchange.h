// The seam between the HTTP layers (net/http1, net/http2) and the gRPC layer (rpc/): one HTTP
// request/response pair. A connection creates an Exchange per request through an ExchangeFactory,
// pushes request body bytes into it, and pulls the response out of it after each wake.
//
// Threading: an Exchange is created, fed, pulled and destroyed on its connection's executor only;
// the Waker must be called on that executor too (it never re-enters the HTTP library directly).
#pragma once

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace xb::net {

struct Header {
  std::string name;  // lower case
  std::string value;
};

enum class HttpVersion { kHttp1, kHttp2 };

// The client's IP address: the accepted socket's remote end (behind a proxy or balancer, the
// proxy's). IPv4 as an IPv4-mapped IPv6 address, so each address has one form.
struct PeerAddress {
  std::array<uint8_t, 16> bytes{};
  bool known = false;  // false: the socket had no remote end to read (closed meanwhile)
};

struct RequestHead {
  HttpVersion version = HttpVersion::kHttp2;
  std::string method;
  std::string path;
  std::vector<Header> headers;  // regular headers only, names lower case
  // The connection the request came on: an identity only, never dereferenced. Work for many
  // exchanges can be grouped by it (fanout wakes one connection's streams together).
  const void* connection = nullptr;
  PeerAddress peer = {};  // the connection's client address

  // First value of the header `name` (lower case), or nullptr.
  const std::string* Find(std::string_view name) const {
    for (const auto& h : headers) {
      if (h.name == name) {
        return &h.value;
      }
    }
    return nullptr;
  }
};

struct ResponseHead {
  int status = 200;
  std::vector<Header> headers;
};

class Exchange {
 public:
  virtual ~Exchange() = default;

  // Request side, in order: body chunks, then end (or a reset at any time).
  virtual void OnRequestBody(std::string_view bytes) = 0;
  virtual void OnRequestEnd() = 0;
  // The peer reset the stream or the connection closed before the response completed.
  virtual void OnReset() = 0;
  // The whole response (head, body, trailers) was handed to the socket.
  virtual void OnResponseComplete() = 0;

  // Response side, pulled by the connection after a wake.
  // True when the response body is sent as produced (HTTP/1.1: chunked); false when the
  // connection may wait for the complete body (HTTP/1.1: content-length).
  virtual bool streaming() const = 0;
  // nullptr until the response head is ready.
  virtual const ResponseHead* head() const = 0;
  // Moves up to `max` pending body bytes to `dst`; returns the count.
  virtual size_t PullBody(char* dst, size_t max) = 0;
  virtual size_t pending_body() const = 0;
  // True once no body bytes will follow those pending.
  virtual bool body_complete() const = 0;
  // HTTP/2 trailers sent after the body; empty = end the stream with the body.
  virtual const std::vector<Header>& trailers() const = 0;
  // True once the response can no longer be completed (its deadline passed or its reader stalled
  // with bytes still to send): the connection then resets the stream (HTTP/2 RST_STREAM CANCEL)
  // or closes (HTTP/1.1) when next woken, and calls OnReset.
  virtual bool cancelled() const { return false; }
};

using Waker = std::function<void()>;

class ExchangeFactory {
 public:
  virtual ~ExchangeFactory() = default;
  // Whether the request header `name` (lower case) should be kept in RequestHead; the others are
  // dropped while parsing, so a request costs no copies of headers nobody reads.
  virtual bool WantsHeader(std::string_view name) const = 0;

  // Called on the connection's executor when a request head is complete.
  virtual std::shared_ptr<Exchange> Start(RequestHead head, boost::asio::any_io_executor executor,
                                          Waker wake) = 0;
};

}  // namespace xb::net
