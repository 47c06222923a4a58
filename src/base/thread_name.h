// NameThisThread: the name `top -H`, `perf sched` and /proc/PID/task/TID/comm show for the
// calling thread, so an operator (and bench/telemetry.sh) can tell the server's threads apart.
// Linux keeps 15 bytes; a longer name is cut.
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>

namespace xb {

inline void NameThisThread(std::string_view name) {
  const std::string cut(name.substr(0, 15));
  pthread_setname_np(pthread_self(), cut.c_str());
}

}  // namespace xb
