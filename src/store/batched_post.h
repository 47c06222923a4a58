// BatchedPost: boost::asio::post, except inside a CompletionScope (base/completion_scope.h), where
// the scope's posts are held back and handed over when it ends, as one handler per executor that
// runs them in the order they were posted.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "base/completion_scope.h"

namespace xb::store {

namespace batched_post_detail {

struct Bucket {
  boost::asio::any_io_executor executor;
  std::vector<std::function<void()>> handlers;
};

// The held-back posts of the calling thread's current scope (nullptr: none yet).
inline thread_local std::vector<Bucket>* pending = nullptr;
inline thread_local const CompletionScope* pending_scope = nullptr;

}  // namespace batched_post_detail

inline void BatchedPost(const boost::asio::any_io_executor& executor,
                        std::function<void()> handler) {
  namespace d = batched_post_detail;
  CompletionScope* scope = CompletionScope::current();
  if (scope == nullptr) {
    boost::asio::post(executor, std::move(handler));
    return;
  }
  if (d::pending == nullptr || d::pending_scope != scope) {
    auto buckets = std::make_shared<std::vector<d::Bucket>>();
    d::pending = buckets.get();
    d::pending_scope = scope;
    scope->AtEnd([buckets] {
      if (d::pending == buckets.get()) {
        d::pending = nullptr;
        d::pending_scope = nullptr;
      }
      for (d::Bucket& bucket : *buckets) {
        boost::asio::post(bucket.executor, [handlers = std::move(bucket.handlers)] {
          for (const auto& h : handlers) {
            h();
          }
        });
      }
    });
  }
  for (d::Bucket& bucket : *d::pending) {
    if (bucket.executor == executor) {
      bucket.handlers.push_back(std::move(handler));
      return;
    }
  }
  d::pending->push_back(d::Bucket{executor, {}});
  d::pending->back().handlers.push_back(std::move(handler));
}

}  // namespace xb::store
