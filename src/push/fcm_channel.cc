#include "push/fcm_channel.h"

#include <boost/json.hpp>

#include "push/body.h"
#include "push/retry_after.h"

namespace xb::push {

namespace asio = boost::asio;
namespace json = boost::json;
using std::chrono::seconds;

namespace {

constexpr seconds kQuotaDelay{60};
constexpr seconds kOtherDelay{10};
constexpr seconds kMaxDelay{300};
constexpr std::string_view kFcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError";
constexpr std::string_view kQuotaFailureType = "type.googleapis.com/google.rpc.QuotaFailure";

// What the error body's details[] say: a QuotaFailure entry, and the FcmError errorCode.
struct Details {
  bool quota_failure = false;
  std::string fcm_error;  // "" when no typed FcmError entry
};

Details ReadDetails(const std::string& body) {
  Details out;
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  const json::object* root = ec ? nullptr : doc.if_object();
  const json::value* error = root == nullptr ? nullptr : root->if_contains("error");
  const json::object* error_object = error == nullptr ? nullptr : error->if_object();
  const json::value* details =
      error_object == nullptr ? nullptr : error_object->if_contains("details");
  const json::array* entries = details == nullptr ? nullptr : details->if_array();
  if (entries == nullptr) {
    return out;
  }
  for (const json::value& entry : *entries) {
    const json::object* e = entry.if_object();
    const json::value* type = e == nullptr ? nullptr : e->if_contains("@type");
    if (type == nullptr || !type->is_string()) {
      continue;
    }
    if (type->get_string() == kQuotaFailureType) {
      out.quota_failure = true;
    } else if (type->get_string() == kFcmErrorType && out.fcm_error.empty()) {
      const json::value* code = e->if_contains("errorCode");
      if (code != nullptr && code->is_string()) {
        out.fcm_error = std::string(code->get_string());
      }
    }
  }
  return out;
}

AttemptResult Transient(seconds floor, std::optional<seconds> retry_after) {
  const seconds delay = std::min(std::max(floor, retry_after.value_or(seconds(0))), kMaxDelay);
  return AttemptResult{AnswerClass::kTransient, delay};
}
AttemptResult Final(AnswerClass answer) { return AttemptResult{answer, seconds(1)}; }

// The 9.3 outcome table, first match wins.
AttemptResult Classify(const Expected<net::HttpResponse, net::HttpError>& answer,
                       std::chrono::system_clock::time_point now) {
  if (!answer.ok()) {
    if (answer.error().kind == net::HttpErrorKind::kInvalidRequest) {
      return Final(AnswerClass::kRejected);
    }
    return Transient(kOtherDelay, std::nullopt);  // timeout, connection, oversized body
  }
  const unsigned status = answer->status;
  if (status == 200) {
    return Final(AnswerClass::kDelivered);
  }
  std::optional<seconds> retry_after;
  if (const std::string* value = answer->Find("retry-after")) {
    retry_after = ParseRetryAfter(*value, now);
  }
  const Details details = ReadDetails(answer->body);
  if (status == 429 || details.quota_failure || details.fcm_error == "QUOTA_EXCEEDED") {
    return Transient(kQuotaDelay, retry_after);
  }
  if (status == 500 || status == 503) {
    return Transient(kOtherDelay, retry_after);
  }
  if (details.fcm_error == "UNREGISTERED") {
    return Final(AnswerClass::kTerminal);
  }
  if (details.fcm_error == "SENDER_ID_MISMATCH") {
    return Final(AnswerClass::kMismatch);
  }
  if (details.fcm_error == "UNAVAILABLE" || details.fcm_error == "INTERNAL") {
    return Transient(kOtherDelay, retry_after);
  }
  return Final(AnswerClass::kRejected);
}

}  // namespace

Expected<std::unique_ptr<FcmChannel>, std::string> FcmChannel::Create(
    asio::any_io_executor executor, const config::FcmConfig& config, ProviderOptions options) {
  XB_TRY(ServiceAccount account, ParseServiceAccount(config.service_account));
  XB_TRY(auto client, net::HttpClient::Create(std::move(executor),
                                              net::HttpClientOptions{
                                                  .ca_file = options.ca_file,
                                                  .static_hosts = std::move(options.static_hosts),
                                                  .offer_http2 = true,
                                              }));
  const WallClock clock = ClockOf(options);
  std::unique_ptr<FcmChannel> channel(new FcmChannel(
      std::move(client),
      "https://fcm.googleapis.com/v1/projects/" + account.project_id + "/messages:send", clock));
  XB_TRY(channel->tokens_, FcmTokenSource::Create(account, *channel->client_, clock));
  return channel;
}

FcmChannel::FcmChannel(std::unique_ptr<net::HttpClient> client, std::string send_url,
                       WallClock clock)
    : client_(std::move(client)), send_url_(std::move(send_url)), clock_(std::move(clock)) {}

// implements: PUSH-259
asio::awaitable<AttemptResult> FcmChannel::Attempt(const Target& target, const PushMessage& message,
                                                   std::chrono::steady_clock::time_point deadline) {
  std::string body = FcmBody(target.delivery, message.topic, message.sequence_id);
  auto token = co_await tokens_->Token(deadline);
  if (!token.ok()) {
    co_return Transient(kOtherDelay, std::nullopt);  // no send without a token
  }
  net::HttpRequest request{
      .method = "POST",
      .url = send_url_,
      .headers = {{"authorization", "Bearer " + *token}, {"content-type", "application/json"}},
      .body = std::move(body),
      .deadline = deadline,
      .max_body_bytes = kMaxBodyBytes,
      .redirects = net::RedirectPolicy::kReturn,  // a 3xx is "anything else": rejected
  };
  auto answer = co_await client_->Send(std::move(request));
  co_return Classify(answer, clock_());
}

}  // namespace xb::push
