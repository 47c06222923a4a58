// AWS credentials and the seam every credential source implements (ATTACH.md section 7,
// ATCH-073). A provider is asked by the credential cache (attach/credential_cache.h), which keeps
// the answer and decides when to ask again (ATTACH.md 6.4); a provider keeps nothing itself
// beyond what its source needs (an IMDS session token, a source provider).
//
// Secrets: nothing here is ever logged, traced, counted or put into an error message. A
// CredentialError's words are fixed plain text chosen by the provider ("the credential process
// exited with a failure"), never a value read from a file, an endpoint or the environment.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/expected.h"

namespace xb::net {
class HttpClient;
}

namespace xb::attach {

using WallClock = std::chrono::system_clock;

struct AwsCredentials {
  std::string access_key_id{};
  std::string secret_access_key{};
  std::string session_token{};                    // empty: none
  std::optional<WallClock::time_point> expiry{};  // nullopt: never expires
};

enum class CredentialFailure {
  // The source did not answer, answered a failure, or answered something unusable: retryable,
  // CreateUpload row 4 (UNAVAILABLE).
  kUnavailable,
  // The source reports that its own configuration is wrong (a profile that names no credentials,
  // a role chain that loops, a container URI on a forbidden host): CreateUpload row 5
  // (FAILED_PRECONDITION).
  kInvalidConfiguration,
};

struct CredentialError {
  CredentialFailure kind = CredentialFailure::kUnavailable;
  std::string message;  // fixed plain words; never a value (see above)
};

using CredentialResult = Expected<AwsCredentials, CredentialError>;

// One credential source. Fetch is called on the credential executor (ProviderContext::executor),
// one call at a time per provider; it may suspend (HTTP through ProviderContext::http) and may
// block briefly on local files. A call that cannot finish bounds itself (each HTTP request has a
// deadline; a credential process has a time limit).
class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;
  virtual boost::asio::awaitable<CredentialResult> Fetch() = 0;
};

// The environment variables a provider reads, injectable for tests. Returns nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// What providers share. A provider copies what it keeps; the executor and the client it points to
// outlive every provider made with it.
struct ProviderContext {
  boost::asio::any_io_executor executor;  // the credential thread's; Fetch runs here
  net::HttpClient* http = nullptr;        // on `executor`; every outbound request goes here
  EnvironmentLookup env;                  // AWS_* variables, HOME
  std::string region;                     // attachments.target.S3.region (STS, default_chain)
  std::function<WallClock::time_point()> now = [] { return WallClock::now(); };
};

// The provider for `kind` with its configured `fields` (config::S3Credentials, already checked
// by config/attachment_checks.cc), or plain words when it cannot be made (a startup refusal that
// the caller reports naming attachments.target.S3.credentials).
Expected<std::unique_ptr<CredentialProvider>, std::string> MakeCredentialProvider(
    const std::string& kind, const std::map<std::string, std::string>& fields,
    const ProviderContext& context);

}  // namespace xb::attach
