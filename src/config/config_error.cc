#include "config/config_error.h"

#include <cstdio>

namespace xb::config {
namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

}  // namespace

Status ConfigError(std::string_view key, std::string_view reason) {
  std::string message = "configuration is invalid: ";
  message.append(key);
  message.append(" (");
  message.append(reason);
  message.append(")");
  return InvalidArgument(std::move(message));
}

std::string EscapeForMessage(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte > 0x7E || c == '"' || c == '\\') {
      char buf[5];
      std::snprintf(buf, sizeof(buf), "\\x%02X", byte);
      out.append(buf);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string JoinKey(std::string_view parent, std::string_view key) {
  bool bare = !key.empty();
  for (char c : key) {
    bare = bare && IsBareKeyChar(c);
  }
  std::string out(parent);
  if (!out.empty()) {
    out.push_back('.');
  }
  if (bare) {
    out.append(key);
  } else {
    out.push_back('"');
    out.append(EscapeForMessage(key));
    out.push_back('"');
  }
  return out;
}

std::string JoinIndex(std::string_view parent, size_t index) {
  std::string out(parent);
  out.push_back('[');
  out.append(std::to_string(index));
  out.push_back(']');
  return out;
}

}  // namespace xb::config
