#include "push/apns_channel.h"

#include <boost/json.hpp>

#include "base/encoding.h"
#include "push/body.h"

namespace xb::push {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::chrono::milliseconds kTransientDelay{1000};

bool IsHexToken(std::string_view token) {
  if (token.empty()) {
    return false;
  }
  for (char c : token) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) {
      return false;
    }
  }
  return true;
}

// `reason` of the JSON answer body ({"reason":"..."}), or "".
std::string Reason(const std::string& body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  const json::object* object = ec ? nullptr : doc.if_object();
  const json::value* reason = object == nullptr ? nullptr : object->if_contains("reason");
  return reason != nullptr && reason->is_string() ? std::string(reason->get_string()) : "";
}

AttemptResult Transient() { return AttemptResult{AnswerClass::kTransient, kTransientDelay}; }
AttemptResult Final(AnswerClass answer) { return AttemptResult{answer, kTransientDelay}; }

// The 9.2 outcome table without its ExpiredProviderToken row (the caller's), first match wins.
AttemptResult Classify(const Expected<net::HttpResponse, net::HttpError>& answer) {
  if (!answer.ok()) {
    // timeout, connection, TLS, unreadable or oversized body: transient. A request the client
    // refused to send cannot get better by waiting.
    return answer.error().kind == net::HttpErrorKind::kInvalidRequest
               ? Final(AnswerClass::kRejected)
               : Transient();
  }
  const unsigned status = answer->status;
  if (status == 200) {
    return Final(AnswerClass::kDelivered);
  }
  const std::string reason = Reason(answer->body);
  if (status == 410 && (reason == "Unregistered" || reason == "ExpiredToken")) {
    return Final(AnswerClass::kTerminal);
  }
  if (status == 400 && (reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic")) {
    return Final(AnswerClass::kMismatch);
  }
  if (status == 429 || status == 500 || status == 503) {
    return Transient();
  }
  return Final(AnswerClass::kRejected);  // other 2xx too
}

bool IsExpiredProviderToken(const Expected<net::HttpResponse, net::HttpError>& answer) {
  return answer.ok() && answer->status == 403 && Reason(answer->body) == "ExpiredProviderToken";
}

}  // namespace

Expected<std::unique_ptr<ApnsChannel>, std::string> ApnsChannel::Create(
    asio::any_io_executor executor, const config::ApnsConfig& config, ProviderOptions options) {
  XB_TRY(auto tokens, ApnsTokenSource::Create(config, ClockOf(options)));
  XB_TRY(auto client, net::HttpClient::Create(std::move(executor),
                                              net::HttpClientOptions{
                                                  .ca_file = options.ca_file,
                                                  .static_hosts = std::move(options.static_hosts),
                                                  .offer_http2 = true,
                                              }));
  // PUSH.md 9.2: the host follows the environment and nothing else.
  std::string origin = config.environment == "sandbox" ? "https://api.sandbox.push.apple.com"
                                                       : "https://api.push.apple.com";
  return std::unique_ptr<ApnsChannel>(
      new ApnsChannel(std::move(client), std::move(tokens), std::move(origin), config.bundle_id));
}

ApnsChannel::ApnsChannel(std::unique_ptr<net::HttpClient> client,
                         std::unique_ptr<ApnsTokenSource> tokens, std::string origin,
                         std::string bundle_id)
    : client_(std::move(client)),
      tokens_(std::move(tokens)),
      origin_(std::move(origin)),
      bundle_id_(std::move(bundle_id)) {}

asio::awaitable<Expected<net::HttpResponse, net::HttpError>> ApnsChannel::Send(
    const std::string& device_token, const PushMessage& message, const std::string& token,
    std::chrono::steady_clock::time_point deadline) {
  const std::string topic = Base64(message.topic);
  net::HttpRequest request{
      .method = "POST",
      .url = origin_ + "/3/device/" + device_token,
      .headers = {{"authorization", "bearer " + token},
                  {"content-type", "application/json"},
                  {"apns-topic", bundle_id_},
                  {"apns-push-type", "background"},
                  {"apns-priority", "5"},
                  {"apns-collapse-id", topic}},
      .body = ApnsBody(message.topic, message.sequence_id),
      .deadline = deadline,
      .max_body_bytes = kMaxBodyBytes,
      .redirects = net::RedirectPolicy::kReturn,
  };
  co_return co_await client_->Send(std::move(request));
}

// implements: PUSH-259
asio::awaitable<AttemptResult> ApnsChannel::Attempt(
    const Target& target, const PushMessage& message,
    std::chrono::steady_clock::time_point deadline) {
  if (!IsHexToken(target.delivery)) {
    co_return Final(AnswerClass::kRejected);  // pre-check: no request
  }
  const std::string device_token = target.delivery;
  const PushMessage pushed = message;
  for (int round = 0; round < 2; ++round) {
    auto token = tokens_->Token();
    if (!token.ok()) {
      co_return Transient();  // a signing failure (remembered for 1 s)
    }
    auto answer = co_await Send(device_token, pushed, *token, deadline);
    if (!IsExpiredProviderToken(answer)) {
      co_return Classify(answer);
    }
    // Apple says the token expired: sign a new one and resend once in this attempt.
    tokens_->Discard(*token);
  }
  co_return Final(AnswerClass::kRejected);  // a second ExpiredProviderToken
}

}  // namespace xb::push
