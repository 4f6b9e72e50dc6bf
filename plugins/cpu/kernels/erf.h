// Vectorized erf and erfc of float arrays, for the Erf and Erfc kernels (and GELU built from
// them). The loops are compiled for the baseline x86-64 instruction set and for AVX2 + FMA and
// AVX-512, and the widest the CPU has is chosen once at run time (the plugin is never built for
// the build machine's own CPU). Results are within a few units in the last place of the exact
// values over the whole float range, denormals included; erf(±inf) = ±1, erfc(+inf) = 0,
// erfc(-inf) = 2, NaN gives NaN. tests/kernels/erf_test.cc holds the bounds. Stateless and
// thread-safe.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_ERF_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_ERF_H_

#include <cstdint>

namespace cfx::cpu {

// The instruction sets the loops are compiled for, narrowest first.
enum class SimdLevel { kBaseline, kAvx2, kAvx512 };

// "baseline", "avx2" or "avx512".
const char* Name(SimdLevel level);

// The widest level that this build has loops for and this CPU can run.
SimdLevel BestSimdLevel();

// y[i] = erf(x[i]) (ErfSpan) or erfc(x[i]) (ErfcSpan) for i in [0, n). `y` may be `x`; other
// overlaps are not allowed. `level` must be at most BestSimdLevel() (tests compare the levels).
void ErfSpan(const float* x, float* y, int64_t n, SimdLevel level = BestSimdLevel());
void ErfcSpan(const float* x, float* y, int64_t n, SimdLevel level = BestSimdLevel());

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_ERF_H_
