// MatMul and BatchMatMulV2 as cuBLAS GEMM plans.
#include "kernels/gemm_plan.h"

#include <climits>

namespace cfx::cuda {
namespace {

// The product's dims and cuBLAS arguments for the last two dims of a and b.
sdk::Result<GemmPlan> PlanMatrices(const sdk::Shape& a, const sdk::Shape& b, bool transpose_a,
                                   bool transpose_b, const char* a_name, const char* b_name) {
  const size_t ra = a.size(), rb = b.size();
  const int64_t m = transpose_a ? a[ra - 1] : a[ra - 2];
  const int64_t k = transpose_a ? a[ra - 2] : a[ra - 1];
  const int64_t kb = transpose_b ? b[rb - 1] : b[rb - 2];
  const int64_t n = transpose_b ? b[rb - 2] : b[rb - 1];
  if (k != kb)
    return sdk::InvalidArgument("Matrix size-incompatible: ", a_name, ": ", sdk::ShapeString(a),
                                ", ", b_name, ": ", sdk::ShapeString(b), " (contracting ", k,
                                " with ", kb, ")");
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    return sdk::Unimplemented("matrix dimensions above 2^31-1 on GPU (", a_name, " ",
                              sdk::ShapeString(a), ", ", b_name, " ", sdk::ShapeString(b), ")");
  GemmPlan p;
  p.transpose_first = transpose_b;
  p.transpose_second = transpose_a;
  p.rows = static_cast<int>(n);
  p.cols = static_cast<int>(m);
  p.depth = static_cast<int>(k);
  // A row-major matrix of c columns is a column-major one with leading dimension c.
  p.ld_first = static_cast<int>(transpose_b ? k : n);
  p.ld_second = static_cast<int>(transpose_a ? m : k);
  p.ld_out = static_cast<int>(n);
  return p;
}

}  // namespace

sdk::Result<GemmPlan> PlanMatMul(const sdk::Shape& a, const sdk::Shape& b, bool transpose_a,
                                 bool transpose_b) {
  if (a.size() != 2)
    return sdk::InvalidArgument("MatMul: In[0] must be a matrix, got shape ", sdk::ShapeString(a));
  if (b.size() != 2)
    return sdk::InvalidArgument("MatMul: In[1] must be a matrix, got shape ", sdk::ShapeString(b));
  CFX_SDK_ASSIGN_OR_RETURN(GemmPlan p,
                           PlanMatrices(a, b, transpose_a, transpose_b, "In[0]", "In[1]"));
  p.output_shape = {p.cols, p.rows};
  return p;
}

sdk::Result<GemmPlan> PlanBatchMatMul(const sdk::Shape& x, const sdk::Shape& y, bool adj_x,
                                      bool adj_y) {
  if (x.size() < 2 || y.size() < 2)
    return sdk::InvalidArgument("BatchMatMulV2: x and y must have rank >= 2, got ",
                                sdk::ShapeString(x), " and ", sdk::ShapeString(y));
  CFX_SDK_ASSIGN_OR_RETURN(GemmPlan p, PlanMatrices(x, y, adj_x, adj_y, "x", "y"));
  const sdk::Shape batch_x(x.begin(), x.end() - 2), batch_y(y.begin(), y.end() - 2);
  CFX_SDK_ASSIGN_OR_RETURN(sdk::BroadcastPlan batches,
                           sdk::PlanBroadcast({{"x", batch_x}, {"y", batch_y}}));
  if (batches.num_elements > INT_MAX)
    return sdk::Unimplemented("BatchMatMulV2 on GPU: ", batches.num_elements,
                              " matrices in a batch (at most 2^31-1)");
  p.output_shape = batches.output_shape;
  p.output_shape.push_back(p.cols);
  p.output_shape.push_back(p.rows);
  p.batch = batches.num_elements;
  const int64_t size_a = int64_t{p.cols} * p.depth, size_b = int64_t{p.depth} * p.rows;
  p.stride_c = int64_t{p.cols} * p.rows;
  // An empty output, or one of empty sums, multiplies nothing: no offsets (an empty output may
  // have 2^31-1 batches).
  if (p.batch == 0 || p.cols == 0 || p.rows == 0 || p.depth == 0) return p;
  if (batches.dims.size() <= 1) {
    // At most one merged batch dim: each operand walks it or broadcasts along it.
    p.stride_a = batches.dims.empty() ? 0 : batches.strides[0][0] * size_a;
    p.stride_b = batches.dims.empty() ? 0 : batches.strides[1][0] * size_b;
    return p;
  }
  // General broadcasting: each output matrix's operands, walking the merged dims row-major.
  p.strided = false;
  const size_t rank = batches.dims.size();
  std::vector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < p.batch; ++i) {
    int64_t off_a = 0, off_b = 0;
    for (size_t d = 0; d < rank; ++d) {
      off_a += coord[d] * batches.strides[0][d];
      off_b += coord[d] * batches.strides[1][d];
    }
    p.offsets_a.push_back(off_a * size_a);
    p.offsets_b.push_back(off_b * size_b);
    p.offsets_c.push_back(i * p.stride_c);
    for (size_t d = rank; d-- > 0;) {
      if (++coord[d] < batches.dims[d]) break;
      coord[d] = 0;
    }
  }
  return p;
}

}  // namespace cfx::cuda
