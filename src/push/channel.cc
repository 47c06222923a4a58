#include "push/channel.h"

namespace xb::push {

std::string_view ChannelLabel(Channel channel) {
  switch (channel) {
    case Channel::kApns:
      return "apns";
    case Channel::kFcm:
      return "fcm";
    case Channel::kHttp:
      return "http";
  }
  return "unknown";
}

}  // namespace xb::push
