// BfcAllocator: a best-fit-with-coalescing pool (TensorFlow's BFC design) over large regions that
// a RegionAllocator hands out (cudaMalloc for device memory, cudaHostAlloc for pinned host memory,
// malloc in tests). Requests are rounded up to multiples of 256 bytes (the alignment of every
// pointer returned) and served from the smallest free chunk that fits, found through bins of free
// chunks by size (bin b holds chunks of 256 * 2^b bytes up to twice that; the last bin holds all
// larger ones); a chunk larger than the request is split and the rest goes back to its bin. A freed
// chunk merges with free neighbours in its region. When nothing fits, a new region is asked for:
// the next region size doubles each time one is added (starting at `initial_region_bytes`), never
// smaller than the request and never past `limit` bytes in regions. When the region allocator
// refuses, smaller sizes are tried down to the request; when still nothing fits, regions that are
// entirely free go back and the request is tried once more.
//
// Thread-safe: every public method may be called from any thread.
#ifndef CONFLUX_PLUGINS_CUDA_BFC_ALLOCATOR_H_
#define CONFLUX_PLUGINS_CUDA_BFC_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "conflux/sdk/status.h"

namespace cfx::cuda {

// Where the pool's regions come from. Allocate returns null when it cannot (out of memory);
// pointers must be at least 256-byte aligned.
class RegionAllocator {
 public:
  virtual ~RegionAllocator() = default;
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr, size_t bytes) = 0;
};

// A point-in-time copy of the pool's counters.
struct BfcStats {
  int64_t bytes_in_use = 0;       // rounded sizes of the chunks handed out
  int64_t peak_bytes_in_use = 0;  // the largest bytes_in_use so far
  int64_t num_allocs = 0;         // successful Allocate calls so far
  int64_t chunks_in_use = 0;
  int64_t pool_bytes = 0;  // bytes in regions, in use or free
  int64_t num_regions = 0;
  int64_t largest_free_chunk = 0;  // the largest request that would fit without a new region
  int64_t bytes_limit = 0;         // what regions may add up to
};

class BfcAllocator {
 public:
  static constexpr size_t kAlignment = 256;
  static constexpr int kNumBins = 21;

  // `name` prefixes error messages ("GPU:0 device memory"). `limit`: the most bytes that regions
  // may add up to (> 0). `initial_region_bytes`: the size of the first region (rounded to 256).
  BfcAllocator(std::unique_ptr<RegionAllocator> regions, std::string name, size_t limit,
               size_t initial_region_bytes = size_t{2} << 20);
  ~BfcAllocator();  // returns every region, including chunks still handed out
  BfcAllocator(const BfcAllocator&) = delete;
  BfcAllocator& operator=(const BfcAllocator&) = delete;

  // A 256-byte aligned block of at least `bytes` bytes (a distinct block for 0 bytes).
  // ResourceExhausted naming the request and the pool's state when it cannot be had within the
  // limit or the region allocator refuses; InvalidArgument for an alignment above 256.
  sdk::Result<void*> Allocate(size_t bytes, size_t alignment = kAlignment);
  // Returns a block from Allocate; merges it with free neighbours. Null is ignored. Returns
  // false (and changes nothing) for a pointer this pool did not hand out.
  bool Free(void* ptr);
  // True when `ptr` lies inside one of the pool's regions.
  bool Owns(const void* ptr) const;
  BfcStats Stats() const;
  // The block's rounded size (0 for a pointer not handed out).
  size_t AllocatedSize(const void* ptr) const;
  // Gives back every region in which nothing is handed out; returns the bytes released.
  size_t ReleaseFreeRegions();
  const std::string& name() const { return name_; }

 private:
  using ChunkId = int32_t;
  static constexpr ChunkId kNone = -1;
  struct Chunk {
    uintptr_t ptr = 0;
    size_t size = 0;
    bool in_use = false;
    ChunkId prev = kNone;  // neighbours in the same region, by address
    ChunkId next = kNone;
    int bin = -1;  // the bin it sits in while free, -1 otherwise
  };
  struct Region {
    uintptr_t ptr;
    size_t size;
  };
  // A bin's free chunks by size, then address: the first entry >= (n, 0) is the best fit, and
  // of equal sizes the lowest address goes first (it keeps the high ends free to merge).
  using BinKey = std::tuple<size_t, uintptr_t, ChunkId>;

  static int BinFor(size_t bytes);
  ChunkId NewChunk(uintptr_t ptr, size_t size);
  void DeleteChunk(ChunkId id);
  void InsertFree(ChunkId id);
  void RemoveFree(ChunkId id);
  // Best fit among free chunks, split to `rounded`, marked in use; kNone when none fits.
  ChunkId TakeBestFit(size_t rounded);
  // Adds a region of at least `rounded` bytes as one free chunk; false when none can be had.
  bool Extend(size_t rounded);
  size_t ReleaseFreeRegionsLocked();
  size_t LargestFreeLocked() const;
  std::string StateLocked() const;

  std::unique_ptr<RegionAllocator> regions_;
  const std::string name_;
  const size_t limit_;

  mutable std::mutex mu_;
  size_t next_region_bytes_;
  std::vector<Chunk> chunks_;
  std::vector<ChunkId> free_ids_;
  std::vector<std::set<BinKey>> bins_;
  std::unordered_map<uintptr_t, ChunkId> by_ptr_;  // every chunk, by its first byte
  std::map<uintptr_t, Region> regions_by_ptr_;
  size_t pool_bytes_ = 0;
  BfcStats stats_;
};

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_BFC_ALLOCATOR_H_
