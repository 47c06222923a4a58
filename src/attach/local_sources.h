// The credential sources that read the process, its environment and local files (ATTACH.md
// section 7; each with the semantics of the AWS SDK provider of the same name): static,
// environment, process, profile (shared config and credentials files), and the chain that
// default_chain is built from. Made on any thread; Fetch on the credential executor.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attach/credentials.h"

namespace xb::attach {

// `kind = "static"`: the configured keys (env:NAME already resolved by the config loader); never
// expire.
std::unique_ptr<CredentialProvider> MakeStaticProvider(AwsCredentials credentials);

// `kind = "environment"`: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, optional AWS_SESSION_TOKEN
// (and AWS_CREDENTIAL_EXPIRATION when set), read at each Fetch.
std::unique_ptr<CredentialProvider> MakeEnvironmentProvider(const ProviderContext& context);

// The bounds of one run of a credential process.
struct ProcessLimits {
  std::chrono::steady_clock::duration time_limit = std::chrono::seconds(10);
  size_t max_output_bytes = 64 * 1024;
};

// `kind = "process"` and a profile's credential_process: runs `command` through `/bin/sh -c`,
// stdin and stderr on /dev/null, and reads its JSON from stdout (Version 1, AccessKeyId,
// SecretAccessKey, optional SessionToken and Expiration). A run past `time_limit` or writing more
// than `max_output_bytes` is killed (its whole process group). Fetch suspends while the child
// runs; it never blocks the executor. Every failure is kUnavailable.
std::unique_ptr<CredentialProvider> MakeProcessProvider(const ProviderContext& context,
                                                        std::string command,
                                                        ProcessLimits limits = {});

// Tries `links` in order at each Fetch; the first that answers wins. Fails kUnavailable when none
// does.
std::unique_ptr<CredentialProvider> MakeChainProvider(
    std::vector<std::unique_ptr<CredentialProvider>> links);

// What a profile may delegate to: the sources that need HTTP (attach/http_sources.h), injected so
// this file does not depend on them and its tests can see what a profile asked for.
struct ProfileDelegates {
  // role_arn with source_profile or credential_source: STS AssumeRole from `source`.
  std::function<std::unique_ptr<CredentialProvider>(std::string role_arn, std::string external_id,
                                                    std::string session_name,
                                                    std::unique_ptr<CredentialProvider> source)>
      assume_role;
  // role_arn with web_identity_token_file.
  std::function<std::unique_ptr<CredentialProvider>(std::string token_file, std::string role_arn,
                                                    std::string session_name)>
      web_identity;
  // sso_account_id, sso_role_name, sso_region and sso_start_url (or an sso_session section).
  std::function<std::unique_ptr<CredentialProvider>(std::string account_id, std::string region,
                                                    std::string role_name, std::string start_url,
                                                    std::string session_name)>
      sso;
  // credential_source = Environment / Ec2InstanceMetadata / EcsContainer.
  std::function<std::unique_ptr<CredentialProvider>(std::string credential_source)> named_source;
};

// `kind = "profile"` (and the profile link of default_chain): the profile `name` of the shared
// config file (AWS_CONFIG_FILE, else ~/.aws/config) and credentials file
// (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), resolved at each Fetch (the rules are in
// profile_provider.cc and attach/shared_config.h). An empty `name` is AWS_PROFILE's, else
// "default". A profile that does not exist or names no usable source is kInvalidConfiguration.
std::unique_ptr<CredentialProvider> MakeProfileProvider(const ProviderContext& context,
                                                        std::string name,
                                                        ProfileDelegates delegates);

}  // namespace xb::attach
