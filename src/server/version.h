// The build version: server_version in GetConfiguration, service.version on spans and the
// version label of xmtp_backend_info (CONF 4.2).
#pragma once

namespace xb::server {

inline constexpr char kVersion[] = XB_VERSION_STRING;

}  // namespace xb::server
