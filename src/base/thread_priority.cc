#include "base/thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace xb {

int ThisThreadNice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())); }

namespace {

thread_local bool t_pool_thread = false;
thread_local std::chrono::steady_clock::time_point t_turn_began{};

void LowerThisThread() {
  errno = 0;
  const int current = ThisThreadNice();
  if (current == -1 && errno != 0) {
    return;
  }
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), PoolThreadNice(current));
}

}  // namespace

void LowerPoolThreadPriorityOnce() {
  thread_local const bool lowered = (LowerThisThread(), t_pool_thread = true, true);
  static_cast<void>(lowered);
}

bool OfferPoolThreadTurn() {
  if (!t_pool_thread) {
    return false;
  }
  if (std::chrono::steady_clock::now() - t_turn_began < kPoolThreadTurn) {
    return false;
  }
  sched_yield();
  t_turn_began = std::chrono::steady_clock::now();
  return true;
}

void AppendInTurns(std::string& out, std::string_view bytes) {
  // Small enough that a piece into fresh pages stays within a turn.
  constexpr size_t kPiece = 32 * 1024;
  OfferPoolThreadTurn();  // every copy is a turn point, however small
  while (bytes.size() > kPiece) {
    out.append(bytes.substr(0, kPiece));
    bytes.remove_prefix(kPiece);
    OfferPoolThreadTurn();
  }
  out.append(bytes);
}

std::string CopyInTurns(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  AppendInTurns(out, bytes);
  return out;
}

}  // namespace xb
