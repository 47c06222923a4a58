// The AWS shared config file (AWS_CONFIG_FILE, else ~/.aws/config) and shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), read as the SDKs read them, for the
// profile provider (attach/local_sources.h). Only what a credential source needs: profiles and
// sso-session sections, each a flat map of keys to values.
//
// The INI dialect (botocore's configparser use; the C++ SDK agrees on these points):
// - `[default]`, `[profile NAME]` and `[sso-session NAME]` in the config file (any other section is
//   ignored; `[profile default]` is the default profile too); `[NAME]` in the credentials file.
// - `key = value` or `key: value`; keys are lowercased (the SDKs match them case-insensitively),
//   values trimmed; a later key or a repeated section adds to and overrides what came before.
// - Lines starting with `#` or `;` are comments; there are no inline comments (a `#` inside a
//   value is part of it, as in a credential_process command line).
// - A line that starts with whitespace continues the key before it: a nested sub-section
//   (`s3 =` then indented `max_concurrent_requests = 10`) or a multi-line value. Both are skipped;
//   the key keeps the value on its own line.
// - For the same profile, credentials-file values win over config-file values.
// Pure parsing plus one file read; any thread. Values may be secrets: never log them.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "attach/credentials.h"

namespace xb::attach {

using ConfigSection = std::map<std::string, std::string>;  // lowercased key -> value

struct SharedConfig {
  std::map<std::string, ConfigSection> profiles;      // by profile name
  std::map<std::string, ConfigSection> sso_sessions;  // by sso-session name
};

enum class SharedFileKind { kConfig, kCredentials };

// Adds the sections of one file's text to `into` (credentials-file values override).
void ParseSharedFile(std::string_view text, SharedFileKind kind, SharedConfig& into);

// Where the two files are, from AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE (a leading `~/` is
// HOME) or HOME's .aws/. A path is empty when it cannot be known (no HOME): that file is missing.
struct SharedConfigPaths {
  std::string config;
  std::string credentials;
};
SharedConfigPaths LocateSharedConfig(const EnvironmentLookup& env);

// The text of one file: empty when `path` is empty or the file does not exist; kUnavailable when
// it exists but cannot be read or is larger than 1 MiB. Blocks briefly on the file system.
Expected<std::string, CredentialError> ReadSharedFile(const std::string& path);

}  // namespace xb::attach
