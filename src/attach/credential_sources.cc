// MakeCredentialProvider: the configured `kind` to its source (ATTACH.md section 7, ATCH-073).
#include <utility>

#include "attach/credentials.h"
#include "attach/local_sources.h"

namespace xb::attach {
namespace {

std::string Field(const std::map<std::string, std::string>& fields, const std::string& name) {
  auto it = fields.find(name);
  return it == fields.end() ? std::string() : it->second;
}

}  // namespace

// implements: ATCH-073
Expected<std::unique_ptr<CredentialProvider>, std::string> MakeCredentialProvider(
    const std::string& kind, const std::map<std::string, std::string>& fields,
    const ProviderContext& context) {
  if (kind == "static") {
    return MakeStaticProvider(
        AwsCredentials{.access_key_id = Field(fields, "access_key_id"),
                       .secret_access_key = Field(fields, "secret_access_key"),
                       .session_token = Field(fields, "session_token"),
                       .expiry = std::nullopt});
  }
  if (kind == "environment") {
    return MakeEnvironmentProvider(context);
  }
  if (kind == "process") {
    return MakeProcessProvider(context, Field(fields, "command"));
  }
  if (kind == "profile") {
    // The HTTP delegates (assume_role, web_identity, sso, the metadata sources) join with
    // http_sources.h; until then a profile naming them answers kUnavailable.
    ProfileDelegates delegates;
    delegates.named_source = [env = context.env](std::string credential_source) {
      ProviderContext for_env;
      for_env.env = env;
      return credential_source == "Environment" ? MakeEnvironmentProvider(for_env) : nullptr;
    };
    return MakeProfileProvider(context, Field(fields, "name"), std::move(delegates));
  }
  return std::string("this credentials kind is not available");
}

}  // namespace xb::attach
