// The CPU device's allocation path (plugins/cpu/block_cache.h) against the aligned_alloc and
// free it replaces, for 8 blocks allocated and freed in turn, as a step makes and frees its
// tensors: the time of one iteration is 8 allocations and frees.
//
//   block_cache_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//
// Between 8 KiB and 64 KiB glibc gives the freed top of its heap back to the system and faults
// it in again on the next allocation; below, aligned_alloc takes malloc's slow path (no
// per-thread cache).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "block_cache.h"

namespace {

constexpr int kBlocks = 8;

void BM_BlockCache(benchmark::State& state) {
  static cfx::cpu::BlockCache cache(size_t{1} << 30);
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<void*> blocks(kBlocks);
  for (auto _ : state) {
    for (void*& p : blocks) p = cache.Allocate(bytes, 64);
    benchmark::DoNotOptimize(blocks.data());
    for (void* p : blocks) cache.Deallocate(p, bytes);
  }
}

void BM_AlignedAlloc(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<void*> blocks(kBlocks);
  for (auto _ : state) {
    for (void*& p : blocks) p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    benchmark::DoNotOptimize(blocks.data());
    for (void* p : blocks) std::free(p);
  }
}

BENCHMARK(BM_BlockCache)->Arg(4)->Arg(256)->Arg(4096)->Arg(40000);
BENCHMARK(BM_AlignedAlloc)->Arg(4)->Arg(256)->Arg(4096)->Arg(40000);

}  // namespace

BENCHMARK_MAIN();
