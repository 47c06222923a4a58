#include "base/request_id.h"

#include <sys/random.h>

#include <cstdint>
#include <random>

namespace xb {
namespace {

std::mt19937_64 SeededGenerator() {
  uint64_t seed[4] = {};
  if (getrandom(seed, sizeof(seed), 0) != static_cast<ssize_t>(sizeof(seed))) {
    std::random_device device;
    for (auto& s : seed) {
      s = (static_cast<uint64_t>(device()) << 32) | device();
    }
  }
  std::seed_seq seq{seed[0], seed[1], seed[2], seed[3]};
  return std::mt19937_64(seq);
}

}  // namespace

std::string NewRequestId() {
  thread_local std::mt19937_64 generator = SeededGenerator();
  uint64_t hi = generator();
  uint64_t lo = generator();
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(36, '-');
  int pos = 0;
  auto put = [&](uint64_t v, int nibbles) {
    for (int i = nibbles - 1; i >= 0; --i) {
      if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
        ++pos;
      }
      out[pos++] = kHex[(v >> (i * 4)) & 15];
    }
  };
  put(hi, 16);
  put(lo, 16);
  return out;
}

}  // namespace xb
