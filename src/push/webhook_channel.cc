#include "push/webhook_channel.h"

#include "net/http_client.h"
#include "net/tls_client.h"
#include "push/body.h"

namespace xb::push {

namespace asio = boost::asio;

namespace {

constexpr std::chrono::milliseconds kDelay{1000};

AttemptResult Answer(AnswerClass answer) { return AttemptResult{answer, kDelay}; }

// The 9.4 outcome table.
AttemptResult Classify(const Expected<net::HttpResponse, net::HttpError>& answer) {
  if (!answer.ok()) {
    switch (answer.error().kind) {
      case net::HttpErrorKind::kVetoed:  // a resolved address is in a blocked class
      case net::HttpErrorKind::kInvalidRequest:
      case net::HttpErrorKind::kRedirect:
        return Answer(AnswerClass::kRejected);
      default:  // DNS failure, timeout, connection, TLS, a broken or oversized answer
        return Answer(AnswerClass::kTransient);
    }
  }
  const unsigned status = answer->status;
  if (status >= 200 && status <= 299) {
    return Answer(AnswerClass::kDelivered);
  }
  if (status == 404 || status == 410) {
    return Answer(AnswerClass::kGone);
  }
  if (status >= 500 && status <= 599) {
    return Answer(AnswerClass::kTransient);
  }
  return Answer(AnswerClass::kRejected);  // 1xx, 3xx, other 4xx (400, 429...)
}

}  // namespace

Expected<std::unique_ptr<WebhookChannel>, std::string> WebhookChannel::Create(
    asio::any_io_executor executor, const config::HttpPushConfig& config,
    const ProviderOptions& options) {
  XB_TRY(auto tls, net::MakeClientTlsContext(net::TlsClientOptions{.ca_file = options.ca_file,
                                                                   .alpn = {"h2", "http/1.1"}}));
  DestinationRules rules{
      .allowed_domains = config.allowed_domains.value_or(std::vector<std::string>{}),
      .allow_private_addresses = config.allow_private_addresses};
  return std::unique_ptr<WebhookChannel>(
      new WebhookChannel(std::move(executor), std::move(rules), std::move(tls), ClockOf(options)));
}

WebhookChannel::WebhookChannel(asio::any_io_executor executor, DestinationRules rules,
                               std::shared_ptr<asio::ssl::context> tls, WallClock clock)
    : executor_(std::move(executor)),
      rules_(std::move(rules)),
      tls_(std::move(tls)),
      clock_(std::move(clock)) {}

// implements: PUSH-256, PUSH-259, PUSH-235
asio::awaitable<AttemptResult> WebhookChannel::Attempt(
    const Target& target, const PushMessage& message,
    std::chrono::steady_clock::time_point deadline) {
  // Pre-checks of every attempt (PUSH.md 9.4): a failure is rejected, with no request.
  const std::string url = target.delivery;
  auto parsed = ParseWebhookUrl(url);
  if (!parsed.ok() || !MatchesAllowedDomains(parsed->host, rules_.allowed_domains) ||
      !target.signing_key.has_value() || target.signing_key->empty()) {
    co_return Answer(AnswerClass::kRejected);
  }
  const std::string key = *target.signing_key;
  const std::string body = WebhookBody(message.topic, message.sequence_id, target.recipient_id);

  // PUSH-256: the addresses this attempt's resolution returned are checked here and are the only
  // ones connected to. A name that did not resolve keeps its resolve error (transient).
  net::ResolveHook check = [rules = rules_](std::string_view, net::ResolvedAddresses addresses)
      -> Expected<net::ResolvedAddresses, std::string> {
    if (addresses.empty()) {
      return addresses;
    }
    if (!AddressesAllowed(addresses, rules)) {
      return std::string("a resolved address is not allowed");
    }
    return addresses;
  };
  auto client = net::HttpClient::Create(
      executor_, net::HttpClientOptions{.tls_context = tls_, .resolve_hook = std::move(check)});
  if (!client.ok()) {
    co_return Answer(AnswerClass::kTransient);
  }
  const std::string id = NewUuidV4();  // fresh per attempt (PUSH-235)
  const std::string timestamp = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(clock_().time_since_epoch()).count());
  std::string signature = WebhookSignature(key, id, timestamp, body);
  net::HttpRequest request{
      .method = "POST",
      .url = url,
      .headers = {{"content-type", "application/json"},
                  {"webhook-id", id},
                  {"webhook-timestamp", timestamp},
                  {"webhook-signature", std::move(signature)}},
      .body = body,
      .deadline = deadline,
      .max_body_bytes = kMaxBodyBytes,
      .redirects = net::RedirectPolicy::kReturn,  // a 3xx is answered, never followed: rejected
  };
  auto answer = co_await (*client)->Send(std::move(request));
  co_return Classify(answer);
}

}  // namespace xb::push
