// BlockCache: the CPU device keeps large freed blocks for the next allocation of the same size.
// A block of 64 MiB from malloc is a fresh mapping each time (glibc maps anything above 32 MiB
// on its own and unmaps it on free), and its first touch costs a page fault per 4 KiB page,
// about as long as reading the whole block again: a training step that makes the same large
// tensors every step (gradients, activations, all-reduce results) paid that every step. Smaller
// blocks fault again too: glibc gives the free memory at the top of its heap back to the system,
// so a 64 KiB result made and freed once per step touched fresh pages every step (its
// all-reduce took a third longer than on a reused buffer). Blocks of at least kMinBytes go back
// to a list per size instead, up to `capacity` bytes in all (the oldest are freed first beyond
// it).
// Smaller blocks go to a stack per size class (64-byte steps up to 1 KiB, 512-byte steps up to
// 8 KiB, 4 KiB steps above), up to kSmallCapacity bytes in all: a tensor's 64-byte alignment
// makes malloc take its slow path (aligned_alloc skips glibc's per-thread cache: 90 to 150 ns
// against 20 to 50 for a plain malloc and free, and its large requests consolidate the heap), and
// a step makes and frees the same small tensors every time. Under AddressSanitizer small blocks
// are not kept, so that a use after free is still caught.
// Cached bytes do not count as in use in the allocator's statistics. Thread-safe.
#ifndef CONFLUX_PLUGINS_CPU_BLOCK_CACHE_H_
#define CONFLUX_PLUGINS_CPU_BLOCK_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <vector>

namespace cfx::cpu {

class BlockCache {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 16;
  // Cached blocks are page-aligned (a request for more alignment gets a block of its own,
  // which is cached like the others once freed); smaller blocks at least 64-byte aligned.
  static constexpr size_t kBlockAlignment = 4096;
  // Small blocks kept at most (per cache), and whether they are kept at all.
  static constexpr size_t kSmallCapacity = size_t{32} << 20;
  static const bool kKeepsSmallBlocks;

  explicit BlockCache(size_t capacity) : capacity_(capacity) {}
  ~BlockCache();  // frees what it holds
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // `bytes` at `alignment`, or nullptr when memory is exhausted.
  void* Allocate(size_t bytes, size_t alignment);
  // Takes back what Allocate returned for `bytes`.
  void Deallocate(void* p, size_t bytes);

  size_t cached_bytes() const;
  // The cache for the CPU device: capacity 1/8 of physical memory, at most 4 GiB.
  static BlockCache& ForDevice();

 private:
  // The size of the block that serves `bytes`; 0 below kMinBytes (a small block).
  static size_t Rounded(size_t bytes);
  // The size class of a small block of `bytes` (< kMinBytes), and its size.
  static int SmallClass(size_t bytes, size_t* size);
  static size_t ClassSize(int c);
  static constexpr int kSmallClasses = 16 + 14 + 14;
  void* AllocateSmall(size_t bytes, size_t alignment);
  void DeallocateSmall(void* p, size_t bytes);
  void FreeOldest();  // mu_ held

  const size_t capacity_;
  mutable std::mutex mu_;
  size_t cached_ = 0;
  // Cached blocks, oldest first, and where each size's blocks are in that list.
  std::list<std::pair<size_t, void*>> order_;
  std::multimap<size_t, std::list<std::pair<size_t, void*>>::iterator> by_size_;
  // Freed small blocks per class, newest last, each class under its own lock (threads that
  // allocate blocks of other sizes do not wait for each other).
  struct SmallBlocks {
    std::mutex mu;
    std::vector<void*> blocks;
  };
  SmallBlocks small_[kSmallClasses];
  std::atomic<size_t> small_cached_{0};
};

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_BLOCK_CACHE_H_
