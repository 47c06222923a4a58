#include "base/byte_buffer.h"

#include <bit>
#include <utility>
#include <vector>

namespace xb {
namespace {

struct CachedBlock {
  size_t capacity = 0;
  std::unique_ptr<char[]> block;
};

// Set once this thread's cache is destroyed (thread exit): a buffer freed later frees its block.
thread_local bool cache_gone = false;

// This thread's freed large blocks (a handful: a linear scan finds one).
struct BlockCache {
  BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() { cache_gone = true; }

  std::vector<CachedBlock> blocks;
  size_t bytes = 0;
};

// Removes the block at `it` from `cache` and returns it (the order of blocks does not matter).
CachedBlock TakeAt(BlockCache& cache, std::vector<CachedBlock>::iterator it) {
  CachedBlock taken = std::move(*it);
  cache.bytes -= taken.capacity;
  *it = std::move(cache.blocks.back());
  cache.blocks.pop_back();
  return taken;
}

BlockCache* ThreadCache() {
  if (cache_gone) {
    return nullptr;
  }
  thread_local BlockCache cache;
  return &cache;
}

}  // namespace

std::unique_ptr<char[]> ByteBuffer::Allocate(size_t& capacity) {
  if (capacity < kMinCachedBlock) {
    return std::make_unique_for_overwrite<char[]>(capacity);
  }
  capacity = std::bit_ceil(capacity);
  BlockCache* cache_ptr = ThreadCache();
  if (cache_ptr == nullptr) {
    return std::make_unique_for_overwrite<char[]>(capacity);
  }
  BlockCache& cache = *cache_ptr;
  // The smallest cached block that fits.
  auto best = cache.blocks.end();
  for (auto it = cache.blocks.begin(); it != cache.blocks.end(); ++it) {
    if (it->capacity >= capacity && (best == cache.blocks.end() || it->capacity < best->capacity)) {
      best = it;
    }
  }
  if (best == cache.blocks.end()) {
    return std::make_unique_for_overwrite<char[]>(capacity);
  }
  CachedBlock taken = TakeAt(cache, best);
  capacity = taken.capacity;
  return std::move(taken.block);
}

void ByteBuffer::Release(std::unique_ptr<char[]> block, size_t capacity) {
  if (block == nullptr || capacity < kMinCachedBlock || capacity > kMaxCachedBytes) {
    return;  // freed
  }
  BlockCache* cache_ptr = ThreadCache();
  if (cache_ptr == nullptr) {
    return;
  }
  BlockCache& cache = *cache_ptr;
  // Full: the smallest blocks make room for a larger one; else the block is freed.
  while (cache.bytes + capacity > kMaxCachedBytes) {
    auto smallest = std::min_element(
        cache.blocks.begin(), cache.blocks.end(),
        [](const CachedBlock& a, const CachedBlock& b) { return a.capacity < b.capacity; });
    if (smallest == cache.blocks.end() || smallest->capacity >= capacity) {
      return;
    }
    TakeAt(cache, smallest);  // freed
  }
  cache.bytes += capacity;
  cache.blocks.push_back(CachedBlock{capacity, std::move(block)});
}

}  // namespace xb
