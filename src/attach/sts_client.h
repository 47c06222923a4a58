// AWS STS through its Query API (AWS STS API Reference, "Making Query requests"): one POST of a
// form body "Action=...&Version=2011-06-15&..." to https://sts.<region>.amazonaws.com/ and the
// <Credentials> of its XML answer. The two calls the credential sources make: AssumeRole (signed
// with SigV4 in the header form, service "sts") and AssumeRoleWithWebIdentity (unsigned). Used on
// the credential executor (ProviderContext); CallSts suspends.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attach/credentials.h"

namespace xb::attach {

inline constexpr std::string_view kStsVersion = "2011-06-15";

struct StsCall {
  std::string action;  // "AssumeRole" or "AssumeRoleWithWebIdentity"
  // The action's parameters besides Action and Version (RoleArn, RoleSessionName, ...).
  std::vector<std::pair<std::string, std::string>> params{};
  // Set: the request is signed with these (AssumeRole). Unset: sent unsigned.
  std::optional<AwsCredentials> signer{};
};

// "sts.<region>.amazonaws.com" (the regional endpoint, as the SDKs use by default now);
// "sts.amazonaws.com" when `region` is empty.
std::string StsHost(std::string_view region);

// "Action=<action>&Version=2011-06-15&<name>=<value>..." with every name and value URI-encoded.
std::string StsFormBody(const StsCall& call);

// The <Credentials> of "<action>Response/<action>Result" in `xml`: AccessKeyId,
// SecretAccessKey, SessionToken and Expiration, all required. Anything else (an <ErrorResponse>,
// malformed XML, a field missing, an unreadable Expiration) fails kUnavailable with fixed words.
CredentialResult ParseStsAnswer(std::string_view xml, std::string_view action);

// Sends `call` to the STS endpoint of `context.region` through `context.http` (deadline 5 s) and
// parses the answer. A transport failure, a non-2xx status or an unusable answer is kUnavailable
// with fixed words; the body never reaches a message. Suspends.
boost::asio::awaitable<CredentialResult> CallSts(ProviderContext context, StsCall call);

}  // namespace xb::attach
