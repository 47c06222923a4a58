// CompletionScope: marks, on one thread, the completions of one batch of jobs (a SQLite group
// commit, a PostgreSQL combined transaction). Code that hands a completion to another thread can
// hold it back until the scope ends and then hand all of them over at once (store/batched_post.h
// posts one handler per executor instead of one per job).
//
// Why: each post wakes the caller's thread, and on a shared core the woken thread preempts the one
// still completing the rest of the batch. Completing eight publishes cost sixteen context switches
// and as many wake-ups, instead of two.
//
// Threading: a scope belongs to the thread that created it; scopes nest (the innermost collects).
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace xb {

class CompletionScope {
 public:
  CompletionScope() : outer_(current_) { current_ = this; }
  // Runs the actions registered with AtEnd, in order, once this scope is no longer current.
  ~CompletionScope() {
    current_ = outer_;
    for (auto& action : at_end_) {
      action();
    }
  }
  CompletionScope(const CompletionScope&) = delete;
  CompletionScope& operator=(const CompletionScope&) = delete;

  // The calling thread's innermost scope, or nullptr.
  static CompletionScope* current() { return current_; }
  void AtEnd(std::function<void()> action) { at_end_.push_back(std::move(action)); }

 private:
  static inline thread_local CompletionScope* current_ = nullptr;
  CompletionScope* const outer_;
  std::vector<std::function<void()>> at_end_;
};

}  // namespace xb
