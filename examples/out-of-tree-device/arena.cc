// Arena: best-fit allocation from a free list over one block (see arena.h).
#include "arena.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>

namespace toydev {
namespace {

size_t RoundUp(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + Arena::kAlignment - 1) / Arena::kAlignment *
         Arena::kAlignment;
}

}  // namespace

void Arena::FreeWithStd::operator()(std::byte* p) const { std::free(p); }

Arena::Arena(size_t capacity)
    : capacity_(RoundUp(capacity)),
      base_(static_cast<std::byte*>(std::aligned_alloc(kAlignment, capacity_))) {
  if (ok()) free_[0] = capacity_;
}

void* Arena::Allocate(size_t bytes) {
  const size_t size = RoundUp(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  // Best fit: the smallest free range that holds `size`, which keeps large ranges for large
  // tensors. A linear scan is fine for an example; a real allocator keeps ranges by size too.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= size && (best == free_.end() || it->second < best->second)) best = it;
  }
  if (best == free_.end()) return nullptr;
  const auto [offset, range] = *best;
  free_.erase(best);
  if (range > size) free_[offset + size] = range - size;  // the rest stays free
  in_use_ += size;
  return base_.get() + offset;
}

void Arena::Free(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  size_t offset = static_cast<std::byte*>(ptr) - base_.get();
  size_t size = RoundUp(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= size;
  // Merge with the free range that ends where this one starts and the one that starts where it
  // ends, so that the list stays short and large blocks come back.
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    free_.erase(next);
  }
  free_[offset] = size;
}

bool Arena::Contains(const void* ptr, size_t offset, size_t bytes) const {
  // As integers: `ptr` may point anywhere, and only pointers into one object compare with <.
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  const auto base = reinterpret_cast<std::uintptr_t>(base_.get());
  if (p < base || p - base > capacity_) return false;
  const size_t start = p - base;
  return offset <= capacity_ - start && bytes <= capacity_ - start - offset;
}

size_t Arena::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t Arena::largest_free_block() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t largest = 0;
  for (const auto& [offset, size] : free_) largest = std::max(largest, size);
  return largest;
}

}  // namespace toydev
