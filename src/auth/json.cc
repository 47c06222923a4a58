#include "auth/json.h"

#include <boost/json/parse.hpp>

namespace xb::auth {

std::optional<boost::json::object> ParseJsonObject(std::string_view text) {
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 32;
  boost::json::value value = boost::json::parse(text, ec, {}, options);
  if (ec) {
    return std::nullopt;
  }
  boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return std::nullopt;
  }
  return std::move(*object);
}

}  // namespace xb::auth
