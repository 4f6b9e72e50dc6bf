// MatrixInverse, MatrixDeterminant and BatchMatMulV2 on CPU, checked against results computed
// here independently: A * inv(A) = I, determinants of triangular and row-permuted matrices and
// of the 2x2/3x3 cofactor formulas, and batch products from a naive loop with explicit NumPy
// broadcasting; plus empty batches, shape inference and errors.
#include <cmath>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

using Dims = std::vector<int64_t>;

template <typename T>
Tensor RandomTensor(const Dims& dims, unsigned seed, double lo = -1, double hi = 1) {
  Tensor t(test::DataTypeOf<T>(), TensorShape(dims));
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      t.data<T>()[i] = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      t.data<T>()[i] = static_cast<T>(std::uniform_int_distribution<int>(-4, 4)(rng));
    }
  }
  return t;
}

NodeDef InverseNode(DataType dtype, bool adjoint) {
  return test::MakeNode("MatrixInverse", 1,
                        {{"T", AttrValue::Type(dtype)}, {"adjoint", AttrValue::Bool(adjoint)}});
}
NodeDef DeterminantNode(DataType dtype) {
  return test::MakeNode("MatrixDeterminant", 1, {{"T", AttrValue::Type(dtype)}});
}
NodeDef BatchMatMulNode(DataType dtype, bool adj_x, bool adj_y) {
  return test::MakeNode("BatchMatMulV2", 2,
                        {{"T", AttrValue::Type(dtype)},
                         {"adj_x", AttrValue::Bool(adj_x)},
                         {"adj_y", AttrValue::Bool(adj_y)}});
}

// ---- MatrixInverse

template <typename T>
class LinalgFloatTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(LinalgFloatTest, FloatTypes);

// op(A) * X for one n x n matrix, in double; op transposes when `transpose_a`.
std::vector<double> Product(const double* a, const double* x, int64_t n, bool transpose_a) {
  std::vector<double> out(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k)
        out[i * n + j] += (transpose_a ? a[k * n + i] : a[i * n + k]) * x[k * n + j];
  return out;
}

template <typename T>
std::vector<double> AsDouble(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(t.data<T>()[i]);
  return v;
}

TYPED_TEST(LinalgFloatTest, InverseTimesMatrixIsIdentity) {
  using T = TypeParam;
  const double tolerance = std::is_same_v<T, float> ? 1e-4 : 1e-10;
  unsigned seed = 0;
  for (int64_t n : {1, 2, 5, 17, 40}) {
    for (bool adjoint : {false, true}) {
      SCOPED_TRACE("n " + std::to_string(n) + (adjoint ? " adjoint" : ""));
      // Random entries plus n on the diagonal: well conditioned, yet pivoting still happens.
      Tensor a = RandomTensor<T>({2, 3, n, n}, ++seed);
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t i = 0; i < n; ++i) a.data<T>()[b * n * n + i * n + i] += static_cast<T>(n) / 2;
      const Tensor inv = test::RunNodeOk(InverseNode(a.dtype(), adjoint), {a});
      ASSERT_EQ(inv.shape(), a.shape());
      const std::vector<double> av = AsDouble<T>(a), iv = AsDouble<T>(inv);
      for (int64_t b = 0; b < 6; ++b) {
        const std::vector<double> p = Product(&av[b * n * n], &iv[b * n * n], n, adjoint);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j)
            ASSERT_NEAR(p[i * n + j], i == j ? 1.0 : 0.0, tolerance)
                << "batch " << b << " (" << i << "," << j << ")";
      }
    }
  }
}

TYPED_TEST(LinalgFloatTest, InverseNeedsPivotingAndRejectsSingular) {
  using T = TypeParam;
  const DataType dtype = test::DataTypeOf<T>();
  // A zero in the top-left corner: no inverse without row exchanges. The swap is its own inverse.
  const Tensor swap = test::MakeTensor<T>({2, 2}, {0, 1, 1, 0});
  test::ExpectTensorNear(swap, test::RunNodeOk(InverseNode(dtype, false), {swap}), 1e-6, 0);
  // [[2, 1], [1, 1]]^-1 = [[1, -1], [-1, 2]]; adjoint of [[2, 1], [0, 1]]: inv([[2, 0], [1, 1]]).
  test::ExpectTensorNear(
      test::MakeTensor<T>({2, 2}, {1, -1, -1, 2}),
      test::RunNodeOk(InverseNode(dtype, false), {test::MakeTensor<T>({2, 2}, {2, 1, 1, 1})}), 1e-6,
      0);
  test::ExpectTensorNear(
      test::MakeTensor<T>({2, 2}, {0.5, 0, -0.5, 1}),
      test::RunNodeOk(InverseNode(dtype, true), {test::MakeTensor<T>({2, 2}, {2, 1, 0, 1})}), 1e-6,
      0);
  // One singular matrix in a batch fails the whole op, with TensorFlow's message.
  const Tensor batch = test::MakeTensor<T>({2, 2, 2}, {1, 0, 0, 1, 1, 2, 2, 4});
  test::ExpectError(test::RunNode(InverseNode(dtype, false), {batch}), Code::kInvalidArgument,
                    "Input is not invertible.");
  test::ExpectError(test::RunNode(InverseNode(dtype, false),
                                  {test::MakeTensor<T>({3, 3}, std::vector<T>(9, T(0)))}),
                    Code::kInvalidArgument, "Input is not invertible.");
}

TYPED_TEST(LinalgFloatTest, EmptyBatchesAndShapeErrors) {
  using T = TypeParam;
  const DataType dtype = test::DataTypeOf<T>();
  for (const Dims& dims : {Dims{0, 0}, Dims{3, 0, 0}, Dims{0, 4, 4}}) {
    const Tensor in(dtype, TensorShape(dims));
    EXPECT_EQ(test::RunNodeOk(InverseNode(dtype, false), {in}).shape(), TensorShape(dims));
  }
  // Determinants of 0x0 matrices are 1; of no matrices, nothing.
  test::ExpectTensorEqual(
      test::MakeTensor<T>({3}, {1, 1, 1}),
      test::RunNodeOk(DeterminantNode(dtype), {Tensor(dtype, TensorShape({3, 0, 0}))}));
  EXPECT_EQ(
      test::RunNodeOk(DeterminantNode(dtype), {Tensor(dtype, TensorShape({0, 2, 2}))}).shape(),
      TensorShape({0}));
  for (const NodeDef& node : {InverseNode(dtype, false), DeterminantNode(dtype)}) {
    SCOPED_TRACE(node.op);
    const Tensor rect(dtype, TensorShape({4, 2, 3}));
    for (const auto& result : {test::RunNode(node, {rect}), test::RunKernelOnly(node, {rect})})
      test::ExpectError(result, Code::kInvalidArgument,
                        "square matrices, got 2x3 matrices (shape [4,2,3])");
    const Tensor vec(dtype, TensorShape({3}));
    for (const auto& result : {test::RunNode(node, {vec}), test::RunKernelOnly(node, {vec})})
      test::ExpectError(result, Code::kInvalidArgument, "rank >= 2, got shape [3]");
  }
}

// ---- MatrixDeterminant

TYPED_TEST(LinalgFloatTest, DeterminantsOfKnownMatrices) {
  using T = TypeParam;
  const DataType dtype = test::DataTypeOf<T>();
  const double rtol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  // Upper triangular 6x6: the product of the diagonal. Then its rows rotated by one position
  // (a 6-cycle, an odd permutation: 5 transpositions) and two rows swapped (one transposition).
  const int64_t n = 6;
  const Tensor random = RandomTensor<T>({n, n}, 3);
  std::vector<T> tri(random.data<T>(), random.data<T>() + n * n);
  double diag_product = 1;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) tri[i * n + j] = 0;
    tri[i * n + i] = static_cast<T>(0.5 + i * 0.25);
    diag_product *= static_cast<double>(tri[i * n + i]);
  }
  // A batch [3] of the three: triangular, rotated, swapped.
  std::vector<T> batch_values = tri;
  for (int permutation = 0; permutation < 2; ++permutation) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t from = permutation == 0 ? (i + 1) % n : i == 1 ? 4 : i == 4 ? 1 : i;
      batch_values.insert(batch_values.end(), tri.begin() + from * n, tri.begin() + (from + 1) * n);
    }
  }
  const Tensor batch = test::MakeTensor<T>({3, n, n}, batch_values);
  const Tensor det = test::RunNodeOk(DeterminantNode(dtype), {batch});
  ASSERT_EQ(det.shape(), TensorShape({3}));
  EXPECT_NEAR(det.data<T>()[0], diag_product, rtol * diag_product);
  EXPECT_NEAR(det.data<T>()[1], -diag_product, rtol * diag_product);
  EXPECT_NEAR(det.data<T>()[2], -diag_product, rtol * diag_product);

  // Random 2x2 and 3x3 matrices in a [2, 4] batch against the cofactor formulas.
  for (int64_t m : {2, 3}) {
    const Tensor a = RandomTensor<T>({2, 4, m, m}, static_cast<unsigned>(10 + m));
    const Tensor got = test::RunNodeOk(DeterminantNode(dtype), {a});
    ASSERT_EQ(got.shape(), TensorShape({2, 4}));
    for (int64_t b = 0; b < 8; ++b) {
      auto e = [&](int i, int j) {
        return static_cast<double>(a.data<T>()[b * m * m + i * m + j]);
      };
      const double expected = m == 2 ? e(0, 0) * e(1, 1) - e(0, 1) * e(1, 0)
                                     : e(0, 0) * (e(1, 1) * e(2, 2) - e(1, 2) * e(2, 1)) -
                                           e(0, 1) * (e(1, 0) * e(2, 2) - e(1, 2) * e(2, 0)) +
                                           e(0, 2) * (e(1, 0) * e(2, 1) - e(1, 1) * e(2, 0));
      const double tolerance = std::is_same_v<T, float> ? 1e-5 : 1e-13;
      EXPECT_NEAR(got.data<T>()[b], expected, tolerance) << "matrix " << b;
    }
  }
  // Singular: 0, not an error.
  test::ExpectTensorNear(
      test::MakeScalar<T>(0),
      test::RunNodeOk(DeterminantNode(dtype), {test::MakeTensor<T>({2, 2}, {1, 2, 2, 4})}), 1e-12,
      0);
}

// ---- BatchMatMulV2

// op(x) * op(y) with NumPy broadcasting of the batch dimensions, one element at a time.
template <typename T>
Tensor NaiveBatchMatMul(const Tensor& x, const Tensor& y, bool adj_x, bool adj_y) {
  const int xr = x.shape().rank(), yr = y.shape().rank();
  const int64_t m = x.dim(adj_x ? xr - 1 : xr - 2), k = x.dim(adj_x ? xr - 2 : xr - 1);
  const int64_t n = y.dim(adj_y ? yr - 2 : yr - 1);
  const int rank = std::max(xr, yr) - 2;
  Dims batch(rank);
  auto batch_dim = [&](const Tensor& t, int tr, int d) {  // d counts from the left of `rank`
    const int i = d - (rank - (tr - 2));
    return i < 0 ? int64_t{1} : t.dim(i);
  };
  for (int d = 0; d < rank; ++d) batch[d] = std::max(batch_dim(x, xr, d), batch_dim(y, yr, d));
  Dims out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  Tensor out(test::DataTypeOf<T>(), TensorShape(out_dims));
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t b = 0; b < batches; ++b) {
    // Unravel b; each input takes index 0 along the dimensions where it has size 1.
    int64_t rest = b, x_flat = 0, y_flat = 0, x_scale = 1, y_scale = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t idx = rest % batch[d];
      rest /= batch[d];
      const int64_t xd = batch_dim(x, xr, d), yd = batch_dim(y, yr, d);
      x_flat += (xd == 1 ? 0 : idx) * x_scale;
      y_flat += (yd == 1 ? 0 : idx) * y_scale;
      x_scale *= xd;
      y_scale *= yd;
    }
    const T* xm = x.data<T>() + x_flat * m * k;
    const T* ym = y.data<T>() + y_flat * k * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        Acc sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += static_cast<Acc>(adj_x ? xm[p * m + i] : xm[i * k + p]) *
                 static_cast<Acc>(adj_y ? ym[j * k + p] : ym[p * n + j]);
        out.data<T>()[b * m * n + i * n + j] = static_cast<T>(sum);
      }
    }
  }
  return out;
}

template <typename T>
class BatchMatMulTest : public ::testing::Test {};
using MatMulTypes = ::testing::Types<float, double, int32_t, int64_t>;
TYPED_TEST_SUITE(BatchMatMulTest, MatMulTypes);

// Matrix dims of an operand: [rows, cols] of op(operand) = (r, c), stored transposed when adj.
Dims Operand(Dims batch, int64_t r, int64_t c, bool adj) {
  batch.push_back(adj ? c : r);
  batch.push_back(adj ? r : c);
  return batch;
}

TYPED_TEST(BatchMatMulTest, MatchesNaiveLoopWithBroadcasting) {
  using T = TypeParam;
  struct Case {
    Dims x_batch, y_batch;
    int64_t m, k, n;
  };
  const std::vector<Case> cases = {{{}, {}, 3, 4, 5},             // plain matrices
                                   {{4}, {4}, 2, 3, 2},           // same batch
                                   {{2, 3}, {}, 5, 4, 3},         // y broadcast to every batch
                                   {{}, {3}, 1, 7, 1},            // x broadcast
                                   {{3, 1}, {1, 5}, 2, 6, 3},     // both broadcast
                                   {{2, 1, 4}, {3, 1}, 4, 2, 5},  // different ranks
                                   {{16}, {16}, 33, 65, 17},      // many products in parallel
                                   {{1}, {1}, 130, 70, 90}};      // one larger product
  unsigned seed = 0;
  for (const Case& c : cases) {
    for (bool adj_x : {false, true}) {
      for (bool adj_y : {false, true}) {
        const Tensor x = RandomTensor<T>(Operand(c.x_batch, c.m, c.k, adj_x), ++seed);
        const Tensor y = RandomTensor<T>(Operand(c.y_batch, c.k, c.n, adj_y), ++seed);
        SCOPED_TRACE(x.shape().ToString() + " x " + y.shape().ToString() + (adj_x ? " adj_x" : "") +
                     (adj_y ? " adj_y" : ""));
        const Tensor got = test::RunNodeOk(BatchMatMulNode(x.dtype(), adj_x, adj_y), {x, y});
        const Tensor expected = NaiveBatchMatMul<T>(x, y, adj_x, adj_y);
        if constexpr (std::is_floating_point_v<T>)
          test::ExpectTensorNear(expected, got, std::is_same_v<T, float> ? 1e-4 : 1e-10, 1e-4);
        else
          test::ExpectTensorEqual(expected, got);
      }
    }
  }
}

TYPED_TEST(BatchMatMulTest, EmptyOperands) {
  using T = TypeParam;
  const DataType dtype = test::DataTypeOf<T>();
  const NodeDef node = BatchMatMulNode(dtype, false, false);
  // No batches, or broadcast against no batches.
  EXPECT_EQ(
      test::RunNodeOk(node, {Tensor(dtype, TensorShape({0, 2, 3})), RandomTensor<T>({3, 4}, 1)})
          .shape(),
      TensorShape({0, 2, 4}));
  EXPECT_EQ(test::RunNodeOk(
                node, {RandomTensor<T>({1, 2, 3}, 1), Tensor(dtype, TensorShape({5, 0, 3, 4}))})
                .shape(),
            TensorShape({5, 0, 2, 4}));
  // k = 0: every element is an empty sum.
  const Tensor zeros = test::RunNodeOk(
      node, {Tensor(dtype, TensorShape({2, 3, 0})), Tensor(dtype, TensorShape({2, 0, 4}))});
  test::ExpectTensorEqual(test::MakeTensor<T>({2, 3, 4}, std::vector<T>(24, T(0))), zeros);
  // 2^31 (and 2^40, by broadcasting) batches of empty matrices: nothing to multiply, nothing to
  // index (a table of the batches would take 32 GiB and more).
  EXPECT_EQ(test::RunNodeOk(node, {Tensor(dtype, TensorShape({int64_t{1} << 31, 0, 4})),
                                   RandomTensor<T>({4, 5}, 1)})
                .shape(),
            TensorShape({int64_t{1} << 31, 0, 5}));
  EXPECT_EQ(test::RunNodeOk(node, {Tensor(dtype, TensorShape({int64_t{1} << 20, 1, 0, 2})),
                                   Tensor(dtype, TensorShape({1, int64_t{1} << 20, 2, 0}))})
                .shape(),
            TensorShape({int64_t{1} << 20, int64_t{1} << 20, 0, 0}));
}

TYPED_TEST(BatchMatMulTest, ShapeErrorsNameBothShapes) {
  using T = TypeParam;
  const DataType dtype = test::DataTypeOf<T>();
  const NodeDef node = BatchMatMulNode(dtype, false, true);
  const Tensor x(dtype, TensorShape({2, 3, 4})), y(dtype, TensorShape({2, 5, 3}));
  for (const auto& result : {test::RunNode(node, {x, y}), test::RunKernelOnly(node, {x, y})}) {
    test::ExpectError(result, Code::kInvalidArgument,
                      "inner dimensions of the matrices must match, got 4 and 3");
    test::ExpectError(result, Code::kInvalidArgument, "x has shape [2,3,4] (adj_x=false)");
    test::ExpectError(result, Code::kInvalidArgument, "y has shape [2,5,3] (adj_y=true)");
  }
  const Tensor y3(dtype, TensorShape({3, 5, 4}));
  for (const auto& result : {test::RunNode(node, {x, y3}), test::RunKernelOnly(node, {x, y3})})
    test::ExpectError(result, Code::kInvalidArgument, "batch dimensions do not broadcast");
  const Tensor vec(dtype, TensorShape({4}));
  for (const auto& result : {test::RunNode(node, {vec, y}), test::RunKernelOnly(node, {vec, y})})
    test::ExpectError(result, Code::kInvalidArgument, "rank >= 2");
}

TEST(LinalgShapes, InferredShapes) {
  auto infer = [](const NodeDef& node, std::vector<PartialTensorShape> in) {
    return InferNodeShapes(test::TestRuntime(), node, in, {});
  };
  const NodeDef bmm = BatchMatMulNode(DT_FLOAT, true, false);
  auto out = infer(bmm, {PartialTensorShape({3, 1, 4, 2}), PartialTensorShape({5, 4, 7})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({3, 5, 2, 7}));
  out = infer(bmm, {PartialTensorShape({-1, 4, 2}), PartialTensorShape({4, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({-1, 2, -1}));
  out = infer(bmm, {PartialTensorShape(), PartialTensorShape({4, 7})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape::UnknownRank());
  EXPECT_FALSE(infer(bmm, {PartialTensorShape({2, 4, 2}), PartialTensorShape({3, 4, 7})}).ok());
  EXPECT_FALSE(infer(bmm, {PartialTensorShape({2, 5, 2}), PartialTensorShape({2, 4, 7})}).ok());

  out = infer(InverseNode(DT_DOUBLE, false), {PartialTensorShape({2, -1, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({2, 3, 3}));
  out = infer(DeterminantNode(DT_FLOAT), {PartialTensorShape({2, 5, 3, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape({2, 5}));
  out = infer(DeterminantNode(DT_FLOAT), {PartialTensorShape()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], PartialTensorShape::UnknownRank());
  EXPECT_FALSE(infer(DeterminantNode(DT_FLOAT), {PartialTensorShape({2, 3})}).ok());
}

}  // namespace
}  // namespace cfx
