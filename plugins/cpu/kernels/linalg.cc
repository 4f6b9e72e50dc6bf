// Linear algebra on batches of matrices, on CPU: MatrixInverse and MatrixDeterminant (float,
// double; LU with partial pivoting, computed in double), BatchMatMulV2 (float through oneDNN's
// sgemm, double/int32/int64 through a plain loop) and the products Einsum reduces to. Batches
// run in parallel on the intra-op pool. Kernels hold only attrs: Compute may run concurrently.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "cpu_device.h"
#include "kernels/batch_matmul.h"
#include "kernels/broadcast.h"
#include "kernels/kernels.h"
#include "kernels/util.h"

namespace cfx::cpu {
namespace {

// ---- LU factorisation

// Factors the n x n row-major matrix `a` in place as P A = L U, with unit lower-triangular L
// stored below the diagonal and U on and above it; row i of P A is row perm[i] of A. Returns the
// sign of P (+1 or -1). A zero pivot (the matrix is singular) leaves its column as it is, so U
// has a zero on the diagonal and nothing is divided by zero.
int LuFactor(double* a, int64_t n, int64_t* perm) {
  int sign = 1;
  for (int64_t i = 0; i < n; ++i) perm[i] = i;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot_row = k;
    for (int64_t i = k + 1; i < n; ++i) {
      if (std::abs(a[i * n + k]) > std::abs(a[pivot_row * n + k])) pivot_row = i;
    }
    if (pivot_row != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[pivot_row * n + j]);
      std::swap(perm[k], perm[pivot_row]);
      sign = -sign;
    }
    const double pivot = a[k * n + k];
    if (pivot == 0) continue;
    for (int64_t i = k + 1; i < n; ++i) {
      const double factor = a[i * n + k] /= pivot;
      if (factor == 0) continue;
      for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= factor * a[k * n + j];
    }
  }
  return sign;
}

// Input 0 as a batch of square matrices: InvalidArgument naming the shape unless it is
// [..., M, M]. On success *count is the number of matrices and *size is M.
sdk::Status CheckSquareBatch(const sdk::Tensor& in, int64_t* count, int64_t* size) {
  const sdk::Shape shape = in.shape();
  if (shape.size() < 2)
    return sdk::InvalidArgument("input must be a batch of square matrices of rank >= 2, got shape ",
                                sdk::ShapeString(shape));
  const int64_t rows = shape[shape.size() - 2], cols = shape[shape.size() - 1];
  if (rows != cols)
    return sdk::InvalidArgument("input must be a batch of square matrices, got ", rows, "x", cols,
                                " matrices (shape ", sdk::ShapeString(shape), ")");
  *size = rows;
  *count = rows == 0 ? sdk::NumElements(sdk::Shape(shape.begin(), shape.end() - 2))
                     : in.num_elements() / (rows * rows);
  return sdk::Status();
}

// Rough cycles to factor an n x n matrix, for ParallelFor.
int64_t LuCost(int64_t n) { return 2 * n * n * n + 1; }

// MatrixInverse(input): the inverse of each matrix, or of its transpose when `adjoint`.
template <typename T>
class MatrixInverseKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) { return init.attrs().Get("adjoint", &adjoint_); }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor in = ctx.input(0);
    int64_t count = 0, n = 0;
    CFX_SDK_RETURN_IF_ERROR(CheckSquareBatch(in, &count, &n));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, in.shape()));
    if (out.num_elements() == 0) return sdk::Status();
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    std::atomic<bool> singular{false};
    ctx.ParallelFor(count, LuCost(n), [&](int64_t begin, int64_t end) {
      std::vector<double> lu(static_cast<size_t>(n * n)), x(static_cast<size_t>(n));
      std::vector<int64_t> perm(static_cast<size_t>(n));
      for (int64_t b = begin; b < end; ++b) {
        const T* a = src + b * n * n;
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < n; ++j)
            lu[i * n + j] = static_cast<double>(adjoint_ ? a[j * n + i] : a[i * n + j]);
        }
        LuFactor(lu.data(), n, perm.data());
        for (int64_t i = 0; i < n; ++i) {
          if (lu[i * n + i] == 0) {
            singular = true;
            return;
          }
        }
        // Column j of the inverse solves L U x = P e_j.
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t i = 0; i < n; ++i) {
            double v = perm[i] == j ? 1.0 : 0.0;
            for (int64_t k = 0; k < i; ++k) v -= lu[i * n + k] * x[k];
            x[i] = v;
          }
          for (int64_t i = n - 1; i >= 0; --i) {
            double v = x[i];
            for (int64_t k = i + 1; k < n; ++k) v -= lu[i * n + k] * x[k];
            x[i] = v / lu[i * n + i];
          }
          for (int64_t i = 0; i < n; ++i) dst[b * n * n + i * n + j] = static_cast<T>(x[i]);
        }
      }
    });
    if (singular) return sdk::InvalidArgument("Input is not invertible.");
    return sdk::Status();
  }

 private:
  bool adjoint_ = false;
};

// MatrixDeterminant(input): the determinant of each matrix (1 for 0x0 matrices).
template <typename T>
class MatrixDeterminantKernel {
 public:
  sdk::Status Compute(sdk::KernelContext& ctx) {
    const sdk::Tensor in = ctx.input(0);
    int64_t count = 0, n = 0;
    CFX_SDK_RETURN_IF_ERROR(CheckSquareBatch(in, &count, &n));
    const sdk::Shape shape = in.shape();
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out,
                             ctx.AllocateOutput(0, sdk::Shape(shape.begin(), shape.end() - 2)));
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    ctx.ParallelFor(count, LuCost(n), [&](int64_t begin, int64_t end) {
      std::vector<double> lu(static_cast<size_t>(n * n));
      std::vector<int64_t> perm(static_cast<size_t>(n));
      for (int64_t b = begin; b < end; ++b) {
        for (int64_t i = 0; i < n * n; ++i) lu[i] = static_cast<double>(src[b * n * n + i]);
        double det = LuFactor(lu.data(), n, perm.data());
        for (int64_t i = 0; i < n; ++i) det *= lu[i * n + i];
        dst[b] = static_cast<T>(det);
      }
    });
    return sdk::Status();
  }
};

// ---- BatchMatMulV2

// One call's geometry: output batch b multiplies x's matrix x_index[b] by y's matrix y_index[b].
// x_dims and y_dims are the inputs' batch dimensions, right-aligned to the output's (1 where an
// input has fewer).
struct BatchMatMulPlan {
  int64_t m = 0, k = 0, n = 0;
  sdk::Shape out_shape;
  std::vector<int64_t> x_dims, y_dims;
  std::vector<int64_t> x_index, y_index;  // filled by IndexBatches
};

// Checks the shapes (rank >= 2, matching inner dimensions, broadcastable batch dimensions) and
// plans the products; InvalidArgument naming both shapes otherwise.
sdk::Result<BatchMatMulPlan> PlanBatchMatMul(const sdk::Shape& x, const sdk::Shape& y, bool adj_x,
                                             bool adj_y) {
  auto shapes = [&] {
    return sdk::StrCat("x has shape ", sdk::ShapeString(x), " (adj_x=", adj_x ? "true" : "false",
                       "), y has shape ", sdk::ShapeString(y), " (adj_y=", adj_y ? "true" : "false",
                       ")");
  };
  if (x.size() < 2 || y.size() < 2)
    return sdk::InvalidArgument("BatchMatMulV2 inputs must have rank >= 2: ", shapes());
  const size_t xr = x.size(), yr = y.size();
  BatchMatMulPlan plan;
  plan.m = x[adj_x ? xr - 1 : xr - 2];
  plan.k = x[adj_x ? xr - 2 : xr - 1];
  const int64_t k_y = y[adj_y ? yr - 1 : yr - 2];
  plan.n = y[adj_y ? yr - 2 : yr - 1];
  if (plan.k != k_y)
    return sdk::InvalidArgument("inner dimensions of the matrices must match, got ", plan.k,
                                " and ", k_y, ": ", shapes());
  // Batch dimensions, right-aligned; a dimension of 1 broadcasts.
  const size_t rank = std::max(xr, yr) - 2;
  std::vector<int64_t>&xd = plan.x_dims, &yd = plan.y_dims;
  xd.assign(rank, 1);
  yd.assign(rank, 1);
  std::copy(x.begin(), x.end() - 2, xd.end() - static_cast<int64_t>(xr - 2));
  std::copy(y.begin(), y.end() - 2, yd.end() - static_cast<int64_t>(yr - 2));
  for (size_t d = 0; d < rank; ++d) {
    if (xd[d] != yd[d] && xd[d] != 1 && yd[d] != 1)
      return sdk::InvalidArgument("batch dimensions do not broadcast: ", shapes());
    plan.out_shape.push_back(xd[d] == 1 ? yd[d] : xd[d]);
  }
  plan.out_shape.push_back(plan.m);
  plan.out_shape.push_back(plan.n);
  return plan;
}

// Fills plan->x_index and y_index: one entry per output batch, so only once the output exists
// and has elements (an empty output may have 2^31 batches of empty matrices).
void IndexBatches(BatchMatMulPlan* plan) {
  const size_t rank = plan->x_dims.size();
  int64_t batches = 1;
  for (size_t d = 0; d < rank; ++d) batches *= plan->out_shape[d];
  plan->x_index.assign(static_cast<size_t>(batches), 0);
  plan->y_index.assign(static_cast<size_t>(batches), 0);
  // Walk the output batch index like an odometer, keeping both input indices in step.
  std::vector<int64_t> pos(rank, 0), x_stride(rank), y_stride(rank);
  int64_t xs = 1, ys = 1;
  for (size_t d = rank; d-- > 0;) {
    x_stride[d] = plan->x_dims[d] == 1 ? 0 : xs;
    y_stride[d] = plan->y_dims[d] == 1 ? 0 : ys;
    xs *= plan->x_dims[d];
    ys *= plan->y_dims[d];
  }
  int64_t xi = 0, yi = 0;
  for (int64_t b = 0; b < batches; ++b) {
    plan->x_index[b] = xi;
    plan->y_index[b] = yi;
    for (size_t d = rank; d-- > 0;) {
      xi += x_stride[d];
      yi += y_stride[d];
      if (++pos[d] < plan->out_shape[d]) break;
      xi -= x_stride[d] * pos[d];
      yi -= y_stride[d] * pos[d];
      pos[d] = 0;
    }
  }
}

// out[m, n] = op(x) * op(y) for one pair of matrices; `scratch` holds k * n elements when adj_y.
template <typename T>
void MultiplyOne(const T* x, const T* y, T* out, const BatchMatMulPlan& p, bool adj_x, bool adj_y,
                 T* scratch) {
  const int64_t m = p.m, k = p.k, n = p.n;
  const T* y_rows = y;  // op(y) as k rows of n
  if (adj_y) {          // y is stored [n, k]
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < k; ++c) scratch[c * n + r] = y[r * k + c];
    }
    y_rows = scratch;
  }
  for (int64_t i = 0; i < m; ++i) {
    T* row = out + i * n;
    std::fill(row, row + n, T(0));
    for (int64_t q = 0; q < k; ++q) {
      const T a = adj_x ? x[q * m + i] : x[i * k + q];
      const T* y_row = y_rows + q * n;
      // Integers wrap around on overflow, as the element-wise ops do (not undefined behaviour).
      for (int64_t j = 0; j < n; ++j) row[j] = WrappingAdd(row[j], WrappingMultiply(a, y_row[j]));
    }
  }
}

// The products `plan` describes, of x's and y's matrices (op'ed per adj_x, adj_y) into `outs`;
// plan.k > 0. One product per unit of work; a single product runs inline, where sgemm threads by
// itself.
template <typename T>
sdk::Status MultiplyBatches(sdk::KernelContext& ctx, const T* xs, const T* ys, T* outs,
                            const BatchMatMulPlan& plan, bool adj_x, bool adj_y) {
  const int64_t x_size = plan.m * plan.k, y_size = plan.k * plan.n, out_size = plan.m * plan.n;
  std::atomic<int> failure{dnnl_success};
  // One product threads by itself (sgemm, within GemmThreads); several share the team, one each.
  std::optional<GemmThreads> threads;
  if (plan.x_index.size() == 1) threads.emplace(ctx.device(), plan.m, plan.n, plan.k);
  ctx.ParallelFor(static_cast<int64_t>(plan.x_index.size()), 2 * plan.m * plan.n * plan.k,
                  [&](int64_t begin, int64_t end) {
                    std::vector<T> scratch;
                    if constexpr (!std::is_same_v<T, float>) {
                      if (adj_y) scratch.resize(static_cast<size_t>(y_size));
                    }
                    for (int64_t b = begin; b < end; ++b) {
                      const T* xb = xs + plan.x_index[b] * x_size;
                      const T* yb = ys + plan.y_index[b] * y_size;
                      T* ob = outs + b * out_size;
                      if constexpr (std::is_same_v<T, float>) {
                        // Leading dimensions are the stored row lengths.
                        const dnnl_status_t s = dnnl_sgemm(
                            adj_x ? 'T' : 'N', adj_y ? 'T' : 'N', plan.m, plan.n, plan.k, 1.0f, xb,
                            adj_x ? plan.m : plan.k, yb, adj_y ? plan.k : plan.n, 0.0f, ob, plan.n);
                        if (s != dnnl_success) failure = s;
                      } else {
                        MultiplyOne(xb, yb, ob, plan, adj_x, adj_y, scratch.data());
                      }
                    }
                  });
  if (failure != dnnl_success)
    return sdk::Internal("oneDNN sgemm of [", plan.m, ",", plan.k, "] x [", plan.k, ",", plan.n,
                         "] failed with status ", failure.load());
  return sdk::Status();
}

template <typename T>
class BatchMatMulV2Kernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("adj_x", &adj_x_));
    return init.attrs().Get("adj_y", &adj_y_);
  }

  sdk::Status Compute(sdk::KernelContext& ctx) {
    UseIntraOpThreads(ctx.device());  // sgemm runs OpenMP regions of its own
    const sdk::Tensor x = ctx.input(0), y = ctx.input(1);
    CFX_SDK_ASSIGN_OR_RETURN(BatchMatMulPlan plan,
                             PlanBatchMatMul(x.shape(), y.shape(), adj_x_, adj_y_));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor out, ctx.AllocateOutput(0, plan.out_shape));
    if (out.num_elements() == 0) return sdk::Status();
    if (plan.k == 0) {  // every element is an empty sum; zero bits are 0 in every dtype
      std::memset(out.raw_data(), 0, out.byte_size());
      return sdk::Status();
    }
    IndexBatches(&plan);
    return MultiplyBatches(ctx, x.data<T>(), y.data<T>(), out.data<T>(), plan, adj_x_, adj_y_);
  }

 private:
  bool adj_x_ = false, adj_y_ = false;
};

}  // namespace

template <typename T>
sdk::Status MultiplyMatrices(sdk::KernelContext& ctx, const T* x, const T* y, T* out,
                             int64_t batches, int64_t m, int64_t k, int64_t n) {
  if (k == 0) {  // empty sums; zero bits are 0 in every dtype
    std::fill(out, out + batches * m * n, T(0));
    return sdk::Status();
  }
  UseIntraOpThreads(ctx.device());  // sgemm runs OpenMP regions of its own
  BatchMatMulPlan plan;
  plan.m = m;
  plan.k = k;
  plan.n = n;
  plan.x_index.resize(static_cast<size_t>(batches));
  std::iota(plan.x_index.begin(), plan.x_index.end(), int64_t{0});
  plan.y_index = plan.x_index;
  return MultiplyBatches(ctx, x, y, out, plan, false, false);
}

template sdk::Status MultiplyMatrices<float>(sdk::KernelContext&, const float*, const float*,
                                             float*, int64_t, int64_t, int64_t, int64_t);
template sdk::Status MultiplyMatrices<double>(sdk::KernelContext&, const double*, const double*,
                                              double*, int64_t, int64_t, int64_t, int64_t);
template sdk::Status MultiplyMatrices<int32_t>(sdk::KernelContext&, const int32_t*, const int32_t*,
                                               int32_t*, int64_t, int64_t, int64_t, int64_t);
template sdk::Status MultiplyMatrices<int64_t>(sdk::KernelContext&, const int64_t*, const int64_t*,
                                               int64_t*, int64_t, int64_t, int64_t, int64_t);

void RegisterLinalgKernels(sdk::Plugin& p) {
  RegisterForTypes<MatrixInverseKernel, float, double>(p, "MatrixInverse");
  RegisterForTypes<MatrixDeterminantKernel, float, double>(p, "MatrixDeterminant");
  RegisterForTypes<BatchMatMulV2Kernel, float, double, int32_t, int64_t>(p, "BatchMatMulV2");
  RegisterEinsumKernels(p);
}

}  // namespace cfx::cpu
