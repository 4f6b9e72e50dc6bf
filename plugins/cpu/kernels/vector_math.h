// Vectorized erf, erfc, exp, sigmoid and tanh of float arrays, for the kernels of those ops
// (and GELU, swish and the recurrent cells built from them). The loops are compiled for the
// baseline x86-64 instruction set and for AVX2 + FMA and AVX-512, and the widest the CPU has is
// chosen once at run time (the plugin is never built for the build machine's own CPU). Results
// are within a few units in the last place of the exact values over the whole float range,
// denormals included: erf(±inf) = ±1, erfc(+inf) = 0, erfc(-inf) = 2, exp(+inf) = +inf,
// exp(-inf) = 0, sigmoid(±inf) = 1 and 0, tanh(±inf) = ±1; NaN gives NaN.
// tests/kernels/vector_math_test.cc holds the bounds. Stateless and thread-safe.
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_VECTOR_MATH_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_VECTOR_MATH_H_

#include <cstdint>

namespace cfx::cpu {

// The instruction sets the loops are compiled for, narrowest first.
enum class SimdLevel { kBaseline, kAvx2, kAvx512 };

// "baseline", "avx2" or "avx512".
const char* Name(SimdLevel level);

// The widest level that this build has loops for and this CPU can run.
SimdLevel BestSimdLevel();

// kSwish is x * sigmoid(x): the product of x and kSigmoid's value, rounded once more, bit for
// bit what a Mul of x and Sigmoid(x) gives.
enum class VectorFunction { kErf, kErfc, kExp, kSigmoid, kTanh, kSwish };

// y[i] = f(x[i]) for i in [0, n). `y` may be `x`; other overlaps are not allowed. `level` must
// be at most BestSimdLevel() (tests compare the levels).
void VectorSpan(VectorFunction f, const float* x, float* y, int64_t n,
                SimdLevel level = BestSimdLevel());

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_VECTOR_MATH_H_
