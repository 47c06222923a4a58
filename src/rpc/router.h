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
  // The path it was registered under: the Router's own copy, valid for the Router's lifetime and
  // never the bytes of a request (the completion log may name it, OPS-014, OPS-018).
  std::string_view path;
};

class Router {
 public:
  Router() = default;
  // Not copyable: each Handler::path views its own Router's key.
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // `path` is "/package.Service/Method". A second Add of the same path replaces its handler.
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
