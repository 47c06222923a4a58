// Path -> handler table. Built once at startup, read-only afterwards (shared by every worker).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rpc/call.h"

namespace xb::rpc {

using HandlerFn = std::function<boost::asio::awaitable<void>(std::shared_ptr<Call>)>;

struct Handler {
  CallKind kind = CallKind::kUnary;
  HandlerFn fn;
};

class Router {
 public:
  // `path` is "/package.Service/Method".
  void Add(std::string path, CallKind kind, HandlerFn fn);
  const Handler* Find(std::string_view path) const;
  // Distinct "package.Service" names with at least one handler, sorted.
  std::vector<std::string> Services() const;

 private:
  // Transparent lookup: finding a path never allocates on the request path.
  struct PathHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Handler, PathHash, std::equal_to<>> handlers_;
};

}  // namespace xb::rpc
