// kind = "profile" (ATTACH.md section 7), as the SDKs' profile resolution (botocore's
// AssumeRoleProvider and profile provider chain; the C++ SDK agrees on the essentials). At each
// Fetch the two shared files are read again; the provider built from them is kept while their
// text (and where they are) stays the same, so a delegate keeps its state (an IMDS token, an
// assumed role's source) between fetches and a changed file takes effect at the next Fetch.
//
// One profile resolves to the first of, in botocore's order:
//   1. role_arn without web_identity_token_file: STS AssumeRole, its source being source_profile
//      (resolved the same way, recursively) or credential_source (never both);
//   2. role_arn with web_identity_token_file: AssumeRoleWithWebIdentity;
//   3. any sso_* key or sso_session: IAM Identity Center;
//   4. aws_access_key_id (+ aws_secret_access_key, aws_session_token): static keys;
//   5. credential_process.
// A source profile that has static keys answers with them (or its SSO / web identity) and its own
// role_arn is not assumed, which is also how a profile may name itself as its source_profile.
//
// Decision: a profile that does not exist, or that names no usable source, is
// kInvalidConfiguration (CreateUpload row 5), as botocore raises ProfileNotFound / InvalidConfig
// for a profile the operator named. In default_chain this does not stop the chain: the chain
// moves past every failure (chain_provider.cc), which is the SDKs' "not found, try next" there.
#include <algorithm>

#include "attach/local_sources.h"
#include "attach/shared_config.h"
#include "crypto/sha256.h"

namespace xb::attach {
namespace {

using BuildResult = Expected<std::unique_ptr<CredentialProvider>, CredentialError>;

constexpr size_t kMaxRoleChain = 16;

CredentialError Invalid(const char* words) {
  return CredentialError{CredentialFailure::kInvalidConfiguration, words};
}

std::string ValueOf(const ConfigSection& section, const char* key) {
  const auto found = section.find(key);
  return found == section.end() ? std::string() : found->second;
}

bool Has(const ConfigSection& section, const char* key) { return !ValueOf(section, key).empty(); }

bool HasStaticKeys(const ConfigSection& section) { return Has(section, "aws_access_key_id"); }

bool HasSsoKeys(const ConfigSection& section) {
  return std::any_of(section.begin(), section.end(), [](const auto& entry) {
    return entry.first.rfind("sso_", 0) == 0 && !entry.second.empty();
  });
}

// A delegate that the wiring did not provide, or that made nothing.
BuildResult Delegated(std::unique_ptr<CredentialProvider> provider) {
  if (provider == nullptr) {
    return CredentialError{CredentialFailure::kUnavailable,
                           "the profile's credential source is not available"};
  }
  return provider;
}

// One resolution of one profile name against one reading of the files.
class ProfileResolver {
 public:
  ProfileResolver(const ProviderContext& context, const SharedConfig& config,
                  const ProfileDelegates& delegates)
      : context_(context), config_(config), delegates_(delegates) {}

  // implements: ATCH-073 (profile)
  BuildResult Build(const std::string& name) {
    const ConfigSection* section = Find(name);
    if (section == nullptr) {
      return Invalid("the named profile does not exist");
    }
    return BuildProfile(name, *section, /*visited=*/{}, /*may_assume_role=*/true);
  }

 private:
  const ConfigSection* Find(const std::string& name) const {
    const auto found = config_.profiles.find(name);
    return found == config_.profiles.end() ? nullptr : &found->second;
  }

  BuildResult BuildProfile(const std::string& name, const ConfigSection& section,
                           std::vector<std::string> visited, bool may_assume_role) {
    const bool web_identity = Has(section, "web_identity_token_file");
    if (may_assume_role && Has(section, "role_arn") && !web_identity) {
      return BuildAssumeRole(name, section, std::move(visited));
    }
    if (Has(section, "role_arn") && web_identity) {
      if (!delegates_.web_identity) {
        return Delegated(nullptr);
      }
      return Delegated(delegates_.web_identity(ValueOf(section, "web_identity_token_file"),
                                               ValueOf(section, "role_arn"),
                                               ValueOf(section, "role_session_name")));
    }
    if (HasSsoKeys(section)) {
      return BuildSso(section);
    }
    if (HasStaticKeys(section)) {
      if (!Has(section, "aws_secret_access_key")) {
        return Invalid("the profile has an access key id without its secret");
      }
      return MakeStaticProvider(AwsCredentials{
          .access_key_id = ValueOf(section, "aws_access_key_id"),
          .secret_access_key = ValueOf(section, "aws_secret_access_key"),
          .session_token = ValueOf(section, "aws_session_token"),
      });
    }
    if (Has(section, "credential_process")) {
      return MakeProcessProvider(context_, ValueOf(section, "credential_process"));
    }
    return Invalid("the profile names no credential source");
  }

  BuildResult BuildAssumeRole(const std::string& name, const ConfigSection& section,
                              std::vector<std::string> visited) {
    visited.push_back(name);
    if (visited.size() > kMaxRoleChain) {
      return Invalid("the profile's role chain is too long");
    }
    const std::string source_profile = ValueOf(section, "source_profile");
    const std::string credential_source = ValueOf(section, "credential_source");
    BuildResult source = Invalid("the profile's role names no source credentials");
    if (!source_profile.empty() && !credential_source.empty()) {
      return Invalid("the profile names both a source profile and a credential source");
    }
    if (!credential_source.empty()) {
      source = BuildNamedSource(credential_source);
    } else if (!source_profile.empty()) {
      source = BuildSourceProfile(name, source_profile, std::move(visited));
    }
    if (!source.ok()) {
      return std::move(source).error();
    }
    if (!delegates_.assume_role) {
      return Delegated(nullptr);
    }
    return Delegated(
        delegates_.assume_role(ValueOf(section, "role_arn"), ValueOf(section, "external_id"),
                               ValueOf(section, "role_session_name"), std::move(source).value()));
  }

  BuildResult BuildSourceProfile(const std::string& parent, const std::string& name,
                                 std::vector<std::string> visited) {
    const ConfigSection* section = Find(name);
    if (section == nullptr) {
      return Invalid("the profile's source profile does not exist");
    }
    // botocore: a profile seen before in this chain is a loop, unless a profile names itself
    // and has static keys to start from.
    const bool seen = std::find(visited.begin(), visited.end(), name) != visited.end();
    if (seen && !(name == parent && HasStaticKeys(*section))) {
      return Invalid("the profile's role chain loops");
    }
    return BuildProfile(name, *section, std::move(visited),
                        /*may_assume_role=*/!HasStaticKeys(*section));
  }

  BuildResult BuildNamedSource(const std::string& credential_source) {
    // The three names botocore and the C++ SDK accept, spelled exactly.
    if (credential_source != "Environment" && credential_source != "Ec2InstanceMetadata" &&
        credential_source != "EcsContainer") {
      return Invalid("the profile's credential source is not a known one");
    }
    if (!delegates_.named_source) {
      return Delegated(nullptr);
    }
    return Delegated(delegates_.named_source(credential_source));
  }

  BuildResult BuildSso(const ConfigSection& section) {
    std::string start_url = ValueOf(section, "sso_start_url");
    std::string region = ValueOf(section, "sso_region");
    const std::string session_name = ValueOf(section, "sso_session");
    if (!session_name.empty()) {
      const auto session = config_.sso_sessions.find(session_name);
      if (session == config_.sso_sessions.end()) {
        return Invalid("the profile's sso-session does not exist");
      }
      const std::string session_url = ValueOf(session->second, "sso_start_url");
      const std::string session_region = ValueOf(session->second, "sso_region");
      // botocore refuses a profile whose own values contradict its sso-session's.
      if ((!start_url.empty() && start_url != session_url) ||
          (!region.empty() && region != session_region)) {
        return Invalid("the profile's SSO settings contradict its sso-session");
      }
      start_url = session_url;
      region = session_region;
    }
    const std::string account_id = ValueOf(section, "sso_account_id");
    const std::string role_name = ValueOf(section, "sso_role_name");
    if (start_url.empty() || region.empty() || account_id.empty() || role_name.empty()) {
      return Invalid("the profile's SSO settings are incomplete");
    }
    if (!delegates_.sso) {
      return Delegated(nullptr);
    }
    return Delegated(delegates_.sso(account_id, region, role_name, start_url, session_name));
  }

  const ProviderContext& context_;
  const SharedConfig& config_;
  const ProfileDelegates& delegates_;
};

class ProfileProvider final : public CredentialProvider {
 public:
  ProfileProvider(const ProviderContext& context, std::string name, ProfileDelegates delegates)
      : context_(context), name_(std::move(name)), delegates_(std::move(delegates)) {}

  boost::asio::awaitable<CredentialResult> Fetch() override {
    const SharedConfigPaths paths = LocateSharedConfig(context_.env);
    Expected<std::string, CredentialError> config_text = ReadSharedFile(paths.config);
    Expected<std::string, CredentialError> credentials_text = ReadSharedFile(paths.credentials);
    if (!config_text.ok() || !credentials_text.ok()) {
      co_return config_text.ok() ? credentials_text.error() : config_text.error();
    }
    const std::string name = ProfileName();
    // A digest, not the text: no second copy of the files' secrets stays in memory.
    const crypto::Sha256Digest fingerprint =
        crypto::Sha256(name + '\0' + paths.config + '\0' + paths.credentials + '\0' + *config_text +
                       '\0' + *credentials_text);
    if (built_ == nullptr || fingerprint != fingerprint_) {
      built_.reset();
      SharedConfig config;
      ParseSharedFile(*config_text, SharedFileKind::kConfig, config);
      ParseSharedFile(*credentials_text, SharedFileKind::kCredentials, config);
      BuildResult built = ProfileResolver(context_, config, delegates_).Build(name);
      if (!built.ok()) {
        co_return std::move(built).error();
      }
      built_ = std::move(built).value();
      fingerprint_ = fingerprint;
    }
    co_return co_await built_->Fetch();
  }

 private:
  // An empty configured name is AWS_PROFILE's, else "default" (default_chain's profile link).
  std::string ProfileName() const {
    if (!name_.empty()) {
      return name_;
    }
    std::optional<std::string> from_env = context_.env("AWS_PROFILE");
    return from_env.has_value() && !from_env->empty() ? *from_env : "default";
  }

  const ProviderContext context_;
  const std::string name_;
  const ProfileDelegates delegates_;
  std::unique_ptr<CredentialProvider> built_;  // for `fingerprint_`
  crypto::Sha256Digest fingerprint_{};
};

}  // namespace

std::unique_ptr<CredentialProvider> MakeProfileProvider(const ProviderContext& context,
                                                        std::string name,
                                                        ProfileDelegates delegates) {
  return std::make_unique<ProfileProvider>(context, std::move(name), std::move(delegates));
}

}  // namespace xb::attach
