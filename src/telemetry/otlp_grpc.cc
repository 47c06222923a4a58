#include "telemetry/otlp_grpc.h"

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

namespace xb::telemetry {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

std::string GrpcRequestBody(std::string_view message) {
  const auto n = static_cast<uint32_t>(message.size());
  std::string body;
  body.reserve(5 + message.size());
  body.push_back('\0');  // not compressed
  for (int shift = 24; shift >= 0; shift -= 8) {
    body.push_back(static_cast<char>((n >> shift) & 0xff));
  }
  body.append(message);
  return body;
}

namespace {

const std::string* FindField(const std::vector<net::Header>& fields, std::string_view name) {
  for (const auto& field : fields) {
    if (field.name == name) {
      return &field.value;
    }
  }
  return nullptr;
}

bool IsGrpcContentType(const std::string* value) {
  if (value == nullptr || !value->starts_with("application/grpc")) {
    return false;
  }
  const std::string_view rest = std::string_view(*value).substr(16);
  return rest.empty() || rest.front() == '+' || rest.front() == ';';
}

}  // namespace

GrpcVerdict JudgeGrpcAnswer(const net::HttpResponse& response) {
  if (response.status != 200) {
    return GrpcVerdict::kHttpStatus;
  }
  if (!IsGrpcContentType(response.Find("content-type"))) {
    return GrpcVerdict::kNotGrpc;
  }
  // A trailers-only answer carries grpc-status in its only header section.
  const std::string* status = FindField(response.trailers, "grpc-status");
  if (status == nullptr && response.trailers.empty()) {
    status = response.Find("grpc-status");
  }
  if (status == nullptr) {
    return GrpcVerdict::kNoStatus;
  }
  return *status == "0" ? GrpcVerdict::kOk : GrpcVerdict::kErrorStatus;
}

// The io_context is declared first so that it outlives the client and its connections.
struct OtlpGrpcChannel::State {
  asio::io_context io{1};
  std::unique_ptr<net::HttpClient> client;
};

OtlpGrpcChannel::OtlpGrpcChannel(std::string origin) : origin_(std::move(origin)) {}

OtlpGrpcChannel::~OtlpGrpcChannel() = default;

bool OtlpGrpcChannel::Call(std::string_view path, std::string_view message,
                           Clock::time_point deadline) {
  if (state_ == nullptr) {
    auto state = std::make_unique<State>();
    // The system roots, as every outbound connection (a context that cannot be made fails calls).
    auto client = net::HttpClient::Create(state->io.get_executor(),
                                          net::HttpClientOptions{.http2_only = true});
    if (!client.ok()) {
      return false;
    }
    state->client = std::move(client).value();
    state_ = std::move(state);
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  net::HttpRequest request{
      .method = "POST",
      .url = origin_ + std::string(path),
      .headers = {{"content-type", "application/grpc"},
                  {"te", "trailers"},
                  {"user-agent", "xmtp-backend"},
                  {"grpc-timeout", std::to_string(std::max<int64_t>(left.count(), 1)) + "m"}},
      .body = GrpcRequestBody(message),
      .deadline = deadline,
  };
  bool done = false;
  bool ok = false;
  net::HttpClient& client = *state_->client;
  // Named before it is spawned (GCC 12 coroutine bugs with temporaries).
  auto call = [&]() -> asio::awaitable<void> {
    auto answer = co_await client.Send(std::move(request));
    ok = answer.ok() && JudgeGrpcAnswer(*answer) == GrpcVerdict::kOk;
    done = true;
  };
  asio::io_context& io = state_->io;
  io.restart();
  io.poll();  // a kept connection's GOAWAY or close, read before the pool picks it
  io.restart();
  asio::co_spawn(io, call, asio::detached);
  // The client ends every request by its deadline; the margin is a backstop for that promise.
  const auto backstop = deadline + std::chrono::milliseconds(500);
  while (!done && io.run_one_until(backstop) > 0) {
  }
  if (!done) {
    state_.reset();  // the suspended call is destroyed with the io_context, never resumed
  }
  return ok;
}

}  // namespace xb::telemetry
