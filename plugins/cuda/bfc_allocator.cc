// BfcAllocator: bins of free chunks, splitting, coalescing and region growth.
#include "bfc_allocator.h"

#include <algorithm>
#include <limits>

namespace cfx::cuda {
namespace {

size_t RoundUp(size_t bytes) {
  const size_t n = std::max<size_t>(bytes, 1);
  return (n + BfcAllocator::kAlignment - 1) / BfcAllocator::kAlignment * BfcAllocator::kAlignment;
}

}  // namespace

BfcAllocator::BfcAllocator(std::unique_ptr<RegionAllocator> regions, std::string name, size_t limit,
                           size_t initial_region_bytes)
    : regions_(std::move(regions)),
      name_(std::move(name)),
      limit_(limit),
      next_region_bytes_(RoundUp(initial_region_bytes)) {
  bins_.resize(kNumBins);
  stats_.bytes_limit = static_cast<int64_t>(limit_);
}

BfcAllocator::~BfcAllocator() {
  for (const auto& [ptr, region] : regions_by_ptr_)
    regions_->Free(reinterpret_cast<void*>(ptr), region.size);
}

int BfcAllocator::BinFor(size_t bytes) {
  // Bin b: [256 * 2^b, 256 * 2^(b+1)); everything from the last bin's start up goes there.
  size_t units = bytes / kAlignment;
  int bin = 0;
  while (units > 1 && bin < kNumBins - 1) {
    units >>= 1;
    ++bin;
  }
  return bin;
}

BfcAllocator::ChunkId BfcAllocator::NewChunk(uintptr_t ptr, size_t size) {
  ChunkId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
    chunks_[id] = Chunk{};
  } else {
    id = static_cast<ChunkId>(chunks_.size());
    chunks_.emplace_back();
  }
  chunks_[id].ptr = ptr;
  chunks_[id].size = size;
  by_ptr_[ptr] = id;
  return id;
}

void BfcAllocator::DeleteChunk(ChunkId id) {
  by_ptr_.erase(chunks_[id].ptr);
  chunks_[id] = Chunk{};
  free_ids_.push_back(id);
}

void BfcAllocator::InsertFree(ChunkId id) {
  Chunk& c = chunks_[id];
  c.in_use = false;
  c.bin = BinFor(c.size);
  bins_[c.bin].insert({c.size, c.ptr, id});
}

void BfcAllocator::RemoveFree(ChunkId id) {
  Chunk& c = chunks_[id];
  bins_[c.bin].erase({c.size, c.ptr, id});
  c.bin = -1;
}

BfcAllocator::ChunkId BfcAllocator::TakeBestFit(size_t rounded) {
  for (int b = BinFor(rounded); b < kNumBins; ++b) {
    // The smallest chunk of this bin that holds `rounded`.
    auto it = bins_[b].lower_bound({rounded, 0, 0});
    if (it == bins_[b].end()) continue;
    const ChunkId id = std::get<2>(*it);
    RemoveFree(id);
    Chunk& c = chunks_[id];
    if (c.size - rounded >= kAlignment) {
      // Split: the tail becomes a free chunk of its own right after this one.
      const ChunkId tail = NewChunk(chunks_[id].ptr + rounded, chunks_[id].size - rounded);
      Chunk& head = chunks_[id];  // NewChunk may have moved the vector
      chunks_[tail].prev = id;
      chunks_[tail].next = head.next;
      if (head.next != kNone) chunks_[head.next].prev = tail;
      head.next = tail;
      head.size = rounded;
      InsertFree(tail);
    }
    chunks_[id].in_use = true;
    return id;
  }
  return kNone;
}

bool BfcAllocator::Extend(size_t rounded) {
  const size_t available = limit_ > pool_bytes_ ? limit_ - pool_bytes_ : 0;
  if (rounded > available) return false;
  size_t size = std::max(next_region_bytes_, rounded);
  size = std::min(size, available);
  void* p = nullptr;
  // The region allocator may refuse a large region that a smaller one (still >= the request)
  // would fit in: step down by a tenth at a time.
  for (;;) {
    p = regions_->Allocate(size);
    if (p != nullptr || size == rounded) break;
    size = std::max(rounded, RoundUp(size / 10 * 9));
  }
  if (p == nullptr) return false;
  const auto base = reinterpret_cast<uintptr_t>(p);
  regions_by_ptr_[base] = Region{base, size};
  pool_bytes_ += size;
  if (size >= next_region_bytes_ && next_region_bytes_ <= std::numeric_limits<size_t>::max() / 2)
    next_region_bytes_ *= 2;
  InsertFree(NewChunk(base, size));
  return true;
}

sdk::Result<void*> BfcAllocator::Allocate(size_t bytes, size_t alignment) {
  if (alignment > kAlignment || (alignment & (alignment - 1)) != 0)
    return sdk::InvalidArgument(name_, ": alignment ", alignment,
                                " is not supported (a power of two up to ", kAlignment, ")");
  if (bytes > std::numeric_limits<size_t>::max() - kAlignment)
    return sdk::ResourceExhausted(name_, ": cannot allocate ", bytes, " bytes");
  const size_t rounded = RoundUp(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  ChunkId id = TakeBestFit(rounded);
  if (id == kNone && Extend(rounded)) id = TakeBestFit(rounded);
  if (id == kNone && ReleaseFreeRegionsLocked() > 0 && Extend(rounded)) id = TakeBestFit(rounded);
  if (id == kNone)
    return sdk::ResourceExhausted(name_, ": out of memory allocating ", bytes, " bytes (", rounded,
                                  " rounded): ", StateLocked());
  stats_.bytes_in_use += static_cast<int64_t>(chunks_[id].size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  ++stats_.chunks_in_use;
  return reinterpret_cast<void*>(chunks_[id].ptr);
}

bool BfcAllocator::Free(void* ptr) {
  if (ptr == nullptr) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto found = by_ptr_.find(reinterpret_cast<uintptr_t>(ptr));
  if (found == by_ptr_.end() || !chunks_[found->second].in_use) return false;
  ChunkId id = found->second;
  stats_.bytes_in_use -= static_cast<int64_t>(chunks_[id].size);
  --stats_.chunks_in_use;
  chunks_[id].in_use = false;
  // Merge a free successor into this chunk, then this chunk into a free predecessor.
  const ChunkId next = chunks_[id].next;
  if (next != kNone && !chunks_[next].in_use) {
    RemoveFree(next);
    chunks_[id].size += chunks_[next].size;
    chunks_[id].next = chunks_[next].next;
    if (chunks_[id].next != kNone) chunks_[chunks_[id].next].prev = id;
    DeleteChunk(next);
  }
  const ChunkId prev = chunks_[id].prev;
  if (prev != kNone && !chunks_[prev].in_use) {
    RemoveFree(prev);
    chunks_[prev].size += chunks_[id].size;
    chunks_[prev].next = chunks_[id].next;
    if (chunks_[prev].next != kNone) chunks_[chunks_[prev].next].prev = prev;
    DeleteChunk(id);
    id = prev;
  }
  InsertFree(id);
  return true;
}

bool BfcAllocator::Owns(const void* ptr) const {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regions_by_ptr_.upper_bound(p);
  if (it == regions_by_ptr_.begin()) return false;
  --it;
  return p < it->second.ptr + it->second.size;
}

size_t BfcAllocator::AllocatedSize(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_ptr_.find(reinterpret_cast<uintptr_t>(ptr));
  return it != by_ptr_.end() && chunks_[it->second].in_use ? chunks_[it->second].size : 0;
}

size_t BfcAllocator::ReleaseFreeRegions() {
  std::lock_guard<std::mutex> lock(mu_);
  return ReleaseFreeRegionsLocked();
}

size_t BfcAllocator::ReleaseFreeRegionsLocked() {
  size_t released = 0;
  for (auto it = regions_by_ptr_.begin(); it != regions_by_ptr_.end();) {
    const Region r = it->second;
    const ChunkId id = by_ptr_.at(r.ptr);
    // A region that is one free chunk from end to end.
    if (chunks_[id].in_use || chunks_[id].size != r.size) {
      ++it;
      continue;
    }
    RemoveFree(id);
    DeleteChunk(id);
    regions_->Free(reinterpret_cast<void*>(r.ptr), r.size);
    pool_bytes_ -= r.size;
    released += r.size;
    it = regions_by_ptr_.erase(it);
  }
  return released;
}

size_t BfcAllocator::LargestFreeLocked() const {
  for (int b = kNumBins - 1; b >= 0; --b)
    if (!bins_[b].empty()) return std::get<0>(*bins_[b].rbegin());
  return 0;
}

std::string BfcAllocator::StateLocked() const {
  return sdk::StrCat(stats_.bytes_in_use, " bytes in use in ", stats_.chunks_in_use, " chunks, ",
                     pool_bytes_ - static_cast<size_t>(stats_.bytes_in_use),
                     " bytes free in the pool (largest free chunk ", LargestFreeLocked(),
                     " bytes), ", pool_bytes_, " bytes in ", regions_by_ptr_.size(),
                     " regions of a limit of ", limit_, " bytes");
}

BfcStats BfcAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BfcStats s = stats_;
  s.pool_bytes = static_cast<int64_t>(pool_bytes_);
  s.num_regions = static_cast<int64_t>(regions_by_ptr_.size());
  s.largest_free_chunk = static_cast<int64_t>(LargestFreeLocked());
  return s;
}

}  // namespace cfx::cuda
