// Private to the CPU linear-algebra kernels: batches of matrix products, shared by BatchMatMulV2
// (linalg.cc) and Einsum (einsum.cc).
#ifndef CONFLUX_PLUGINS_CPU_KERNELS_BATCH_MATMUL_H_
#define CONFLUX_PLUGINS_CPU_KERNELS_BATCH_MATMUL_H_

#include <cstdint>

#include "conflux/sdk.h"

namespace cfx::cpu {

// out[b] = x[b] * y[b] for b in [0, batches): x is [batches, m, k], y [batches, k, n] and out
// [batches, m, n], all row-major and contiguous; k may be 0 (zeros). float through oneDNN's
// sgemm, double, int32 and int64 through a plain loop; batches in parallel on the intra-op pool.
// Internal when sgemm fails.
template <typename T>
sdk::Status MultiplyMatrices(sdk::KernelContext& ctx, const T* x, const T* y, T* out,
                             int64_t batches, int64_t m, int64_t k, int64_t n);

// Einsum (einsum.cc); called by RegisterLinalgKernels.
void RegisterEinsumKernels(sdk::Plugin& p);

}  // namespace cfx::cpu

#endif  // CONFLUX_PLUGINS_CPU_KERNELS_BATCH_MATMUL_H_
