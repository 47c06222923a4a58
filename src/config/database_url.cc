#include "config/database_url.h"

#include <array>
#include <cstdint>

#include "base/ip_address.h"

namespace xb::config {
namespace {

bool IsAlnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}
bool IsUnreservedOrSubDelim(char c) {
  static constexpr std::string_view kOther = "-._~!$&'()*+,;=";
  return IsAlnum(c) || kOther.find(c) != std::string_view::npos;
}

// Every character accepted by `allowed`, or a well-formed %XX.
template <typename Allowed>
bool AllInClass(std::string_view text, Allowed allowed) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%') {
      if (i + 2 >= text.size() || !IsHex(text[i + 1]) || !IsHex(text[i + 2])) {
        return false;
      }
      i += 2;
    } else if (!allowed(text[i])) {
      return false;
    }
  }
  return true;
}

bool IsValidPort(std::string_view port) {
  if (port.empty() || port.size() > 5) {
    return false;
  }
  uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  return value <= 65535;
}

// One entry of the libpq host list: "", "host", "host:port", "[v6]", "[v6]:port", ":port".
bool IsValidHostEntry(std::string_view entry) {
  std::string_view port;
  bool has_port = false;
  if (!entry.empty() && entry.front() == '[') {
    size_t close = entry.find(']');
    std::array<uint8_t, 16> v6;
    if (close == std::string_view::npos || !ParseIpv6(entry.substr(1, close - 1), &v6)) {
      return false;
    }
    std::string_view after = entry.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return false;
      }
      has_port = true;
      port = after.substr(1);
    }
  } else {
    size_t colon = entry.find(':');
    if (colon != std::string_view::npos) {
      has_port = true;
      port = entry.substr(colon + 1);
    }
    // A reg-name; a Unix socket directory is written percent-encoded (%2Fvar%2Frun%2Fpostgresql).
    if (!AllInClass(entry.substr(0, colon), IsUnreservedOrSubDelim)) {
      return false;
    }
  }
  return !has_port || IsValidPort(port);
}

bool IsValidPostgresRest(std::string_view rest) {
  size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  std::string_view after = end == std::string_view::npos ? "" : rest.substr(end);

  size_t at = authority.find('@');
  if (at != std::string_view::npos) {
    if (!AllInClass(authority.substr(0, at),
                    [](char c) { return IsUnreservedOrSubDelim(c) || c == ':'; })) {
      return false;
    }
    authority.remove_prefix(at + 1);
  }
  while (true) {
    size_t comma = authority.find(',');
    if (!IsValidHostEntry(authority.substr(0, comma))) {
      return false;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    authority.remove_prefix(comma + 1);
  }

  std::string_view dbname;
  std::string_view params;
  if (!after.empty() && after.front() == '/') {
    size_t question = after.find('?');
    dbname = after.substr(1, question == std::string_view::npos ? after.npos : question - 1);
    params = question == std::string_view::npos ? "" : after.substr(question + 1);
  } else if (!after.empty()) {
    params = after.substr(1);  // after.front() == '?'
  }
  if (!AllInClass(dbname,
                  [](char c) { return IsUnreservedOrSubDelim(c) || c == ':' || c == '@'; })) {
    return false;
  }
  // libpq refuses a parameter without its '=' separator.
  while (!params.empty()) {
    size_t amp = params.find('&');
    std::string_view pair = params.substr(0, amp);
    size_t eq = pair.find('=');
    auto allowed = [](char c) {
      return (IsUnreservedOrSubDelim(c) && c != '&' && c != '=') || c == ':' || c == '@' ||
             c == '/' || c == '?';
    };
    if (eq == 0 || eq == std::string_view::npos || !AllInClass(pair.substr(0, eq), allowed) ||
        !AllInClass(pair.substr(eq + 1), allowed)) {
      return false;
    }
    if (amp == std::string_view::npos) {
      break;
    }
    params.remove_prefix(amp + 1);
  }
  return true;
}

}  // namespace

Result<DatabaseUrl> ParseDatabaseUrl(std::string_view url) {
  static constexpr std::string_view kSqlite = "sqlite://";
  static constexpr std::string_view kPostgres = "postgres://";
  static constexpr std::string_view kPostgresql = "postgresql://";
  DatabaseUrl result;
  if (url.substr(0, kSqlite.size()) == kSqlite) {
    std::string_view path = url.substr(kSqlite.size());
    if (path.empty()) {
      return InvalidArgument("the sqlite:// URL names no file");
    }
    for (char c : path) {
      auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7F) {
        return InvalidArgument("the sqlite:// path contains a control character");
      }
    }
    result.engine = DatabaseUrl::Engine::kSqlite;
    result.sqlite_path = std::string(path);
    return result;
  }
  std::string_view rest;
  if (url.substr(0, kPostgres.size()) == kPostgres) {
    rest = url.substr(kPostgres.size());
  } else if (url.substr(0, kPostgresql.size()) == kPostgresql) {
    rest = url.substr(kPostgresql.size());
  } else {
    return InvalidArgument("must start with postgres://, postgresql:// or sqlite://");
  }
  if (!IsValidPostgresRest(rest)) {
    return InvalidArgument("not a valid PostgreSQL connection URI");
  }
  result.engine = DatabaseUrl::Engine::kPostgres;
  return result;
}

}  // namespace xb::config
