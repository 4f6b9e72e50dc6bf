// BlockCache (see block_cache.h).
#include "block_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace cfx::cpu {

#if defined(__SANITIZE_ADDRESS__)
const bool BlockCache::kKeepsSmallBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
const bool BlockCache::kKeepsSmallBlocks = false;
#else
const bool BlockCache::kKeepsSmallBlocks = true;
#endif
#else
const bool BlockCache::kKeepsSmallBlocks = true;
#endif

BlockCache::~BlockCache() {
  for (auto& [size, p] : order_) std::free(p);
  for (SmallBlocks& c : small_)
    for (void* p : c.blocks) std::free(p);
}

int BlockCache::SmallClass(size_t bytes, size_t* size) {
  bytes = std::max<size_t>(bytes, 1);
  if (bytes <= 1024) {
    *size = (bytes + 63) / 64 * 64;
    return static_cast<int>(*size / 64) - 1;  // 0..15
  }
  if (bytes <= 8192) {
    *size = (bytes + 511) / 512 * 512;
    return 16 + static_cast<int>(*size / 512) - 3;  // 1.5 KiB .. 8 KiB: 16..29
  }
  *size = (bytes + 4095) / 4096 * 4096;
  return 30 + static_cast<int>(*size / 4096) - 3;  // 12 KiB .. 64 KiB: 30..43
}

size_t BlockCache::ClassSize(int c) {
  if (c < 16) return static_cast<size_t>(c + 1) * 64;
  if (c < 30) return static_cast<size_t>(c - 16 + 3) * 512;
  return static_cast<size_t>(c - 30 + 3) * 4096;
}

void* BlockCache::AllocateSmall(size_t bytes, size_t alignment) {
  size_t size = 0;
  const int c = SmallClass(bytes, &size);
  if (kKeepsSmallBlocks && alignment <= 64) {
    std::lock_guard<std::mutex> lock(small_[c].mu);
    if (!small_[c].blocks.empty()) {
      void* p = small_[c].blocks.back();
      small_[c].blocks.pop_back();
      small_cached_.fetch_sub(size, std::memory_order_relaxed);
      return p;
    }
  }
  // At least the class's size, so that the block may serve any request of its class once freed.
  alignment = std::max<size_t>(alignment, 64);
  return std::aligned_alloc(alignment,
                            std::max(size, (bytes + alignment - 1) / alignment * alignment));
}

void BlockCache::DeallocateSmall(void* p, size_t bytes) {
  size_t size = 0;
  const int c = SmallClass(bytes, &size);
  // The sum may pass the capacity by a block per thread that frees at the same moment.
  if (kKeepsSmallBlocks && small_cached_.fetch_add(size, std::memory_order_relaxed) + size <=
                               std::min(kSmallCapacity, capacity_)) {
    std::lock_guard<std::mutex> lock(small_[c].mu);
    small_[c].blocks.push_back(p);
    return;
  }
  if (kKeepsSmallBlocks) small_cached_.fetch_sub(size, std::memory_order_relaxed);
  std::free(p);
}

size_t BlockCache::Rounded(size_t bytes) {
  if (bytes < kMinBytes) return 0;
  // Sizes within a page share blocks below 1 MiB, within 64 KiB above: at most 1/16 wasted.
  const size_t granule = bytes < (size_t{1} << 20) ? size_t{4} << 10 : size_t{64} << 10;
  return (bytes + granule - 1) / granule * granule;
}

void* BlockCache::Allocate(size_t bytes, size_t alignment) {
  const size_t rounded = Rounded(bytes);
  if (rounded == 0) return AllocateSmall(bytes, alignment);
  if (alignment <= kBlockAlignment) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_size_.find(rounded);
    if (it != by_size_.end()) {
      void* p = it->second->second;
      order_.erase(it->second);
      by_size_.erase(it);
      cached_ -= rounded;
      return p;
    }
  }
  alignment = std::max(alignment, kBlockAlignment);
  const size_t n = (rounded + alignment - 1) / alignment * alignment;
  void* p = std::aligned_alloc(alignment, n);
  if (p == nullptr) {
    // Memory is short: what the cache holds goes back before giving up.
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (!order_.empty()) FreeOldest();
    }
    for (SmallBlocks& c : small_) {
      std::lock_guard<std::mutex> lock(c.mu);
      size_t freed = 0;
      for (void* b : c.blocks) {
        std::free(b);
        ++freed;
      }
      c.blocks.clear();
      small_cached_.fetch_sub(freed * ClassSize(static_cast<int>(&c - small_)),
                              std::memory_order_relaxed);
    }
    p = std::aligned_alloc(alignment, n);
  }
  return p;
}

void BlockCache::Deallocate(void* p, size_t bytes) {
  if (p == nullptr) return;
  const size_t rounded = Rounded(bytes);
  if (rounded == 0) return DeallocateSmall(p, bytes);
  if (rounded > capacity_) {
    std::free(p);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  while (cached_ + rounded > capacity_) FreeOldest();
  order_.emplace_back(rounded, p);
  by_size_.emplace(rounded, std::prev(order_.end()));
  cached_ += rounded;
}

void BlockCache::FreeOldest() {
  auto [size, p] = order_.front();
  for (auto [it, end] = by_size_.equal_range(size); it != end; ++it) {
    if (it->second == order_.begin()) {
      by_size_.erase(it);
      break;
    }
  }
  order_.pop_front();
  cached_ -= size;
  std::free(p);
}

size_t BlockCache::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_ + small_cached_.load(std::memory_order_relaxed);
}

BlockCache& BlockCache::ForDevice() {
  static BlockCache* cache = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const size_t physical =
        pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
    return new BlockCache(std::min(physical / 8, size_t{4} << 30));
  }();
  return *cache;
}

}  // namespace cfx::cpu
