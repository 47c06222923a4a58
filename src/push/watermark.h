// The dispatcher's low watermark (spec/PUSH.md 8.4): which windows are complete and the read
// position the persisted cursor may move to. Pure; used on the dispatcher's thread only.
//
// A window is opened with the read position P it was loaded from (its `from`) and is complete
// when all its pages are loaded and every delivery loaded from it has finished its first attempt
// (or was suppressed, or discarded). The low watermark is the `from` of the oldest incomplete
// window, or P when none is incomplete, so a crash replays every window not yet complete and
// nothing below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace xb::push {

class Watermark {
 public:
  using WindowId = uint64_t;

  // Opens the next window, loaded from read position `from` (ids above it); windows open in
  // ascending order.
  WindowId Open(int64_t from);
  // `n` more deliveries of `window` wait for their first attempt.
  void AddPending(WindowId window, uint64_t n);
  // One delivery of `window` finished its first attempt (or was discarded).
  void FirstAttemptDone(WindowId window);
  // Every page of `window` is loaded.
  void AllPagesLoaded(WindowId window);

  // The low watermark given the current read position `read_position`: the `from` of the oldest
  // incomplete window, else `read_position`. Forgets complete windows at the front.
  int64_t Low(int64_t read_position);

  // Windows still remembered (complete ones behind an incomplete one included).
  size_t open_windows() const { return windows_.size(); }

 private:
  struct Window {
    int64_t from = 0;
    uint64_t pending = 0;
    bool loaded = false;
  };
  Window& At(WindowId window);

  std::deque<Window> windows_;
  WindowId front_id_ = 0;  // id of windows_.front()
};

}  // namespace xb::push
