// config_schema_probe: the loader's verdicts, for tests/config/test_schema_drift.py, which checks
// docs/schema/config.schema.json against them. Reads TOML documents separated by NUL bytes from
// stdin, loads each with config::Parse (env:NAME from this process's environment), and writes one
// line per document: "ok <dump>", where <dump> holds every field of the loaded Config (walked with
// Boost.PFR, so a field added to config.h is dumped without touching this file), or
// "err <message>". A test tool only: built with the tests, never installed.
#include <boost/pfr.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "config/config.h"
#include "config/load.h"

namespace xb::config {
namespace {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsMap : std::false_type {};
template <typename K, typename V>
struct IsMap<std::map<K, V>> : std::true_type {};
template <typename T>
struct IsDuration : std::false_type {};
template <typename R, typename P>
struct IsDuration<std::chrono::duration<R, P>> : std::true_type {};

// A JSON-style quoted string: the dump stays one line whatever the value holds.
void AppendQuoted(const std::string& text, std::string* out) {
  out->push_back('"');
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || byte < 0x20 || byte == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", byte);
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

template <typename T>
void Dump(const T& value, std::string* out) {
  if constexpr (std::is_same_v<T, std::string>) {
    AppendQuoted(value, out);
  } else if constexpr (std::is_same_v<T, bool>) {
    out->append(value ? "true" : "false");
  } else if constexpr (std::is_enum_v<T>) {
    out->append(std::to_string(static_cast<int>(value)));
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", value);
    out->append(buf);
  } else if constexpr (std::is_integral_v<T>) {
    out->append(std::to_string(value));
  } else if constexpr (IsDuration<T>::value) {
    out->append(std::to_string(value.count()));
  } else if constexpr (IsOptional<T>::value) {
    if (value.has_value()) {
      Dump(*value, out);
    } else {
      out->append("null");
    }
  } else if constexpr (IsVector<T>::value || IsMap<T>::value) {
    out->push_back('[');
    for (const auto& element : value) {
      Dump(element, out);
      out->push_back(',');
    }
    out->push_back(']');
  } else if constexpr (std::is_same_v<T, std::pair<const std::string, std::string>>) {
    Dump(value.first, out);
    out->push_back(':');
    Dump(value.second, out);
  } else {
    // Every other type is one of config.h's plain structs.
    static_assert(std::is_aggregate_v<T>, "a Config field type the dump does not know");
    out->push_back('{');
    boost::pfr::for_each_field(value, [out](const auto& field) {
      Dump(field, out);
      out->push_back(',');
    });
    out->push_back('}');
  }
}

}  // namespace
}  // namespace xb::config

int main() {
  std::string input{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  xb::config::EnvLookup env = xb::config::ProcessEnv();
  size_t start = 0;
  while (start < input.size()) {
    size_t end = input.find('\0', start);
    if (end == std::string::npos) {
      end = input.size();
    }
    xb::Result<xb::config::Config> loaded =
        xb::config::Parse(input.substr(start, end - start), env);
    std::string line;
    if (loaded.ok()) {
      line = "ok ";
      xb::config::Dump(*loaded, &line);
    } else {
      line = "err " + loaded.status().message();
    }
    std::cout << line << '\n';
    start = end + 1;
  }
  return 0;
}
