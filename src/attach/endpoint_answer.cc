#include "attach/endpoint_answer.h"

#include <boost/json.hpp>
#include <fstream>
#include <iterator>

#include "attach/iso8601.h"

namespace xb::attach {

namespace json = boost::json;

namespace {

constexpr size_t kMaxFileBytes = 64 * 1024;
constexpr size_t kMaxAnswerBytes = 64 * 1024;

std::optional<std::string> StringMember(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr || !value->is_string()) {
    return std::nullopt;
  }
  return std::string(value->get_string());
}

}  // namespace

CredentialError Unavailable(std::string_view words) {
  return CredentialError{.kind = CredentialFailure::kUnavailable, .message = std::string(words)};
}

CredentialError InvalidConfiguration(std::string_view words) {
  return CredentialError{.kind = CredentialFailure::kInvalidConfiguration,
                         .message = std::string(words)};
}

std::optional<std::string> EnvValue(const ProviderContext& context, const std::string& name) {
  if (!context.env) {
    return std::nullopt;
  }
  std::optional<std::string> value = context.env(name);
  if (!value || value->empty()) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::string text;
  char buffer[4096];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxFileBytes) {
      return std::nullopt;
    }
  }
  if (in.bad()) {
    return std::nullopt;
  }
  return text;
}

std::string GeneratedSessionName(WallClock::time_point now) {
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  return "xmtp-backend-" + std::to_string(seconds);
}

CredentialResult ParseJsonCredentials(std::string_view body, std::string_view unusable) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  const json::object* object = ec ? nullptr : doc.if_object();
  if (object == nullptr) {
    return Unavailable(unusable);
  }
  AwsCredentials credentials;
  std::optional<std::string> key = StringMember(*object, "AccessKeyId");
  std::optional<std::string> secret = StringMember(*object, "SecretAccessKey");
  if (!key || key->empty() || !secret || secret->empty()) {
    return Unavailable(unusable);
  }
  credentials.access_key_id = std::move(*key);
  credentials.secret_access_key = std::move(*secret);
  if (object->contains("Token")) {
    std::optional<std::string> token = StringMember(*object, "Token");
    if (!token) {
      return Unavailable(unusable);
    }
    credentials.session_token = std::move(*token);
  }
  if (object->contains("Expiration")) {
    std::optional<std::string> text = StringMember(*object, "Expiration");
    credentials.expiry = text ? ParseIso8601(*text) : std::nullopt;
    if (!credentials.expiry) {
      return Unavailable(unusable);
    }
  }
  return credentials;
}

boost::asio::awaitable<Expected<net::HttpResponse, CredentialError>> SendRequest(
    net::HttpClient* http, net::HttpRequest request, std::chrono::milliseconds timeout,
    std::string_view no_answer) {
  request.deadline = std::chrono::steady_clock::now() + timeout;
  request.max_body_bytes = kMaxAnswerBytes;
  request.redirects = net::RedirectPolicy::kRefuse;
  auto response = co_await http->Send(std::move(request));
  if (!response.ok()) {
    co_return Unavailable(no_answer);
  }
  co_return std::move(response).value();
}

}  // namespace xb::attach
