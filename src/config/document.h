// Step 1 of spec/CONF.md section 1.5: parse the TOML text, resolve every env:NAME value, refuse
// unknown keys and wrongly typed values, and fill a Config with the defaults of section 2 for
// whatever the document omits. Range and relationship checks are step 2 (checks.h).
// Internal to the config library.
#pragma once

#include <set>
#include <string>

#include "base/status.h"
#include "config/config.h"
#include "config/load.h"

namespace xb::config {

struct ParsedDocument {
  Config config;
  // Facts the Config structs cannot carry that the checks of section 3 need.
  bool auth_keys_present = false;      // `auth.keys` written (even as an empty array)
  bool auth_api_keys_present = false;  // `[auth.api_keys]` written (even empty)
  std::set<std::string> env_resolved;  // key paths whose value came from env:NAME
};

// Errors (kInvalidArgument, CONF-065 wording): a TOML syntax error with its line and column
// only; `environment variable NAME is not available`; an unknown key path; a wrongly typed key;
// an integer that cannot be held (negative, or above the field's type); a missing required key.
// Reads `env` for env:NAME values only.
Result<ParsedDocument> ReadDocument(const std::string& toml_text, const EnvLookup& env);

}  // namespace xb::config
