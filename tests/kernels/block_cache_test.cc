// The CPU device's cache of freed blocks (plugins/cpu/block_cache.h).
#include "block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace cfx::cpu {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(BlockCache, AFreedLargeBlockServesTheNextRequestOfItsSize) {
  BlockCache cache(64 * kMiB);
  void* a = cache.Allocate(8 * kMiB, 64);
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, 8 * kMiB);
  cache.Deallocate(a, 8 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 8 * kMiB);
  void* b = cache.Allocate(8 * kMiB - 100, 64);  // the same 64 KiB class
  EXPECT_EQ(b, a);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  void* c = cache.Allocate(8 * kMiB, 64);  // none cached now: a new block
  EXPECT_NE(c, a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % BlockCache::kBlockAlignment, 0u);
  cache.Deallocate(b, 8 * kMiB - 100);
  cache.Deallocate(c, 8 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 16 * kMiB);
}

TEST(BlockCache, BlocksBelowAMebibyteAreClassedByPage) {
  BlockCache cache(64 * kMiB);
  constexpr size_t k64 = size_t{64} << 10;
  void* a = cache.Allocate(k64 + 100, 64);  // the 68 KiB class
  cache.Deallocate(a, k64 + 100);
  EXPECT_EQ(cache.cached_bytes(), k64 + 4096);
  void* b = cache.Allocate(k64 + 8192, 64);  // the 72 KiB class: a new block
  EXPECT_NE(b, a);
  void* c = cache.Allocate(k64 + 4000, 64);  // the 68 KiB class again
  EXPECT_EQ(c, a);
  cache.Deallocate(b, k64 + 8192);
  cache.Deallocate(c, k64 + 4000);
  EXPECT_EQ(cache.cached_bytes(), 2 * k64 + 3 * 4096);
}

TEST(BlockCache, SmallBlocksAreKeptPerSizeClass) {
  BlockCache cache(64 * kMiB);
  void* a = cache.Allocate(1000, 64);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  cache.Deallocate(a, 1000);
  if (!BlockCache::kKeepsSmallBlocks) {  // AddressSanitizer: every small block is freed
    EXPECT_EQ(cache.cached_bytes(), 0u);
    return;
  }
  EXPECT_EQ(cache.cached_bytes(), 1024u);  // 1000 B is in the 1 KiB class
  void* b = cache.Allocate(1500, 64);      // the 1.5 KiB class: a new block
  EXPECT_EQ(cache.Allocate(961, 64), a);   // the 1 KiB class again
  void* c = cache.Allocate(20000, 64);     // 20 KiB class (4 KiB steps above 8 KiB)
  std::memset(c, 1, 20480);                // the whole class size is the block's
  cache.Deallocate(c, 20000);
  EXPECT_EQ(cache.Allocate(17000, 64), c);
  // More alignment than 64 bytes: a block of its own (at least its class's size), kept once
  // freed like the others.
  void* d = cache.Allocate(100, 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % 4096, 0u);
  cache.Deallocate(d, 100);
  EXPECT_EQ(cache.Allocate(128, 64), d);
  cache.Deallocate(a, 961);
  cache.Deallocate(b, 1500);
  cache.Deallocate(c, 17000);
  cache.Deallocate(d, 128);
  EXPECT_EQ(cache.cached_bytes(), 1024u + 1536u + 20480u + 128u);
}

TEST(BlockCache, SmallBlocksBeyondTheirCapacityAreFreed) {
  BlockCache cache(64 * kMiB);
  std::vector<void*> blocks;
  const size_t n = BlockCache::kSmallCapacity / 32768 + 4;
  for (size_t i = 0; i < n; ++i) blocks.push_back(cache.Allocate(32768, 64));
  for (void* p : blocks) cache.Deallocate(p, 32768);
  EXPECT_LE(cache.cached_bytes(), BlockCache::kSmallCapacity);
  if (BlockCache::kKeepsSmallBlocks) EXPECT_EQ(cache.cached_bytes(), BlockCache::kSmallCapacity);
}

TEST(BlockCache, BeyondItsCapacityTheOldestBlocksAreFreed) {
  BlockCache cache(10 * kMiB);
  void* a = cache.Allocate(4 * kMiB, 64);
  void* b = cache.Allocate(4 * kMiB, 64);
  void* c = cache.Allocate(3 * kMiB, 64);
  cache.Deallocate(a, 4 * kMiB);
  cache.Deallocate(b, 4 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 8 * kMiB);
  cache.Deallocate(c, 3 * kMiB);  // 11 MiB > 10: `a` goes
  EXPECT_EQ(cache.cached_bytes(), 7 * kMiB);
  EXPECT_EQ(cache.Allocate(4 * kMiB, 64), b);  // the one 4 MiB block left
  EXPECT_EQ(cache.Allocate(3 * kMiB, 64), c);
  void* huge = cache.Allocate(12 * kMiB, 64);  // larger than the capacity: never cached
  cache.Deallocate(huge, 12 * kMiB);
  EXPECT_EQ(cache.cached_bytes(), 0u);
  cache.Deallocate(b, 4 * kMiB);
  cache.Deallocate(c, 3 * kMiB);
}

TEST(BlockCache, OverAlignedRequestsGetTheirAlignment) {
  BlockCache cache(64 * kMiB);
  void* a = cache.Allocate(2 * kMiB, 64);
  cache.Deallocate(a, 2 * kMiB);
  void* b = cache.Allocate(2 * kMiB, 32768);  // the cached block is only page-aligned
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 32768, 0u);
  cache.Deallocate(b, 2 * kMiB);
}

TEST(BlockCache, ThreadsAllocatingAndFreeingNeverShareABlock) {
  BlockCache cache(32 * kMiB);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        // Large blocks (1 to 3 MiB) and small ones (64 B to 32 KiB) in turn.
        const size_t bytes =
            i % 2 == 0 ? (1 + (i + t) % 3) * kMiB : size_t{64} << ((i / 2 + t) % 10);
        auto* p = static_cast<unsigned char*>(cache.Allocate(bytes, 64));
        std::memset(p, t + 1, bytes);
        std::this_thread::yield();  // let the others write their blocks meanwhile
        for (size_t k = 0; k < bytes; k += 64) failures[t] += p[k] != t + 1;
        cache.Deallocate(p, bytes);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  EXPECT_LE(cache.cached_bytes(), 32 * kMiB);
}

}  // namespace
}  // namespace cfx::cpu
