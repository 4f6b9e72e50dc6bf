// The CUDA plugin's pool allocator over host memory (no GPU needed): alignment, splitting,
// best fit, coalescing, region growth, the limit, fragmentation and its error message.
#include "bfc_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <vector>

namespace cfx::cuda {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

// Regions from aligned_alloc; records every size asked for; refuses sizes above `max_region`.
class MallocRegions final : public RegionAllocator {
 public:
  explicit MallocRegions(std::vector<size_t>* asked, size_t max_region = SIZE_MAX)
      : asked_(asked), max_region_(max_region) {}
  void* Allocate(size_t bytes) override {
    asked_->push_back(bytes);
    if (bytes > max_region_) return nullptr;
    return std::aligned_alloc(BfcAllocator::kAlignment, bytes);
  }
  void Free(void* ptr, size_t) override { std::free(ptr); }

 private:
  std::vector<size_t>* asked_;
  size_t max_region_;
};

struct Pool {
  explicit Pool(size_t limit, size_t initial = 64 * kKiB, size_t max_region = SIZE_MAX)
      : bfc(std::make_unique<MallocRegions>(&asked, max_region), "TEST:0 memory", limit, initial) {}
  void* Alloc(size_t bytes) {
    auto r = bfc.Allocate(bytes);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : nullptr;
  }
  std::vector<size_t> asked;
  BfcAllocator bfc;
};

uintptr_t Addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(BfcAllocator, RoundsTo256AndSplitsOneRegion) {
  Pool pool(16 * kMiB);
  void* a = pool.Alloc(1000);
  void* b = pool.Alloc(1);
  void* c = pool.Alloc(0);
  for (void* p : {a, b, c}) EXPECT_EQ(Addr(p) % 256, 0u);
  // One region, carved in address order: 1024, then 256, then 256 bytes.
  EXPECT_EQ(pool.asked, std::vector<size_t>{64 * kKiB});
  EXPECT_EQ(Addr(b), Addr(a) + 1024);
  EXPECT_EQ(Addr(c), Addr(b) + 256);
  EXPECT_EQ(pool.bfc.AllocatedSize(a), 1024u);
  EXPECT_EQ(pool.bfc.AllocatedSize(c), 256u);
  BfcStats s = pool.bfc.Stats();
  EXPECT_EQ(s.bytes_in_use, 1536);
  EXPECT_EQ(s.chunks_in_use, 3);
  EXPECT_EQ(s.pool_bytes, static_cast<int64_t>(64 * kKiB));
  EXPECT_EQ(s.largest_free_chunk, static_cast<int64_t>(64 * kKiB - 1536));
  EXPECT_TRUE(pool.bfc.Owns(static_cast<char*>(a) + 5));
  int on_stack = 0;
  EXPECT_FALSE(pool.bfc.Owns(&on_stack));
}

TEST(BfcAllocator, FreedNeighboursCoalesce) {
  Pool pool(16 * kMiB);
  void* a = pool.Alloc(4 * kKiB);
  void* b = pool.Alloc(4 * kKiB);
  void* c = pool.Alloc(4 * kKiB);
  ASSERT_TRUE(pool.bfc.Free(a));
  ASSERT_TRUE(pool.bfc.Free(c));  // merges with the free tail of the region
  EXPECT_EQ(pool.bfc.Stats().largest_free_chunk, static_cast<int64_t>(64 * kKiB - 8 * kKiB));
  ASSERT_TRUE(pool.bfc.Free(b));  // merges both sides: the region is one free chunk again
  EXPECT_EQ(pool.bfc.Stats().largest_free_chunk, static_cast<int64_t>(64 * kKiB));
  EXPECT_EQ(pool.bfc.Stats().bytes_in_use, 0);
  // The merged chunk serves a request as large as all three.
  void* big = pool.Alloc(12 * kKiB);
  EXPECT_EQ(big, a);
  EXPECT_EQ(pool.asked.size(), 1u);
}

TEST(BfcAllocator, TakesTheSmallestHoleThatFits) {
  Pool pool(16 * kMiB);
  void* large_hole = pool.Alloc(4 * kKiB);
  void* keep1 = pool.Alloc(256);
  void* small_hole = pool.Alloc(2 * kKiB);
  void* keep2 = pool.Alloc(256);
  ASSERT_TRUE(pool.bfc.Free(large_hole));
  ASSERT_TRUE(pool.bfc.Free(small_hole));
  // 1.5 KiB fits both holes and the region's tail: the 2 KiB hole is the best fit.
  void* p = pool.Alloc(1536);
  EXPECT_EQ(p, small_hole);
  // Its 512-byte rest stays free and serves the next small request.
  void* q = pool.Alloc(512);
  EXPECT_EQ(Addr(q), Addr(small_hole) + 1536);
  (void)keep1;
  (void)keep2;
}

TEST(BfcAllocator, RegionsGrowByDoubling) {
  Pool pool(64 * kMiB, 1 * kMiB);
  pool.Alloc(1 * kMiB);  // fills the first region
  pool.Alloc(1 * kMiB);  // a second region of 2 MiB
  pool.Alloc(2 * kMiB);  // 1 MiB left there: a third region of 4 MiB
  pool.Alloc(5 * kMiB);  // 4 - 2 = 2 MiB left: a fourth of 8 MiB
  EXPECT_EQ(pool.asked, (std::vector<size_t>{1 * kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB}));
  EXPECT_EQ(pool.bfc.Stats().num_regions, 4);
  // A request larger than the next doubling gets a region of its own size.
  pool.Alloc(40 * kMiB);
  EXPECT_EQ(pool.asked.back(), 40 * kMiB);
}

TEST(BfcAllocator, RegionsStopAtTheLimit) {
  Pool pool(3 * kMiB, 2 * kMiB);
  void* a = pool.Alloc(2 * kMiB);
  // The next region would be 4 MiB: it is cut to the 1 MiB the limit leaves.
  void* b = pool.Alloc(512 * kKiB);
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(pool.asked.back(), 1 * kMiB);
  auto c = pool.bfc.Allocate(768 * kKiB);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), CFX_RESOURCE_EXHAUSTED);
  const std::string m = c.status().message();
  EXPECT_NE(m.find("TEST:0 memory: out of memory allocating 786432 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("2621440 bytes in use in 2 chunks"), std::string::npos) << m;
  EXPECT_NE(m.find("largest free chunk 524288 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("limit of 3145728 bytes"), std::string::npos) << m;
  (void)a;
}

TEST(BfcAllocator, FragmentationIsReportedWhenNoHoleFits) {
  Pool pool(2 * kMiB, 2 * kMiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(pool.Alloc(256 * kKiB));
  for (int i = 0; i < 8; i += 2) ASSERT_TRUE(pool.bfc.Free(blocks[i]));
  // 1 MiB is free, but in four separate 256 KiB holes.
  BfcStats s = pool.bfc.Stats();
  EXPECT_EQ(s.pool_bytes - s.bytes_in_use, static_cast<int64_t>(1 * kMiB));
  EXPECT_EQ(s.largest_free_chunk, static_cast<int64_t>(256 * kKiB));
  auto r = pool.bfc.Allocate(512 * kKiB);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("1048576 bytes free in the pool (largest free chunk 262144"),
            std::string::npos)
      << r.status().message();
  // Freeing one neighbour makes a 768 KiB hole that fits.
  ASSERT_TRUE(pool.bfc.Free(blocks[1]));
  EXPECT_EQ(pool.Alloc(512 * kKiB), blocks[0]);
}

TEST(BfcAllocator, GivesBackFreeRegionsBeforeFailing) {
  Pool pool(3 * kMiB, 1 * kMiB);
  void* a = pool.Alloc(1 * kMiB);
  ASSERT_TRUE(pool.bfc.Free(a));
  // 2.5 MiB does not fit beside the idle 1 MiB region within 3 MiB: the idle region goes back.
  void* b = pool.Alloc(2560 * kKiB);
  EXPECT_NE(b, nullptr);
  BfcStats s = pool.bfc.Stats();
  EXPECT_EQ(s.num_regions, 1);
  EXPECT_EQ(s.pool_bytes, static_cast<int64_t>(2560 * kKiB));
}

TEST(BfcAllocator, StepsDownWhenTheRegionAllocatorRefuses) {
  // The device cannot give 4 MiB at once, but 3 MiB (>= the request) it can.
  Pool pool(64 * kMiB, 4 * kMiB, /*max_region=*/3 * kMiB);
  void* p = pool.Alloc(2 * kMiB);
  EXPECT_NE(p, nullptr);
  ASSERT_GE(pool.asked.size(), 2u);
  EXPECT_EQ(pool.asked.front(), 4 * kMiB);
  EXPECT_LE(pool.bfc.Stats().pool_bytes, static_cast<int64_t>(3 * kMiB));
  EXPECT_GE(pool.bfc.Stats().pool_bytes, static_cast<int64_t>(2 * kMiB));
  // A request the region allocator can never satisfy is ResourceExhausted, not a crash.
  auto r = pool.bfc.Allocate(10 * kMiB);
  EXPECT_EQ(r.status().code(), CFX_RESOURCE_EXHAUSTED);
}

TEST(BfcAllocator, RejectsForeignPointersDoubleFreesAndLargeAlignments) {
  Pool pool(16 * kMiB);
  void* a = pool.Alloc(100);
  int on_stack = 0;
  EXPECT_FALSE(pool.bfc.Free(&on_stack));
  EXPECT_FALSE(pool.bfc.Free(static_cast<char*>(a) + 256));  // inside the pool, not a block
  EXPECT_TRUE(pool.bfc.Free(a));
  EXPECT_FALSE(pool.bfc.Free(a));
  EXPECT_TRUE(pool.bfc.Free(nullptr));
  auto r = pool.bfc.Allocate(64, 4096);
  EXPECT_EQ(r.status().code(), CFX_INVALID_ARGUMENT);
  EXPECT_TRUE(pool.bfc.Allocate(64, 128).ok());
}

TEST(BfcAllocator, PeakAndCountsFollowTheAllocations) {
  Pool pool(16 * kMiB);
  void* a = pool.Alloc(10 * kKiB);
  void* b = pool.Alloc(20 * kKiB);
  ASSERT_TRUE(pool.bfc.Free(a));
  pool.Alloc(1 * kKiB);
  BfcStats s = pool.bfc.Stats();
  EXPECT_EQ(s.peak_bytes_in_use, static_cast<int64_t>(30 * kKiB));
  EXPECT_EQ(s.bytes_in_use, static_cast<int64_t>(21 * kKiB));
  EXPECT_EQ(s.num_allocs, 3);
  EXPECT_EQ(s.bytes_limit, static_cast<int64_t>(16 * kMiB));
  (void)b;
}

TEST(BfcAllocator, RandomUseNeverOverlapsAndFullyCoalesces) {
  Pool pool(256 * kMiB, 256 * kKiB);
  std::mt19937 rng(7);
  std::map<uintptr_t, size_t> live;  // address -> requested bytes
  for (int step = 0; step < 4000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t bytes = rng() % 5 == 0 ? rng() % (512 * kKiB) : rng() % 4096;
      void* p = pool.Alloc(bytes);
      ASSERT_NE(p, nullptr);
      const uintptr_t at = Addr(p);
      ASSERT_EQ(at % 256, 0u);
      // No overlap with the live neighbours on either side.
      auto next = live.lower_bound(at);
      if (next != live.end()) {
        ASSERT_LE(at + pool.bfc.AllocatedSize(p), next->first);
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + pool.bfc.AllocatedSize(reinterpret_cast<void*>(prev->first)), at);
      }
      std::memset(p, step & 0xff, bytes);
      live[at] = bytes;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ASSERT_TRUE(pool.bfc.Free(reinterpret_cast<void*>(it->first)));
      live.erase(it);
    }
  }
  for (const auto& [at, bytes] : live) ASSERT_TRUE(pool.bfc.Free(reinterpret_cast<void*>(at)));
  BfcStats s = pool.bfc.Stats();
  EXPECT_EQ(s.bytes_in_use, 0);
  EXPECT_EQ(s.chunks_in_use, 0);
  // Every region merged back into one free chunk: all of them can be given back.
  EXPECT_EQ(pool.bfc.ReleaseFreeRegions(), static_cast<size_t>(s.pool_bytes));
  EXPECT_EQ(pool.bfc.Stats().num_regions, 0);
}

}  // namespace
}  // namespace cfx::cuda
