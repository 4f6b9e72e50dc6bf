// The CPU plugin's vectorized float erf and erfc (plugins/cpu/kernels/erf.h) against the C
// library's std::erf and std::erfc in the same run, one thread, on 64k values distributed as
// GELU's argument x / sqrt(2) for standard normal x. Each instruction-set level this CPU runs is
// measured; a summary prints the speedup (median rates, vectorized / std) per function and level.
//
//   erf_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/erf.h"

namespace {

using cfx::cpu::SimdLevel;

constexpr int64_t kCount = 1 << 16;

const std::vector<float>& Inputs() {
  static const std::vector<float> x = [] {
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(kCount);
    for (float& e : v) e = normal(rng) / std::sqrt(2.0f);
    return v;
  }();
  return x;
}

void Vectorized(benchmark::State& state, bool complement, SimdLevel level) {
  const std::vector<float>& x = Inputs();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    if (complement) {
      cfx::cpu::ErfcSpan(x.data(), y.data(), kCount, level);
    } else {
      cfx::cpu::ErfSpan(x.data(), y.data(), kCount, level);
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * kCount);
}

void Standard(benchmark::State& state, bool complement) {
  const std::vector<float>& x = Inputs();
  std::vector<float> y(x.size());
  for (auto _ : state) {
    for (int64_t i = 0; i < kCount; ++i) y[i] = complement ? std::erfc(x[i]) : std::erf(x[i]);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * kCount);
}

}  // namespace

int main(int argc, char** argv) {
  for (bool complement : {false, true}) {
    const std::string fn = complement ? "erfc" : "erf";
    benchmark::RegisterBenchmark(("std/" + fn).c_str(), Standard, complement);
    for (int l = 0; l <= static_cast<int>(cfx::cpu::BestSimdLevel()); ++l) {
      const SimdLevel level = static_cast<SimdLevel>(l);
      benchmark::RegisterBenchmark(("vectorized/" + fn + "/" + cfx::cpu::Name(level)).c_str(),
                                   Vectorized, complement, level);
    }
  }
  benchmark::Initialize(&argc, argv);
  cfx::bench::RateReporter reporter("items_per_second");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nspeedup over the C library (median rate, vectorized / std):\n");
  for (const char* fn : {"erf", "erfc"}) {
    const double standard = reporter.Get(std::string("std/") + fn).median;
    for (int l = 0; l <= static_cast<int>(cfx::cpu::BestSimdLevel()); ++l) {
      const char* level = cfx::cpu::Name(static_cast<SimdLevel>(l));
      const double rate = reporter.Get(std::string("vectorized/") + fn + "/" + level).median;
      if (!std::isnan(rate) && !std::isnan(standard))
        std::printf("  %-5s %-8s %6.1fx\n", fn, level, rate / standard);
    }
  }
  benchmark::Shutdown();
  return 0;
}
