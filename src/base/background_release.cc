#include "base/background_release.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/thread_name.h"
#include "base/thread_priority.h"

namespace xb {
namespace {

class Releaser {
 public:
  Releaser() : thread_([this] { Run(); }) {}
  ~Releaser() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  Releaser(const Releaser&) = delete;
  Releaser& operator=(const Releaser&) = delete;

  void Give(std::shared_ptr<const void> keep) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(keep));
    }
    wake_.notify_one();
  }

 private:
  void Run() {
    NameThisThread("xb-release");
    LowerPoolThreadPriorityOnce();
    std::vector<std::shared_ptr<const void>> taken;
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping, nothing left
      }
      taken.swap(queue_);
      lock.unlock();
      taken.clear();  // the frees, outside the lock
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::shared_ptr<const void>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

}  // namespace

void ReleaseInBackground(std::shared_ptr<const void> keep, size_t bytes) {
  if (!keep || bytes < kBackgroundReleaseBytes) {
    return;
  }
  static Releaser releaser;
  releaser.Give(std::move(keep));
}

}  // namespace xb
