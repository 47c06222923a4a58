#include "server/push_channels.h"

namespace xb::server {

push::ChannelFactory MakeChannelFactory(
    const config::PushConfig& push,
    std::map<std::string, boost::asio::ip::tcp::endpoint, std::less<>> provider_hosts) {
  (void)push;
  (void)provider_hosts;
  return [](boost::asio::any_io_executor) { return push::ChannelSenders(); };
}

Status CheckPushCredentials(const config::PushConfig& push) {
  (void)push;
  return Status::Ok();
}

}  // namespace xb::server
