// A minimal Ethereum JSON-RPC client for smart-contract-wallet checks (VALIDATION.md 5.9):
// eth_call, eth_blockNumber and eth_getBlockByNumber against one chain's configured URL, POSTed
// through net/http_client (HTTP/1.1, system trust store). Every call has a deadline covering
// resolution, connect, TLS, write and read; a slow chain suspends only its caller. One connection
// per call (a client per call on the caller's executor; no pooling). Suspends.
//
// Failures are plain words that never include a URL, address or reply body (OPS-014).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "base/expected.h"

namespace xb::api {

struct RpcFailure {
  std::string message;
};

struct BlockInfo {
  uint64_t number = 0;
  uint64_t timestamp = 0;
};

// eth_call {data: call_data} with no `to` at `block` (nullopt: "latest"); the returned bytes.
boost::asio::awaitable<Expected<std::string, RpcFailure>> EthCall(
    std::string url, std::string call_data, std::optional<uint64_t> block,
    std::chrono::milliseconds timeout);

// eth_blockNumber.
boost::asio::awaitable<Expected<uint64_t, RpcFailure>> EthBlockNumber(
    std::string url, std::chrono::milliseconds timeout);

// eth_getBlockByNumber(block or "latest", false): nullopt when the chain returned null.
boost::asio::awaitable<Expected<std::optional<BlockInfo>, RpcFailure>> EthGetBlock(
    std::string url, std::optional<uint64_t> block, std::chrono::milliseconds timeout);

}  // namespace xb::api
