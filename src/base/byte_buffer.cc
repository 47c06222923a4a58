#include "base/byte_buffer.h"

#include <sys/mman.h>

#include <bit>
#include <new>
#include <utility>
#include <vector>

namespace xb {
namespace {

constexpr std::align_val_t kHugeAlignment{ByteBuffer::kHugePageBytes};

struct CachedBlock {
  size_t capacity = 0;
  ByteBuffer::Block block;
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

void ByteBlockFree::operator()(char* block) const {
  if (huge) {
    ::operator delete[](block, kHugeAlignment);
  } else {
    delete[] block;
  }
}

ByteBuffer::Block ByteBuffer::Allocate(size_t& capacity, Pages pages) {
  if (pages == Pages::kHuge) {
    capacity = (capacity + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    Block block(static_cast<char*>(::operator new[](capacity, kHugeAlignment)),
                ByteBlockFree{true});
    // Advice only: without THP (or with it disabled) the block keeps small pages.
    (void)::madvise(block.get(), capacity, MADV_HUGEPAGE);
    return block;
  }
  const auto small = [](size_t size) { return Block(new char[size]); };
  if (capacity < kMinCachedBlock) {
    return small(capacity);
  }
  capacity = std::bit_ceil(capacity);
  BlockCache* cache_ptr = ThreadCache();
  if (cache_ptr == nullptr) {
    return small(capacity);
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
    return small(capacity);
  }
  CachedBlock taken = TakeAt(cache, best);
  capacity = taken.capacity;
  return std::move(taken.block);
}

void ByteBuffer::Release(Block block, size_t capacity) {
  if (block == nullptr || block.get_deleter().huge || capacity < kMinCachedBlock ||
      capacity > kMaxCachedBytes) {
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
