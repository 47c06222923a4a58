#include "server/test_hooks.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "grpc/health/v1/health.pb.h"
#include "rpc/unary.h"

namespace xb::server {

namespace {

namespace asio = boost::asio;

struct IdentityGate {
  std::mutex mu;
  bool armed = false;                          // GUARDED_BY(mu)
  uint64_t parked = 0;                         // GUARDED_BY(mu)
  std::vector<std::function<void()>> release;  // GUARDED_BY(mu)
};

IdentityGate& Gate() {
  static IdentityGate gate;
  return gate;
}

uint64_t Decimal(const std::string& s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

}  // namespace

asio::awaitable<void> IdentityCommitGate() {
  auto executor = co_await asio::this_coro::executor;
  auto timer = std::make_shared<asio::steady_timer>(executor, std::chrono::seconds(30));
  {
    IdentityGate& gate = Gate();
    std::lock_guard lock(gate.mu);
    if (!gate.armed) {
      co_return;
    }
    ++gate.parked;
    gate.release.push_back(
        [executor, timer] { asio::post(executor, [timer] { timer->cancel(); }); });
  }
  co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
}

void AddTestHooks(rpc::Router& router) {
  using grpc::health::v1::HealthCheckRequest;
  using grpc::health::v1::HealthCheckResponse;
  router.Add("/xb.test.v1.TestService/Sleep", rpc::CallKind::kUnary,
             rpc::Unary<HealthCheckRequest, HealthCheckResponse>(
                 [](const HealthCheckRequest& request,
                    rpc::Call& call) -> boost::asio::awaitable<Result<HealthCheckResponse>> {
                   uint64_t ms = 0;
                   const auto& s = request.service();
                   std::from_chars(s.data(), s.data() + s.size(), ms);
                   if (!co_await call.SleepFor(std::chrono::milliseconds(ms))) {
                     co_return Status(StatusCode::kCancelled, "call ended");
                   }
                   HealthCheckResponse response;
                   response.set_status(HealthCheckResponse::SERVING);
                   co_return response;
                 },
                 /*max_response_bytes=*/0));
  auto simple = [&router](const char* path, auto fn) {
    router.Add(path, rpc::CallKind::kUnary,
               rpc::Unary<HealthCheckRequest, HealthCheckResponse>(
                   [fn](const HealthCheckRequest& request,
                        rpc::Call&) -> boost::asio::awaitable<Result<HealthCheckResponse>> {
                     HealthCheckResponse response;
                     response.set_status(fn(request.service()) ? HealthCheckResponse::SERVING
                                                               : HealthCheckResponse::NOT_SERVING);
                     co_return response;
                   },
                   /*max_response_bytes=*/0));
  };
  simple("/xb.test.v1.TestService/HoldIdentityCommits", [](const std::string&) {
    std::lock_guard lock(Gate().mu);
    Gate().armed = true;
    Gate().parked = 0;
    return true;
  });
  simple("/xb.test.v1.TestService/ParkedIdentityCommits", [](const std::string& s) {
    std::lock_guard lock(Gate().mu);
    return Gate().parked >= Decimal(s);
  });
  simple("/xb.test.v1.TestService/ReleaseIdentityCommits", [](const std::string&) {
    std::vector<std::function<void()>> release;
    {
      std::lock_guard lock(Gate().mu);
      Gate().armed = false;
      release.swap(Gate().release);
    }
    for (auto& r : release) {
      r();
    }
    return true;
  });
}

std::map<std::string, asio::ip::tcp::endpoint, std::less<>> ProviderPinsFromEnvironment() {
  std::map<std::string, asio::ip::tcp::endpoint, std::less<>> pins;
  const char* env = std::getenv("XB_TEST_PROVIDER_PINS");
  std::string_view rest = env != nullptr ? env : "";
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t equals = entry.find('=');
    const size_t colon = entry.rfind(':');
    boost::system::error_code ec;
    asio::ip::address address;
    uint16_t port = 0;
    if (equals != std::string_view::npos && colon != std::string_view::npos && colon > equals) {
      address =
          asio::ip::make_address(std::string(entry.substr(equals + 1, colon - equals - 1)), ec);
      const std::string_view digits = entry.substr(colon + 1);
      if (std::from_chars(digits.data(), digits.data() + digits.size(), port).ec != std::errc()) {
        port = 0;
      }
    }
    if (equals == std::string_view::npos || colon == std::string_view::npos || ec || port == 0) {
      std::fputs("XB_TEST_PROVIDER_PINS: an entry is not host=address:port; skipped\n", stderr);
      continue;
    }
    pins.emplace(std::string(entry.substr(0, equals)), asio::ip::tcp::endpoint(address, port));
  }
  return pins;
}

}  // namespace xb::server
