// The CPU plugin's vectorized float erf, erfc, exp, sigmoid and tanh
// (plugins/cpu/kernels/vector_math.h) against the C library's (std::erf, std::erfc, std::exp,
// 1 / (1 + std::exp(-x)), std::tanh) in the same run, one thread, on 64k values distributed as
// GELU's argument x / sqrt(2) for standard normal x (times 4 for exp, sigmoid and tanh, the
// spread of a recurrent cell's pre-activations). Each instruction-set level this CPU runs is
// measured; a summary prints the speedup (median rates, vectorized / std) per function and level.
//
//   vector_math_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "kernels/vector_math.h"

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

struct Function {
  const char* name;
  cfx::cpu::VectorFunction f;
  float (*standard)(float);
  float scale;  // of the inputs
};

const Function kFunctions[] = {
    {"erf", cfx::cpu::VectorFunction::kErf, [](float x) { return std::erf(x); }, 1.0f},
    {"erfc", cfx::cpu::VectorFunction::kErfc, [](float x) { return std::erfc(x); }, 1.0f},
    {"exp", cfx::cpu::VectorFunction::kExp, [](float x) { return std::exp(x); }, 4.0f},
    {"sigmoid", cfx::cpu::VectorFunction::kSigmoid,
     [](float x) { return 1.0f / (1.0f + std::exp(-x)); }, 4.0f},
    {"tanh", cfx::cpu::VectorFunction::kTanh, [](float x) { return std::tanh(x); }, 4.0f},
};

std::vector<float> Scaled(float scale) {
  std::vector<float> x = Inputs();
  for (float& v : x) v *= scale;
  return x;
}

void Vectorized(benchmark::State& state, const Function* fn, SimdLevel level) {
  const std::vector<float> x = Scaled(fn->scale);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    cfx::cpu::VectorSpan(fn->f, x.data(), y.data(), kCount, level);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * kCount);
}

void Standard(benchmark::State& state, const Function* fn) {
  const std::vector<float> x = Scaled(fn->scale);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    for (int64_t i = 0; i < kCount; ++i) y[i] = fn->standard(x[i]);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetItemsProcessed(state.iterations() * kCount);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Function& fn : kFunctions) {
    benchmark::RegisterBenchmark((std::string("std/") + fn.name).c_str(), Standard, &fn);
    for (int l = 0; l <= static_cast<int>(cfx::cpu::BestSimdLevel()); ++l) {
      const SimdLevel level = static_cast<SimdLevel>(l);
      benchmark::RegisterBenchmark(
          (std::string("vectorized/") + fn.name + "/" + cfx::cpu::Name(level)).c_str(), Vectorized,
          &fn, level);
    }
  }
  benchmark::Initialize(&argc, argv);
  cfx::bench::RateReporter reporter("items_per_second");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nspeedup over the C library (median rate, vectorized / std):\n");
  for (const Function& f : kFunctions) {
    const char* fn = f.name;
    const double standard = reporter.Get(std::string("std/") + fn).median;
    for (int l = 0; l <= static_cast<int>(cfx::cpu::BestSimdLevel()); ++l) {
      const char* level = cfx::cpu::Name(static_cast<SimdLevel>(l));
      const double rate = reporter.Get(std::string("vectorized/") + fn + "/" + level).median;
      if (!std::isnan(rate) && !std::isnan(standard))
        std::printf("  %-7s %-8s %6.1fx\n", fn, level, rate / standard);
    }
  }
  benchmark::Shutdown();
  return 0;
}
