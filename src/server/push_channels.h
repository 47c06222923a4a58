// The push channels this instance sends through (PUSH.md 9), made from [push] on the
// dispatcher's executor, and the start-up check of the provider credentials (PUSH.md 12).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <string>

#include "base/status.h"
#include "config/config.h"
#include "push/dispatcher.h"
#include "telemetry/logger.h"

namespace xb::server {

// `provider_hosts`: the test build's table of fixed provider hosts (RunOptions); empty in the
// shipped binary. Webhooks never use it. A channel that cannot be made (TLS set-up) is left out,
// with one error line naming its table: its deliveries end `failed` (PUSH.md 8.3).
push::ChannelFactory MakeChannelFactory(
    const config::PushConfig& push,
    std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> provider_hosts,
    telemetry::Logger& logger);

// PUSH.md 12: the APNs key must sign a provider token at start-up; a refusal names push.apns.key.
Status CheckPushCredentials(const config::PushConfig& push);

}  // namespace xb::server
