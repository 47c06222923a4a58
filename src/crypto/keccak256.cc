#include "crypto/keccak256.h"

#include <cstring>

namespace xb::crypto {
namespace {

// Keccak-f[1600] (the Keccak reference, "The Keccak reference" v3.0 section 1.2): 24 rounds of
// theta, rho, pi, chi, iota over a 5x5 state of 64-bit lanes, lane (x, y) at index x + 5y.
constexpr uint64_t kRoundConstants[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL, 0x8000000080008000ULL,
    0x000000000000808bULL, 0x0000000080000001ULL, 0x8000000080008081ULL, 0x8000000000008009ULL,
    0x000000000000008aULL, 0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL, 0x8000000000008003ULL,
    0x8000000000008002ULL, 0x8000000000000080ULL, 0x000000000000800aULL, 0x800000008000000aULL,
    0x8000000080008081ULL, 0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

// Rotation offsets r[x + 5y].
constexpr int kRho[25] = {0,  1,  62, 28, 27, 36, 44, 6,  55, 20, 3,  10, 43,
                          25, 39, 41, 45, 15, 21, 8,  18, 2,  61, 56, 14};

constexpr uint64_t Rotl(uint64_t v, int n) { return n == 0 ? v : (v << n) | (v >> (64 - n)); }

void KeccakF1600(uint64_t a[25]) {
  for (uint64_t rc : kRoundConstants) {
    uint64_t c[5];
    for (int x = 0; x < 5; ++x) {
      c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
    }
    for (int x = 0; x < 5; ++x) {
      const uint64_t d = c[(x + 4) % 5] ^ Rotl(c[(x + 1) % 5], 1);
      for (int y = 0; y < 25; y += 5) {
        a[x + y] ^= d;
      }
    }
    // rho and pi: B[y, 2x + 3y] = rot(A[x, y], r[x, y]).
    uint64_t b[25];
    for (int x = 0; x < 5; ++x) {
      for (int y = 0; y < 5; ++y) {
        b[y + 5 * ((2 * x + 3 * y) % 5)] = Rotl(a[x + 5 * y], kRho[x + 5 * y]);
      }
    }
    for (int y = 0; y < 25; y += 5) {
      for (int x = 0; x < 5; ++x) {
        a[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);
      }
    }
    a[0] ^= rc;
  }
}

// Lanes are little-endian (the Keccak byte order convention).
void AbsorbBlock(uint64_t state[25], const uint8_t* block, size_t rate) {
  for (size_t i = 0; i < rate / 8; ++i) {
    uint64_t lane = 0;
    for (int j = 7; j >= 0; --j) {
      lane = (lane << 8) | block[i * 8 + static_cast<size_t>(j)];
    }
    state[i] ^= lane;
  }
  KeccakF1600(state);
}

}  // namespace

Keccak256Digest Keccak256(std::string_view data) {
  constexpr size_t kRate = 136;  // 1600 - 2 * 256 bits
  uint64_t state[25] = {};
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t left = data.size();
  while (left >= kRate) {
    AbsorbBlock(state, p, kRate);
    p += kRate;
    left -= kRate;
  }
  // Original Keccak multi-rate padding pad10*1 with domain bit 0x01 (SHA3 would use 0x06).
  uint8_t last[kRate] = {};
  std::memcpy(last, p, left);
  last[left] ^= 0x01;
  last[kRate - 1] ^= 0x80;
  AbsorbBlock(state, last, kRate);

  Keccak256Digest out{};
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<uint8_t>(state[i / 8] >> (8 * (i % 8)));
  }
  return out;
}

}  // namespace xb::crypto
