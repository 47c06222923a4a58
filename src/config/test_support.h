// Helpers shared by the config tests (not part of xb_config).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "config/load.h"

namespace xb::config::testing {

// An EnvLookup over a fixed map: the fake environment every test passes explicitly.
inline EnvLookup FakeEnv(std::map<std::string, std::string> vars = {}) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) {
      return std::nullopt;
    }
    return it->second;
  };
}

// The smallest document that loads: the two required keys, written as dotted keys at the root so
// that a test may append more root-level dotted keys (`server.listen = ...`) or whole tables
// (`[limits]`).
inline constexpr std::string_view kMinimal =
    "server.identifier = \"org.example.xmtp\"\n"
    "database.url = \"sqlite://./data/xmtp.db\"\n";

inline Result<Config> ParseMinimalWith(std::string_view extra, const EnvLookup& env = FakeEnv()) {
  return Parse(std::string(kMinimal) + std::string(extra) + "\n", env);
}

// Passes when `result` is a refusal in the CONF-065 shape that names `key` and contains none of
// `absent` (the offending values). Every refusal test goes through here.
// verifies: CONF-065
inline ::testing::AssertionResult Refused(const Result<Config>& result, std::string_view key,
                                          std::initializer_list<std::string_view> absent = {}) {
  if (result.ok()) {
    return ::testing::AssertionFailure() << "loaded, expected a refusal naming " << key;
  }
  const Status& status = result.status();
  const std::string& message = status.message();
  if (status.code() != StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "code is not kInvalidArgument: " << message;
  }
  if (message.rfind("configuration is invalid: ", 0) != 0) {
    return ::testing::AssertionFailure() << "not in the CONF-065 shape: " << message;
  }
  if (message.find(key) == std::string::npos) {
    return ::testing::AssertionFailure() << "does not name " << key << ": " << message;
  }
  for (std::string_view value : absent) {
    if (!value.empty() && message.find(value) != std::string::npos) {
      return ::testing::AssertionFailure() << "repeats the value " << value << ": " << message;
    }
  }
  if (message.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "not one line: " << message;
  }
  return ::testing::AssertionSuccess() << message;
}

}  // namespace xb::config::testing
