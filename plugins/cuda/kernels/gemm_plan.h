// How MatMul and BatchMatMulV2 map onto cuBLAS's column-major GEMM: host logic, free of CUDA, so
// that it is tested without a GPU (tests/cuda/gemm_plan_test.cc runs plans through a host GEMM
// with cuBLAS's contract).
//
// Row-major C[m,n] = op(A) op(B) is, read column-major, C^T = op(B)^T op(A)^T: cuBLAS gets B as
// its first operand and A as its second, with the same transpose flags, and no data moves.
#ifndef CONFLUX_PLUGINS_CUDA_KERNELS_GEMM_PLAN_H_
#define CONFLUX_PLUGINS_CUDA_KERNELS_GEMM_PLAN_H_

#include <cstdint>
#include <vector>

#include "conflux/sdk/broadcast_plan.h"
#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"

namespace cfx::cuda {

// One cuBLAS call's arguments in cuBLAS's (column-major) terms, or a batch of them.
struct GemmPlan {
  sdk::Shape output_shape;
  // cublasSgemm(op(first), op(second), rows, cols, depth, first = B, second = A, C):
  bool transpose_first = false;                 // op on B
  bool transpose_second = false;                // op on A
  int rows = 0;                                 // n: rows of C^T
  int cols = 0;                                 // m: columns of C^T
  int depth = 0;                                // k
  int ld_first = 0, ld_second = 0, ld_out = 0;  // leading dimensions of B, A, C
  // Batches: `batch` products; when `strided`, matrix i of A, B and C starts at i * stride_*
  // elements (stride 0: the operand broadcasts); otherwise offsets_a/offsets_b/offsets_c give
  // each product's element offsets (general broadcasting of the batch dims).
  int64_t batch = 1;
  bool strided = true;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  std::vector<int64_t> offsets_a, offsets_b, offsets_c;
};

// MatMul: a and b matrices. InvalidArgument naming the shapes for a rank other than 2 or a
// contraction mismatch; Unimplemented for dims above 2^31-1.
sdk::Result<GemmPlan> PlanMatMul(const sdk::Shape& a, const sdk::Shape& b, bool transpose_a,
                                 bool transpose_b);

// BatchMatMulV2: x [..., r, c] and y [..., r, c], batch dims broadcast NumPy-style.
sdk::Result<GemmPlan> PlanBatchMatMul(const sdk::Shape& x, const sdk::Shape& y, bool adj_x,
                                      bool adj_y);

}  // namespace cfx::cuda

#endif  // CONFLUX_PLUGINS_CUDA_KERNELS_GEMM_PLAN_H_
