#include "attach/sts_client.h"

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <exception>
#include <sstream>

#include "attach/endpoint_answer.h"
#include "attach/iso8601.h"
#include "attach/sigv4.h"

namespace xb::attach {

namespace pt = boost::property_tree;

namespace {

constexpr std::chrono::seconds kStsTimeout{5};
constexpr std::string_view kFormType = "application/x-www-form-urlencoded; charset=utf-8";
constexpr std::string_view kUnusable = "the STS answer is not usable";

std::string_view Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) {
    return {};
  }
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// Boost.PropertyTree's XML reader rather than a hand-made extractor: STS answers are real XML
// (a namespace attribute, possibly entities such as &amp; in a token, whitespace between
// elements), and a parser handles all of it. It throws; the throw stops here.
std::optional<pt::ptree> ReadXml(std::string_view xml) {
  try {
    std::istringstream in{std::string(xml)};
    pt::ptree tree;
    pt::read_xml(in, tree);
    return tree;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::string> Field(const pt::ptree& credentials, const char* name) {
  auto child = credentials.get_child_optional(pt::ptree::path_type(name, '/'));
  if (!child) {
    return std::nullopt;
  }
  std::string_view text = Trim(child->data());
  if (text.empty()) {
    return std::nullopt;
  }
  return std::string(text);
}

}  // namespace

std::string StsHost(std::string_view region) {
  if (region.empty()) {
    return "sts.amazonaws.com";
  }
  return "sts." + std::string(region) + ".amazonaws.com";
}

std::string StsFormBody(const StsCall& call) {
  std::string body = "Action=" + UriEncode(call.action, /*keep_slash=*/false) +
                     "&Version=" + std::string(kStsVersion);
  for (const auto& [name, value] : call.params) {
    body.append("&").append(UriEncode(name, false)).append("=").append(UriEncode(value, false));
  }
  return body;
}

CredentialResult ParseStsAnswer(std::string_view xml, std::string_view action) {
  std::optional<pt::ptree> tree = ReadXml(xml);
  if (!tree) {
    return Unavailable(kUnusable);
  }
  const std::string path =
      std::string(action) + "Response/" + std::string(action) + "Result/Credentials";
  auto credentials = tree->get_child_optional(pt::ptree::path_type(path, '/'));
  if (!credentials) {
    return Unavailable(kUnusable);
  }
  std::optional<std::string> key = Field(*credentials, "AccessKeyId");
  std::optional<std::string> secret = Field(*credentials, "SecretAccessKey");
  std::optional<std::string> token = Field(*credentials, "SessionToken");
  std::optional<std::string> expiration = Field(*credentials, "Expiration");
  if (!key || !secret || !token || !expiration) {
    return Unavailable(kUnusable);
  }
  std::optional<WallClock::time_point> expiry = ParseIso8601(*expiration);
  if (!expiry) {
    return Unavailable(kUnusable);
  }
  return AwsCredentials{.access_key_id = std::move(*key),
                        .secret_access_key = std::move(*secret),
                        .session_token = std::move(*token),
                        .expiry = expiry};
}

boost::asio::awaitable<CredentialResult> CallSts(ProviderContext context, StsCall call) {
  const std::string host = StsHost(context.region);
  net::HttpRequest request{.method = "POST",
                           .url = "https://" + host + "/",
                           .headers = {{"content-type", std::string(kFormType)}},
                           .body = StsFormBody(call)};
  if (call.signer) {
    // The global endpoint signs as us-east-1.
    const std::string region = context.region.empty() ? "us-east-1" : context.region;
    std::vector<SignedHeader> added = SignHeaders(
        HeaderSignRequest{.method = "POST",
                          .uri = "/",
                          .canonical_query = "",
                          .headers = {{"content-type", std::string(kFormType)}, {"host", host}},
                          .body = request.body},
        *call.signer, SigningScope{.region = region, .service = "sts", .time = context.now()});
    for (SignedHeader& header : added) {
      request.headers.push_back({std::move(header.name), std::move(header.value)});
    }
  }
  auto response = co_await SendRequest(context.http, std::move(request), kStsTimeout,
                                       "the STS endpoint did not answer");
  if (!response.ok()) {
    co_return std::move(response).error();
  }
  if (!IsSuccess(*response)) {
    co_return Unavailable("the STS endpoint refused the request");
  }
  co_return ParseStsAnswer(response->body, call.action);
}

}  // namespace xb::attach
