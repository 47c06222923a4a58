// xmtp.backend.v1.ConfigurationService/GetConfiguration (CONF section 4): the public
// configuration, built once at startup and returned unchanged for the life of the process
// (CONF-012), to any caller without a credential (CONF-010).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "rpc/router.h"
#include "xmtp/backend/v1/backend.pb.h"

namespace xb::api {

inline constexpr size_t kMaxPublicConfigurationBytes = 65536;  // CONF-009

struct PublicSigningKey {
  std::string kid;
  std::string alg;
};

// Maps the validated configuration to the response (CONF 4.2). `startup_keys` is the key set
// loaded at startup (empty with API keys only or with auth disabled). Fails when the encoding is
// longer than 65536 bytes (CONF-009): "the public configuration is too large".
Result<xmtp::backend::v1::GetConfigurationResponse> BuildPublicConfiguration(
    const config::Config& config, const std::vector<PublicSigningKey>& startup_keys,
    const std::string& server_version);

// Registers GetConfiguration answering `response` (kept by value).
void AddConfigurationService(rpc::Router& router,
                             xmtp::backend::v1::GetConfigurationResponse response);

}  // namespace xb::api
