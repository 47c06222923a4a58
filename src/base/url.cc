#include "base/url.h"

#include <array>

#include "base/ip_address.h"

namespace xb {
namespace {

bool IsAlpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); }

bool IsUnreserved(char c) {
  return IsAlpha(c) || IsDigit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

bool IsSubDelim(char c) {
  switch (c) {
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
      return true;
    default:
      return false;
  }
}

// True when every character of `text` is accepted by `allowed` or is a well-formed
// percent-encoding. Sets *saw_percent when one was present.
template <typename Allowed>
bool AllInClass(std::string_view text, Allowed allowed, bool* saw_percent = nullptr) {
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size() || !IsHex(text[i + 1]) || !IsHex(text[i + 2])) {
        return false;
      }
      if (saw_percent != nullptr) {
        *saw_percent = true;
      }
      i += 2;
    } else if (!allowed(c)) {
      return false;
    }
  }
  return true;
}

bool IsPchar(char c) { return IsUnreserved(c) || IsSubDelim(c) || c == ':' || c == '@'; }

Status Malformed() { return InvalidArgument("not a valid URL"); }

// port = *DIGIT, at most 65535.
Status ParsePort(std::string_view port, Url& url) {
  uint32_t value = 0;
  for (char c : port) {
    if (!IsDigit(c)) {
      return Malformed();
    }
    value = value * 10 + static_cast<uint32_t>(c - '0');
    if (value > 65535) {
      return Malformed();
    }
  }
  url.port = static_cast<uint16_t>(value);
  return Status::Ok();
}

// authority = [ userinfo "@" ] host [ ":" port ], into `url`.
Status ParseAuthority(std::string_view authority, Url& url) {
  size_t at = authority.find('@');
  if (at != std::string_view::npos) {
    url.has_userinfo = true;
    if (!AllInClass(authority.substr(0, at),
                    [](char c) { return IsUnreserved(c) || IsSubDelim(c) || c == ':'; })) {
      return Malformed();
    }
    authority.remove_prefix(at + 1);
  }
  std::string_view port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Malformed();
    }
    std::string_view literal = authority.substr(1, close - 1);
    std::array<uint8_t, 16> v6;
    if (!ParseIpv6(literal, &v6)) {
      return Malformed();  // also IPvFuture ("v1.x") and zone ids
    }
    url.host_kind = Url::HostKind::kIpv6;
    url.host = std::string(literal);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        return Malformed();
      }
      has_port = true;
      port = after.substr(1);
    }
  } else {
    size_t port_colon = authority.find(':');
    std::string_view host = authority.substr(0, port_colon);
    if (port_colon != std::string_view::npos) {
      has_port = true;
      port = authority.substr(port_colon + 1);
    }
    std::array<uint8_t, 4> v4;
    if (ParseIpv4(host, &v4)) {
      url.host_kind = Url::HostKind::kIpv4;
    } else if (AllInClass(
                   host, [](char c) { return IsUnreserved(c) || IsSubDelim(c); },
                   &url.host_has_percent_encoding)) {
      url.host_kind = Url::HostKind::kRegName;
    } else {
      return Malformed();
    }
    url.host = std::string(host);
  }
  if (has_port && !port.empty()) {
    return ParsePort(port, url);
  }
  return Status::Ok();
}

}  // namespace

Result<Url> ParseUrl(std::string_view text) {
  Url url;
  // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || !IsAlpha(text[0])) {
    return Malformed();
  }
  for (char c : text.substr(0, colon)) {
    if (!IsAlpha(c) && !IsDigit(c) && c != '+' && c != '-' && c != '.') {
      return Malformed();
    }
  }
  url.scheme = std::string(text.substr(0, colon));
  std::string_view rest = text.substr(colon + 1);
  if (rest.substr(0, 2) != "//") {
    return Malformed();
  }
  rest.remove_prefix(2);

  // Fragment, then query, then the authority/path split.
  size_t hash = rest.find('#');
  if (hash != std::string_view::npos) {
    url.has_fragment = true;
    if (!AllInClass(rest.substr(hash + 1),
                    [](char c) { return IsPchar(c) || c == '/' || c == '?'; })) {
      return Malformed();
    }
    rest = rest.substr(0, hash);
  }
  size_t question = rest.find('?');
  if (question != std::string_view::npos) {
    url.has_query = true;
    if (!AllInClass(rest.substr(question + 1),
                    [](char c) { return IsPchar(c) || c == '/' || c == '?'; })) {
      return Malformed();
    }
    rest = rest.substr(0, question);
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (!AllInClass(path, [](char c) { return IsPchar(c) || c == '/'; })) {
    return Malformed();
  }
  url.path = std::string(path);
  XB_RETURN_IF_ERROR(ParseAuthority(authority, url));
  return url;
}

std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') {
      x = static_cast<char>(x - 'A' + 'a');
    }
    if (y >= 'A' && y <= 'Z') {
      y = static_cast<char>(y - 'A' + 'a');
    }
    if (x != y) {
      return false;
    }
  }
  return true;
}

bool IsHttpUrlWithHost(const Url& url) {
  return (EqualsIgnoreCase(url.scheme, "http") || EqualsIgnoreCase(url.scheme, "https")) &&
         !url.host.empty();
}

bool IsLoopbackHost(const Url& url) {
  switch (url.host_kind) {
    case Url::HostKind::kRegName:
      return EqualsIgnoreCase(url.host, "localhost");
    case Url::HostKind::kIpv4: {
      std::array<uint8_t, 4> v4;
      return ParseIpv4(url.host, &v4) && IsLoopbackIpv4(v4);
    }
    case Url::HostKind::kIpv6: {
      std::array<uint8_t, 16> v6;
      return ParseIpv6(url.host, &v6) && IsLoopbackIpv6(v6);
    }
  }
  return false;
}

std::string HostHeader(const Url& url) {
  const std::string host = url.host_kind == Url::HostKind::kIpv6 ? "[" + url.host + "]" : url.host;
  return url.port ? host + ":" + std::to_string(*url.port) : host;
}

std::string RequestTarget(std::string_view text) {
  const size_t authority = text.find("://") + 3;
  const size_t start = text.find_first_of("/?#", authority);
  std::string_view rest = start == std::string_view::npos ? "" : text.substr(start);
  rest = rest.substr(0, rest.find('#'));
  return rest.empty() || rest.front() != '/' ? "/" + std::string(rest) : std::string(rest);
}

}  // namespace xb
