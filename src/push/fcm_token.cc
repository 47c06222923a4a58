#include "push/fcm_token.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "config/json_members.h"
#include "push/body.h"

namespace xb::push {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::string_view kScope = "https://www.googleapis.com/auth/firebase.messaging";
constexpr std::string_view kGrantType = "urn:ietf:params:oauth:grant-type:jwt-bearer";
constexpr int64_t kAssertionLifetime = 3600;
constexpr int64_t kMaxTokenLife = 3600;

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// application/x-www-form-urlencoded value: unreserved characters as they are, the rest %XX.
std::string FormEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::optional<double> Number(const json::value* v) {
  if (v == nullptr) {
    return std::nullopt;
  }
  if (v->is_int64()) {
    return static_cast<double>(v->get_int64());
  }
  if (v->is_uint64()) {
    return static_cast<double>(v->get_uint64());
  }
  if (v->is_double()) {
    return v->get_double();
  }
  return std::nullopt;
}

struct Granted {
  std::string access_token;
  int64_t expires_in = 0;
};

// PUSH.md 9.3 accept rules: 200; access_token non-empty; token_type Bearer (any case);
// expires_in > 20.
Result<Granted> Accept(const net::HttpResponse& response) {
  const Status kRefused = Unavailable("the token endpoint did not grant a token");
  if (response.status != 200) {
    return kRefused;
  }
  boost::system::error_code ec;
  json::value doc = json::parse(response.body, ec);
  const json::object* object = ec ? nullptr : doc.if_object();
  if (object == nullptr) {
    return kRefused;
  }
  const json::value* token = object->if_contains("access_token");
  const json::value* type = object->if_contains("token_type");
  const std::optional<double> expires_in = Number(object->if_contains("expires_in"));
  if (token == nullptr || !token->is_string() || token->get_string().empty() || type == nullptr ||
      !type->is_string() || !EqualsIgnoreCase(type->get_string(), "Bearer") || !expires_in ||
      *expires_in <= 20) {
    return kRefused;
  }
  return Granted{std::string(token->get_string()),
                 static_cast<int64_t>(std::min(*expires_in, 1e9))};
}

}  // namespace

Expected<ServiceAccount, std::string> ParseServiceAccount(std::string_view json_text) {
  auto members = config::TopLevelStringMembers(json_text);
  if (!members.ok()) {
    return std::string("the service account is not a JSON object");
  }
  auto member = [&](const char* name) {
    auto it = members->find(name);
    return it == members->end() ? std::string() : it->second;
  };
  ServiceAccount account{member("project_id"), member("client_email"), member("private_key"),
                         member("token_uri")};
  if (account.project_id.empty() || account.client_email.empty() || account.token_uri.empty()) {
    return std::string("the service account lacks a required member");
  }
  return account;
}

Expected<std::unique_ptr<FcmTokenSource>, std::string> FcmTokenSource::Create(
    const ServiceAccount& account, net::HttpClient& client, WallClock clock) {
  XB_TRY(auto key, SigningKey::FromPem(account.private_key, JwtAlgorithm::kRs256));
  return std::unique_ptr<FcmTokenSource>(
      new FcmTokenSource(std::move(key), account, client, std::move(clock)));
}

FcmTokenSource::FcmTokenSource(std::unique_ptr<SigningKey> key, ServiceAccount account,
                               net::HttpClient& client, WallClock clock)
    : key_(std::move(key)),
      account_(std::move(account)),
      client_(client),
      clock_(std::move(clock)) {}

// implements: PUSH-259
asio::awaitable<Result<std::string>> FcmTokenSource::Token(
    std::chrono::steady_clock::time_point deadline) {
  const auto now = clock_();
  if (token_.has_value() && now < refresh_at_) {
    co_return *token_;
  }
  if (failed_at_.has_value() && now >= *failed_at_ && now - *failed_at_ < kFailureMemory) {
    co_return Unavailable("the access token exchange failed");
  }
  if (running_ != nullptr) {
    co_return co_await Await(running_, deadline);  // share the exchange already in flight
  }
  auto exchange = std::make_shared<Exchange>();
  running_ = exchange;
  auto result = co_await Run(deadline);
  if (result.ok()) {
    failed_at_.reset();
  } else {
    token_.reset();
    failed_at_ = clock_();
  }
  exchange->result = result;
  running_.reset();
  for (asio::steady_timer* waiter : exchange->waiters) {
    waiter->cancel();
  }
  co_return result;
}

asio::awaitable<Result<std::string>> FcmTokenSource::Await(
    std::shared_ptr<Exchange> exchange, std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_at(deadline);
  exchange->waiters.push_back(&timer);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  std::erase(exchange->waiters, &timer);
  if (exchange->result.has_value()) {
    co_return *exchange->result;
  }
  co_return Unavailable("the access token exchange did not finish in time");
}

asio::awaitable<Result<std::string>> FcmTokenSource::Run(
    std::chrono::steady_clock::time_point deadline) {
  const int64_t iat = UnixSeconds(clock_());
  // PUSH.md 9.3: exactly these claims.
  const std::string claims = "{\"iss\":\"" + JsonEscape(account_.client_email) + "\",\"scope\":\"" +
                             std::string(kScope) + "\",\"aud\":\"" +
                             JsonEscape(account_.token_uri) + "\",\"iat\":" + std::to_string(iat) +
                             ",\"exp\":" + std::to_string(iat + kAssertionLifetime) + "}";
  XB_TRY_CO(std::string assertion, key_->SignJwt(R"({"alg":"RS256","typ":"JWT"})", claims));
  net::HttpRequest request{
      .method = "POST",
      .url = account_.token_uri,
      .headers = {{"content-type", "application/x-www-form-urlencoded"}},
      .body = "grant_type=" + FormEncode(kGrantType) + "&assertion=" + FormEncode(assertion),
      .deadline = deadline,
      .max_body_bytes = kMaxBodyBytes,
      .redirects = net::RedirectPolicy::kReturn,  // a 3xx is not a 200: refused
  };
  auto response = co_await client_.Send(std::move(request));
  if (!response.ok()) {
    co_return Unavailable("the access token exchange failed: " + response.error().message);
  }
  XB_TRY_CO(Granted granted, Accept(*response));
  const auto obtained = clock_();
  token_ = std::move(granted.access_token);
  refresh_at_ =
      obtained + std::chrono::seconds(std::min(granted.expires_in, kMaxTokenLife)) - kMargin;
  co_return *token_;
}

}  // namespace xb::push
