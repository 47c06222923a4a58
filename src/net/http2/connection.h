// One HTTP/2 server connection (RFC 9113) on nghttp2: the only includer of nghttp2. Each request
// stream becomes an Exchange; response bodies are pulled from the Exchange through a deferred data
// provider, so a slow handler never blocks the connection and a slow reader is flow-controlled.
//
// Threading: everything runs on the stream's executor; one reader and one writer coroutine.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/byte_buffer.h"
#include "base/token_bucket.h"
#include "net/byte_stream.h"
#include "net/connection.h"
#include "net/exchange.h"
#include "net/limits.h"

struct nghttp2_session;

namespace xb::net::http2 {

struct Options {
  uint32_t max_concurrent_streams = 100;  // limits.max_http2_streams
  ConnectionLimits limits;
  // The first request's HEADERS must have arrived by then (the handshake timeout, counted from
  // accept); later, limits.idle_timeout runs whenever no stream is open.
  std::chrono::steady_clock::time_point first_request_deadline =
      std::chrono::steady_clock::time_point::max();
  Observer* observer = nullptr;  // not owned; required
  PeerAddress peer = {};         // copied into each request head
};

class Connection final : public ServerConnection, public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::unique_ptr<ByteStream> stream, ExchangeFactory& factory, Options options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Serves the connection until either side closes it. `initial` holds bytes already read while
  // sniffing the protocol (starting with the client preface). Suspends.
  boost::asio::awaitable<void> Run(std::string initial);

  // Closes the socket; every open exchange is reset.
  void Close();
  void GracefulClose() override;
  void NotifyShutdown() override;

  struct Stream;  // per-stream state, defined in the .cc

 private:
  friend struct Callbacks;

  boost::asio::awaitable<void> WriteLoop();
  void Wake();
  void ResumeStream(int32_t stream_id);
  void SubmitPendingResponses();
  void ResetAllExchanges();
  // The idle (or first-request) deadline: armed while no stream is open; when it passes the
  // connection is closed gracefully (GOAWAY NO_ERROR).
  void ArmDeadline(std::chrono::steady_clock::time_point at, ConnectionEnd reason);
  // Arms the idle deadline once no stream has a response left to finish; when closing, wakes the
  // write loop.
  void ArmIdleDeadlineIfIdle();
  // Closing with only finished streams left: resets those the client has not ended within a
  // grace (RST_STREAM NO_ERROR), so a client that never ends them cannot hold the connection.
  void ResetFinishedStreamsAfterGrace();
  void OnDeadline();
  // Streams whose response is not complete yet.
  size_t UnfinishedStreams() const { return streams_.size() - awaiting_client_end_; }
  // Spends one control-frame token; false when the connection is flooding (GOAWAY queued).
  bool TakeControlFrame();

  std::unique_ptr<ByteStream> stream_;
  ExchangeFactory& factory_;
  Options options_;
  nghttp2_session* session_ = nullptr;
  boost::asio::steady_timer wake_timer_;
  bool wake_pending_ = false;
  bool closed_ = false;
  bool closing_ = false;  // GOAWAY sent: close once the output is flushed
  bool flooded_ = false;  // ended for a control-frame flood (GOAWAY ENHANCE_YOUR_CALM queued)
  boost::asio::steady_timer deadline_timer_;
  std::chrono::steady_clock::time_point deadline_;
  ConnectionEnd deadline_reason_ = ConnectionEnd::kHandshakeTimeout;
  TokenBucket control_frames_;
  std::vector<int32_t> to_resume_;
  std::vector<int32_t> resuming_;  // SubmitPendingResponses' scratch
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  size_t awaiting_client_end_ = 0;  // streams_ whose response is complete, client side open
  bool finished_streams_grace_armed_ = false;
  std::vector<std::unique_ptr<Stream>> retired_;  // reset by ResetAllExchanges, freed with us
  // A socket write: frames nghttp2 serializes, and DATA payloads copied straight from the
  // exchanges (NGHTTP2_DATA_FLAG_NO_COPY), so response bytes are copied once before the kernel.
  // Serialized into the thread's shared buffer where the stream can write at once (plain TCP);
  // this one holds TLS writes and what the socket did not take at once.
  ByteBuffer out_;
  size_t out_len_ = 0;  // bytes of the next write
  // Where the next write is serialized: the thread's shared buffer (WriteLoop), else out_.
  std::vector<char>* shared_out_ = nullptr;

  char* GrowOut(size_t n);
  char* out_data() { return shared_out_ != nullptr ? shared_out_->data() : out_.data(); }
};

}  // namespace xb::net::http2
