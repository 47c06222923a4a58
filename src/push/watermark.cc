#include "push/watermark.h"

#include "base/check.h"

namespace xb::push {

Watermark::WindowId Watermark::Open(int64_t from) {
  windows_.push_back(Window{.from = from, .pending = 0, .loaded = false});
  return front_id_ + windows_.size() - 1;
}

Watermark::Window& Watermark::At(WindowId window) {
  XB_CHECK(window >= front_id_ && window - front_id_ < windows_.size());
  return windows_[window - front_id_];
}

void Watermark::AddPending(WindowId window, uint64_t n) { At(window).pending += n; }

void Watermark::FirstAttemptDone(WindowId window) {
  Window& w = At(window);
  XB_CHECK(w.pending > 0);
  --w.pending;
}

void Watermark::AllPagesLoaded(WindowId window) { At(window).loaded = true; }

// implements: PUSH-257 (the cursor is the low watermark: only first attempts move it)
int64_t Watermark::Low(int64_t read_position) {
  // Windows complete out of order; only a complete prefix is forgotten, so an older incomplete
  // window keeps holding the watermark back.
  while (!windows_.empty() && windows_.front().loaded && windows_.front().pending == 0) {
    windows_.pop_front();
    ++front_id_;
  }
  return windows_.empty() ? read_position : windows_.front().from;
}

}  // namespace xb::push
