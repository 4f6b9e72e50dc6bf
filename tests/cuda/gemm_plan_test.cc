// MatMul and BatchMatMulV2 plans, run through a host GEMM with cuBLAS's column-major contract and
// compared with a plain row-major product (no GPU needed): transposes, leading dimensions, batch
// strides, broadcast batch dims, and the errors.
#include "kernels/gemm_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cfx::cuda {
namespace {

// cublasSgemm's contract (beta = 0): C = op(X) op(Y), column-major, C rows x cols, depth deep.
void HostSgemm(bool tx, bool ty, int rows, int cols, int depth, const float* x, int ldx,
               const float* y, int ldy, float* c, int ldc) {
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      float sum = 0;
      for (int l = 0; l < depth; ++l)
        sum += (tx ? x[l + i * ldx] : x[i + l * ldx]) * (ty ? y[j + l * ldy] : y[l + j * ldy]);
      c[i + j * ldc] = sum;
    }
}

// Runs a plan as the kernel does: B first, A second.
std::vector<float> RunPlan(const GemmPlan& p, const std::vector<float>& a,
                           const std::vector<float>& b) {
  std::vector<float> c(static_cast<size_t>(sdk::NumElements(p.output_shape)), -1.0f);
  for (int64_t i = 0; i < p.batch; ++i) {
    const int64_t oa = p.strided ? i * p.stride_a : p.offsets_a[i];
    const int64_t ob = p.strided ? i * p.stride_b : p.offsets_b[i];
    const int64_t oc = p.strided ? i * p.stride_c : p.offsets_c[i];
    HostSgemm(p.transpose_first, p.transpose_second, p.rows, p.cols, p.depth, b.data() + ob,
              p.ld_first, a.data() + oa, p.ld_second, c.data() + oc, p.ld_out);
  }
  return c;
}

std::vector<float> Iota(const sdk::Shape& shape, float scale) {
  std::vector<float> v(static_cast<size_t>(sdk::NumElements(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>((i * 7) % 11) - 3.0f;
  return v;
}

// Row-major op(x) op(y) over NumPy-broadcast batch dims, straight from the definition.
std::vector<float> Reference(const sdk::Shape& xs, const std::vector<float>& x,
                             const sdk::Shape& ys, const std::vector<float>& y, bool adj_x,
                             bool adj_y, const sdk::Shape& out_shape) {
  const size_t rx = xs.size(), ry = ys.size(), ro = out_shape.size();
  const int64_t m = out_shape[ro - 2], n = out_shape[ro - 1];
  const int64_t k = adj_x ? xs[rx - 2] : xs[rx - 1];
  const int64_t xr = xs[rx - 2], xc = xs[rx - 1], yr = ys[ry - 2], yc = ys[ry - 1];
  std::vector<float> out;
  const int64_t batches = sdk::NumElements(out_shape) / (m * n);
  for (int64_t bi = 0; bi < batches; ++bi) {
    // The batch coordinates of output batch bi, then each operand's batch index.
    std::vector<int64_t> coord(ro - 2);
    for (int64_t rest = bi, d = static_cast<int64_t>(ro) - 3; d >= 0; --d) {
      coord[d] = rest % out_shape[d];
      rest /= out_shape[d];
    }
    auto batch_index = [&](const sdk::Shape& s) {
      int64_t idx = 0;
      const size_t pad = (ro - 2) - (s.size() - 2);
      for (size_t d = 0; d + 2 < s.size(); ++d) idx = idx * s[d] + (s[d] == 1 ? 0 : coord[d + pad]);
      return idx;
    };
    const float* xb = x.data() + batch_index(xs) * xr * xc;
    const float* yb = y.data() + batch_index(ys) * yr * yc;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum +=
              (adj_x ? xb[l * xc + i] : xb[i * xc + l]) * (adj_y ? yb[j * yc + l] : yb[l * yc + j]);
        out.push_back(sum);
      }
  }
  return out;
}

void ExpectPlanComputesTheProduct(const sdk::Shape& xs, const sdk::Shape& ys, bool adj_x,
                                  bool adj_y, const sdk::Shape& want_shape, bool want_strided) {
  SCOPED_TRACE(sdk::ShapeString(xs) + " x " + sdk::ShapeString(ys) + (adj_x ? " adj_x" : "") +
               (adj_y ? " adj_y" : ""));
  auto p = xs.size() == 2 && ys.size() == 2 ? PlanMatMul(xs, ys, adj_x, adj_y)
                                            : PlanBatchMatMul(xs, ys, adj_x, adj_y);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->output_shape, want_shape);
  EXPECT_EQ(p->strided, want_strided);
  const std::vector<float> x = Iota(xs, 0.5f), y = Iota(ys, 0.25f);
  EXPECT_EQ(RunPlan(*p, x, y), Reference(xs, x, ys, y, adj_x, adj_y, want_shape));
}

TEST(GemmPlan, MatMulWithEveryTranspose) {
  ExpectPlanComputesTheProduct({3, 4}, {4, 5}, false, false, {3, 5}, true);
  ExpectPlanComputesTheProduct({4, 3}, {4, 5}, true, false, {3, 5}, true);
  ExpectPlanComputesTheProduct({3, 4}, {5, 4}, false, true, {3, 5}, true);
  ExpectPlanComputesTheProduct({4, 3}, {5, 4}, true, true, {3, 5}, true);
  ExpectPlanComputesTheProduct({1, 7}, {7, 1}, false, false, {1, 1}, true);
}

TEST(GemmPlan, BatchesStrideOrBroadcastAlongOneDim) {
  ExpectPlanComputesTheProduct({2, 3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true);
  ExpectPlanComputesTheProduct({2, 4, 3}, {2, 5, 4}, true, true, {2, 3, 5}, true);
  // y is one matrix for every batch of x (stride 0), and the other way round.
  ExpectPlanComputesTheProduct({6, 3, 4}, {4, 5}, false, false, {6, 3, 5}, true);
  ExpectPlanComputesTheProduct({1, 3, 4}, {6, 4, 5}, false, false, {6, 3, 5}, true);
  // Batch dims that merge into one.
  ExpectPlanComputesTheProduct({2, 3, 3, 4}, {2, 3, 2, 4}, false, true, {2, 3, 3, 2}, true);
  auto p = PlanBatchMatMul({6, 3, 4}, {4, 5}, false, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->batch, 6);
  EXPECT_EQ(p->stride_a, 12);
  EXPECT_EQ(p->stride_b, 0);
  EXPECT_EQ(p->stride_c, 15);
}

TEST(GemmPlan, GeneralBroadcastingTakesOneProductPerMatrix) {
  ExpectPlanComputesTheProduct({2, 1, 3, 4}, {1, 3, 4, 5}, false, false, {2, 3, 3, 5}, false);
  ExpectPlanComputesTheProduct({2, 1, 4, 3}, {3, 5, 4}, true, true, {2, 3, 3, 5}, false);
}

TEST(GemmPlan, EmptyOperandsPlanNothingToMultiply) {
  auto p = PlanBatchMatMul({0, 3, 4}, {4, 5}, false, false);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->output_shape, (sdk::Shape{0, 3, 5}));
  EXPECT_EQ(p->batch, 0);
  auto q = PlanMatMul({3, 0}, {0, 5}, false, false);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->depth, 0);  // the kernel writes zeros
  EXPECT_EQ(q->output_shape, (sdk::Shape{3, 5}));
  // 2^30 batches by broadcasting, of empty matrices: no table of offsets.
  auto r = PlanBatchMatMul({1 << 15, 1, 0, 4}, {1, 1 << 15, 4, 5}, false, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->output_shape, (sdk::Shape{1 << 15, 1 << 15, 0, 5}));
  EXPECT_TRUE(r->offsets_a.empty());
}

TEST(GemmPlan, MismatchesNameTheShapes) {
  auto k = PlanMatMul({3, 4}, {5, 6}, false, false);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), CFX_INVALID_ARGUMENT);
  EXPECT_NE(k.status().message().find("In[0]: [3,4], In[1]: [5,6] (contracting 4 with 5)"),
            std::string::npos)
      << k.status().message();
  auto rank = PlanMatMul({3}, {3, 1}, false, false);
  EXPECT_NE(rank.status().message().find("In[0] must be a matrix"), std::string::npos);
  auto batch = PlanBatchMatMul({2, 3, 4}, {3, 4, 5}, false, false);
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.status().message().find("Incompatible shapes"), std::string::npos)
      << batch.status().message();
  auto low = PlanBatchMatMul({4}, {4, 1}, false, false);
  EXPECT_NE(low.status().message().find("rank >= 2"), std::string::npos);
}

}  // namespace
}  // namespace cfx::cuda
