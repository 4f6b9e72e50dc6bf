// BlockCache (see block_cache.h).
#include "block_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace cfx::cpu {

BlockCache::~BlockCache() {
  for (auto& [size, p] : order_) std::free(p);
}

size_t BlockCache::Rounded(size_t bytes) {
  if (bytes < kMinBytes) return 0;
  // Sizes within a page share blocks below 1 MiB, within 64 KiB above: at most 1/16 wasted.
  const size_t granule = bytes < (size_t{1} << 20) ? size_t{4} << 10 : size_t{64} << 10;
  return (bytes + granule - 1) / granule * granule;
}

void* BlockCache::Allocate(size_t bytes, size_t alignment) {
  const size_t rounded = Rounded(bytes);
  if (rounded == 0) {
    alignment = std::max<size_t>(alignment, 64);
    const size_t n = std::max((bytes + alignment - 1) / alignment * alignment, alignment);
    return std::aligned_alloc(alignment, n);
  }
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
    p = std::aligned_alloc(alignment, n);
  }
  return p;
}

void BlockCache::Deallocate(void* p, size_t bytes) {
  if (p == nullptr) return;
  const size_t rounded = Rounded(bytes);
  if (rounded == 0 || rounded > capacity_) {
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
  return cached_;
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
