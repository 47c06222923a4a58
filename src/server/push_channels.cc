#include "server/push_channels.h"

#include <memory>
#include <string_view>
#include <utility>

#include "push/apns_channel.h"
#include "push/apns_token.h"
#include "push/fcm_channel.h"
#include "push/webhook_channel.h"

namespace xb::server {

namespace {

// Adds a made channel, or logs (without the reason's words, which may name a file) that it
// could not be made.
template <typename Made>
void AddSender(push::ChannelSenders& senders, push::Channel channel, Made made,
               std::string_view table, telemetry::Logger& logger) {
  if (!made.ok()) {
    logger.Error("a push channel could not be set up; its deliveries fail",
                 {telemetry::Field::Key(table)});
    return;
  }
  senders.emplace(channel, std::move(made).value());
}

}  // namespace

push::ChannelFactory MakeChannelFactory(
    const config::PushConfig& push,
    std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> provider_hosts,
    telemetry::Logger& logger) {
  return [&push, hosts = std::move(provider_hosts),
          &logger](boost::asio::any_io_executor executor) {
    push::ChannelSenders senders;
    const push::ProviderOptions providers{.static_hosts = hosts};
    if (push.apns) {
      AddSender(senders, push::Channel::kApns,
                push::ApnsChannel::Create(executor, *push.apns, providers), "push.apns", logger);
    }
    if (push.fcm) {
      AddSender(senders, push::Channel::kFcm,
                push::FcmChannel::Create(executor, *push.fcm, providers), "push.fcm", logger);
    }
    if (push.http) {
      AddSender(senders, push::Channel::kHttp,
                push::WebhookChannel::Create(executor, *push.http, push::ProviderOptions{}),
                "push.http", logger);
    }
    return senders;
  };
}

Status CheckPushCredentials(const config::PushConfig& push) {
  if (push.apns) {
    return push::CheckApnsKeySigns(*push.apns);
  }
  return Status::Ok();
}

}  // namespace xb::server
