// Test-only: runs one CredentialProvider::Fetch to completion on a fresh io_context (or on the
// given one, running it until the fetch is done, 20 s at most: a fetch that never ends fails).
#pragma once

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "attach/credentials.h"

namespace xb::attach::testing {

inline CredentialResult RunFetch(CredentialProvider& provider, boost::asio::io_context& io) {
  std::optional<CredentialResult> result;
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { result.emplace(co_await provider.Fetch()); },
      boost::asio::detached);
  io.restart();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!result.has_value() && std::chrono::steady_clock::now() < give_up) {
    io.run_one_for(std::chrono::milliseconds(50));
  }
  if (!result.has_value()) {
    return CredentialError{CredentialFailure::kUnavailable, "the test fetch did not finish"};
  }
  return std::move(*result);
}

inline CredentialResult RunFetch(CredentialProvider& provider) {
  boost::asio::io_context io;
  return RunFetch(provider, io);
}

// An environment made of a map, for ProviderContext::env.
inline EnvironmentLookup MapEnvironment(const std::map<std::string, std::string>* variables) {
  return [variables](const std::string& name) -> std::optional<std::string> {
    const auto found = variables->find(name);
    if (found == variables->end()) {
      return std::nullopt;
    }
    return found->second;
  };
}

}  // namespace xb::attach::testing
