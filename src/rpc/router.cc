#include "rpc/router.h"

#include <algorithm>
#include <set>

namespace xb::rpc {

void Router::Add(std::string path, CallKind kind, HandlerFn fn) {
  const auto it =
      handlers_.insert_or_assign(std::move(path), Handler{kind, std::move(fn), {}}).first;
  it->second.path = it->first;  // a node's key never moves, rehash included
}

const Handler* Router::Find(std::string_view path) const {
  auto it = handlers_.find(path);
  return it == handlers_.end() ? nullptr : &it->second;
}

std::vector<std::string> Router::Services() const {
  std::set<std::string> names;
  for (const auto& [path, handler] : handlers_) {
    const auto slash = path.find('/', 1);
    if (slash != std::string::npos) {
      names.insert(path.substr(1, slash - 1));
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace xb::rpc
