// TopKV2, OneHot, ReverseV2, SplitV, GatherNd, ScatterNd and TensorScatterUpdate: refusals of
// bad inputs by both the shape functions and the kernels, naming the node; shape inference on
// partial shapes; uint16 indices (which TensorFlow's CPU kernels lack); TopKV2's order on inputs
// TensorFlow's fixture leaves out (NaN, whose order TensorFlow leaves open) and on rows long
// enough for the partial sort, against a reference. TensorFlow's own results on these ops are
// checked in tf_op_values_test.cc.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::ExpectRefused;
using test::ExpectShapes;
using test::Infer;
using test::kU;
using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;
using test::S;

NodeDef Named(NodeDef node, const std::string& name) {
  node.name = name;
  return node;
}

NodeDef TopKNode(DataType t, DataType index_type = DT_INT32) {
  return Named(MakeNode("TopKV2", 2,
                        {{"T", AttrValue::Type(t)}, {"index_type", AttrValue::Type(index_type)}}),
               "bad_topk");
}

TEST(TopKV2, BadInputsAreRefusedNamingTheNode) {
  const NodeDef node = TopKNode(DT_FLOAT);
  ExpectRefused(node, {MakeScalar(1.0f), MakeScalar<int32_t>(1)},
                "input must have rank >= 1, got a scalar");
  ExpectRefused(node, {MakeVector<float>({1, 2}), MakeScalar<int32_t>(-1)}, "k = -1 must be >= 0");
  ExpectRefused(node, {MakeTensor<float>({2, 2}, {1, 2, 3, 4}), MakeScalar<int32_t>(3)},
                "k = 3 is larger than the last dimension of the input (shape [2,2])");
  ExpectRefused(node, {MakeVector<float>({1, 2}), MakeVector<int32_t>({1, 1})}, "must be a scalar");
}

TEST(TopKV2, Int16IndicesRefuseRowsTheyCannotAddress) {
  const Tensor wide(DT_FLOAT, TensorShape({1, 40000}));
  auto result = test::RunNode(TopKNode(DT_FLOAT, DT_INT16), {wide, MakeScalar<int32_t>(2)});
  test::ExpectError(result, Code::kInvalidArgument, "int16 indices (index_type) address 32768");
}

TEST(TopKV2, ShapeInferenceLeavesKUnknownUntilConstant) {
  const NodeDef node = TopKNode(DT_FLOAT);
  ExpectShapes(Infer(node, {S({2, 5}), S({})}), {S({2, kU}), S({2, kU})});
  const Tensor k = MakeScalar<int32_t>(3);
  ExpectShapes(Infer(node, {S({kU, 5}), S({})}, {nullptr, &k}), {S({kU, 3}), S({kU, 3})});
  ExpectShapes(Infer(node, {S({kU, kU}), S({})}, {nullptr, &k}), {S({kU, 3}), S({kU, 3})});
  test::ExpectInferenceError(Infer(node, {S({2, 5}), S({2})}), "k must be a scalar");
}

// NaN sorts above every number, NaNs among themselves by column; -0 and +0 tie.
TEST(TopKV2, NanIsLargestAndTiesGoToTheLowerColumn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto outputs = test::RunNode(
      TopKNode(DT_FLOAT),
      {MakeVector<float>({1, nan, inf, nan, -0.0f, 0.0f, 1}), MakeScalar<int32_t>(7)});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  test::ExpectTensorEqual(MakeVector<float>({nan, nan, inf, 1, 1, -0.0f, 0.0f}), (*outputs)[0]);
  test::ExpectTensorEqual(MakeVector<int32_t>({1, 3, 2, 0, 6, 4, 5}), (*outputs)[1]);
}

// Long rows with many ties, k small and large, against a stable sort of each row.
TEST(TopKV2, LongRowsMatchAStableSort) {
  std::mt19937 gen(3);
  std::uniform_int_distribution<int32_t> value(-50, 50);
  const int64_t rows = 7, columns = 1000;
  Tensor in(DT_INT32, TensorShape({rows, columns}));
  for (int64_t i = 0; i < in.num_elements(); ++i) in.data<int32_t>()[i] = value(gen);
  for (int64_t k : {1, 10, 999, 1000}) {
    SCOPED_TRACE(k);
    NodeDef node = TopKNode(DT_INT32, DT_INT64);
    auto outputs = test::RunNode(node, {in, MakeScalar(static_cast<int32_t>(k))});
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    ASSERT_EQ((*outputs)[0].shape(), TensorShape({rows, k}));
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t* row = in.data<int32_t>() + r * columns;
      std::vector<int64_t> order(columns);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [row](int64_t a, int64_t b) { return row[a] > row[b]; });
      for (int64_t j = 0; j < k; ++j) {
        ASSERT_EQ((*outputs)[1].data<int64_t>()[r * k + j], order[j]) << r << "," << j;
        ASSERT_EQ((*outputs)[0].data<int32_t>()[r * k + j], row[order[j]]) << r << "," << j;
      }
    }
  }
}

NodeDef OneHotNode(int64_t axis) {
  return Named(MakeNode("OneHot", 4,
                        {{"T", AttrValue::Type(DT_FLOAT)},
                         {"TI", AttrValue::Type(DT_INT32)},
                         {"axis", AttrValue::Int(axis)}}),
               "bad_one_hot");
}

TEST(OneHot, BadInputsAreRefusedNamingTheNode) {
  const Tensor indices = MakeTensor<int32_t>({2, 2}, {0, 1, 2, 3});
  const Tensor on = MakeScalar(1.0f), off = MakeScalar(0.0f);
  ExpectRefused(OneHotNode(-1), {indices, MakeScalar<int32_t>(-3), on, off},
                "depth = -3 must be >= 0");
  ExpectRefused(OneHotNode(3), {indices, MakeScalar<int32_t>(2), on, off},
                "axis = 3 must be -1 or in [0, 2] for indices of shape [2,2]");
  ExpectRefused(OneHotNode(-2), {indices, MakeScalar<int32_t>(2), on, off},
                "axis = -2 must be -1 or in [0, 2]");
  ExpectRefused(OneHotNode(0), {indices, MakeScalar<int32_t>(2), MakeVector<float>({1, 2}), off},
                "on_value must be a scalar");
  ExpectRefused(OneHotNode(0), {indices, MakeVector<int32_t>({2}), on, off},
                "depth must be a scalar");
}

TEST(OneHot, ShapeInferencePlacesDepthAtTheAxis) {
  const Tensor depth = MakeScalar<int32_t>(5);
  ExpectShapes(Infer(OneHotNode(1), {S({2, kU}), S({}), S({}), S({})}, {nullptr, &depth}),
               {S({2, 5, kU})});
  ExpectShapes(Infer(OneHotNode(-1), {S({3}), S({}), S({}), S({})}), {S({3, kU})});
}

NodeDef ReverseNode() {
  return Named(MakeNode("ReverseV2", 2, {{"T", AttrValue::Type(DT_FLOAT)}}), "bad_reverse");
}

TEST(ReverseV2, BadAxesAreRefusedNamingTheNode) {
  const Tensor x = MakeTensor<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  ExpectRefused(ReverseNode(), {x, MakeVector<int32_t>({2})},
                "axis 2 is out of range [-2, 2) (entry 0 of [2])");
  ExpectRefused(ReverseNode(), {x, MakeVector<int32_t>({0, -2})},
                "axis [0,-2] names dimension 0 twice");
  ExpectRefused(ReverseNode(), {x, MakeScalar<int32_t>(0)}, "axis must be a vector");
}

NodeDef SplitVNode(int64_t num_split) {
  return Named(MakeNode("SplitV", 3,
                        {{"T", AttrValue::Type(DT_FLOAT)},
                         {"Tlen", AttrValue::Type(DT_INT32)},
                         {"num_split", AttrValue::Int(num_split)}}),
               "bad_split_v");
}

TEST(SplitV, BadSizesAreRefusedNamingTheNode) {
  const Tensor x = MakeVector<float>({1, 2, 3, 4, 5});
  const Tensor axis = MakeScalar<int32_t>(0);
  ExpectRefused(SplitVNode(3), {x, MakeVector<int32_t>({2, -1, -1}), axis},
                "size_splits [2,-1,-1] has more than one -1");
  ExpectRefused(SplitVNode(3), {x, MakeVector<int32_t>({2, 4, -1}), axis},
                "size_splits [2,4,-1] add up to 6, more than dimension 0 of size 5");
  ExpectRefused(SplitVNode(2), {x, MakeVector<int32_t>({2, 2}), axis},
                "size_splits [2,2] add up to 4, not dimension 0 of size 5");
  ExpectRefused(SplitVNode(3), {x, MakeVector<int32_t>({2, -2, 5}), axis},
                "size_splits[1] = -2 must be >= 0");
  ExpectRefused(SplitVNode(3), {x, MakeVector<int32_t>({2, 3}), axis},
                "size_splits [2,3] has 2 entries; expected one per output (num_split = 3)");
  ExpectRefused(SplitVNode(2), {x, MakeVector<int32_t>({2, 3}), MakeScalar<int32_t>(1)},
                "split_dim 1 is out of range [-1, 1)");
}

TEST(SplitV, ShapeInferenceInfersTheMinusOnePiece) {
  const Tensor sizes = MakeVector<int32_t>({1, -1}), axis = MakeScalar<int32_t>(-1);
  ExpectShapes(Infer(SplitVNode(2), {S({2, 6}), S({2}), S({})}, {nullptr, &sizes, &axis}),
               {S({2, 1}), S({2, 5})});
  ExpectShapes(Infer(SplitVNode(2), {S({2, kU}), S({2}), S({})}, {nullptr, &sizes, &axis}),
               {S({2, 1}), S({2, kU})});
  ExpectShapes(Infer(SplitVNode(2), {S({2, 6}), S({2}), S({})}, {nullptr, nullptr, &axis}),
               {S({2, kU}), S({2, kU})});
}

NodeDef NdNode(const std::string& op, DataType t, DataType index_type,
               const std::string& policy = "") {
  NodeDef node = MakeNode(op, 3, {{"Tindices", AttrValue::Type(index_type)}});
  if (op == "GatherNd") {
    node.input.pop_back();
    node.attr["Tparams"] = AttrValue::Type(t);
  } else {
    node.attr["T"] = AttrValue::Type(t);
  }
  if (!policy.empty()) node.attr["bad_indices_policy"] = AttrValue::String(policy);
  node.name = "bad_" + op;
  return node;
}

TEST(GatherNd, BadInputsAreRefusedNamingTheNode) {
  const NodeDef node = NdNode("GatherNd", DT_FLOAT, DT_INT32);
  const Tensor params = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  ExpectRefused(node, {MakeScalar(1.0f), MakeTensor<int32_t>({1, 1}, {0})},
                "params must have rank >= 1, got a scalar");
  ExpectRefused(node, {params, MakeScalar<int32_t>(0)}, "indices must have rank >= 1");
  ExpectRefused(node, {params, MakeTensor<int32_t>({1, 3}, {0, 1, 0})},
                "the last dimension of indices (shape [1,3]) is 3, more than the rank of params "
                "(shape [2,2])");
  auto out_of_range =
      test::RunNode(node, {params, MakeTensor<int32_t>({2, 2, 2}, {0, 0, 1, 1, 1, 0, 0, 2})});
  test::ExpectError(out_of_range, Code::kInvalidArgument,
                    "indices[1,1] = [0, 2] is out of bounds for shape [2,2]");
  test::ExpectError(test::RunNode(node, {params, MakeVector<int32_t>({-1, 0})}),
                    Code::kInvalidArgument, "indices = [-1, 0] is out of bounds");
  ExpectRefused(NdNode("GatherNd", DT_FLOAT, DT_INT32, "SKIP"),
                {params, MakeTensor<int32_t>({1, 1}, {0})},
                "bad_indices_policy \"SKIP\" is not one of");
}

// Indices of depth 0 whose other dimensions say 2^31 tuples, with no data to move: the kernels
// must not make a per-tuple table first (16 GiB) before finding there is nothing to do.
TEST(ScatterAndGatherNd, DepthZeroTuplesWithNothingToMoveEndAtOnce) {
  constexpr int64_t kTuples = int64_t{1} << 31;
  const Tensor indices(DT_INT32, TensorShape({kTuples, 1, 0}));
  const Tensor gathered = test::RunNodeOk(NdNode("GatherNd", DT_FLOAT, DT_INT32),
                                          {Tensor(DT_FLOAT, TensorShape({0})), indices});
  EXPECT_EQ(gathered.shape(), TensorShape({kTuples, 1, 0}));
  const Tensor updates(DT_FLOAT, TensorShape({kTuples, 1, 0}));
  const Tensor scattered = test::RunNodeOk(NdNode("ScatterNd", DT_FLOAT, DT_INT32),
                                           {indices, updates, MakeVector<int32_t>({0})});
  EXPECT_EQ(scattered.shape(), TensorShape({0}));
  const Tensor updated =
      test::RunNodeOk(NdNode("TensorScatterUpdate", DT_FLOAT, DT_INT32),
                      {Tensor(DT_FLOAT, TensorShape({0})), indices, updates});
  EXPECT_EQ(updated.shape(), TensorShape({0}));
}

TEST(ScatterNd, BadInputsAreRefusedNamingTheNode) {
  const NodeDef node = NdNode("ScatterNd", DT_FLOAT, DT_INT32);
  const Tensor indices = MakeTensor<int32_t>({2, 1}, {0, 1});
  ExpectRefused(node, {indices, MakeVector<float>({1, 2}), MakeVector<int32_t>({-4})},
                "shape[0] = -4 must be >= 0");
  ExpectRefused(node, {indices, MakeVector<float>({1, 2, 3}), MakeVector<int32_t>({4})},
                "updates must have shape [2] (indices.shape[:-1] + output.shape[1:], for "
                "indices of shape [2,1] and an output of shape [4]), got [3]");
  ExpectRefused(node, {indices, MakeVector<float>({1, 2}), MakeScalar<int32_t>(4)},
                "shape must be a vector");
  test::ExpectError(test::RunNode(node, {MakeTensor<int32_t>({2, 1}, {0, 4}),
                                         MakeVector<float>({1, 2}), MakeVector<int32_t>({4})}),
                    Code::kInvalidArgument, "indices[1] = [4] is out of bounds for shape [4]");
}

TEST(TensorScatterUpdate, BadInputsAreRefusedNamingTheNode) {
  const NodeDef node = NdNode("TensorScatterUpdate", DT_FLOAT, DT_INT64);
  const Tensor tensor = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  ExpectRefused(node, {tensor, MakeTensor<int64_t>({1, 1}, {0}), MakeVector<float>({1})},
                "updates must have shape [1,2]");
  test::ExpectError(test::RunNode(node, {tensor, MakeTensor<int64_t>({1, 1}, {2}),
                                         MakeTensor<float>({1, 2}, {5, 6})}),
                    Code::kInvalidArgument, "indices[0] = [2] is out of bounds for shape [2,2]");
}

// uint16 indices: TensorFlow's OpDef allows them, its CPU kernels do not; here they work.
TEST(TensorScatterUpdate, TakesUint16Indices) {
  Tensor indices(DT_UINT16, TensorShape({2, 2}));
  const uint16_t pairs[] = {1, 0, 0, 1};
  for (int i = 0; i < 4; ++i) indices.data<uint16_t>()[i] = pairs[i];
  const Tensor out = test::RunNodeOk(
      NdNode("TensorScatterUpdate", DT_FLOAT, DT_UINT16),
      {MakeTensor<float>({2, 2}, {1, 2, 3, 4}), indices, MakeVector<float>({7, 8})});
  test::ExpectTensorEqual(MakeTensor<float>({2, 2}, {1, 8, 7, 4}), out);
}

TEST(ScatterAndGatherNd, ShapeInferenceOnPartialShapes) {
  const NodeDef gather = NdNode("GatherNd", DT_FLOAT, DT_INT32);
  ExpectShapes(Infer(gather, {S({4, 5, 6}), S({kU, 2})}), {S({kU, 6})});
  ExpectShapes(Infer(gather, {S({4, 5, 6}), S({3, kU})}), {PartialTensorShape::UnknownRank()});
  const NodeDef scatter = NdNode("ScatterNd", DT_FLOAT, DT_INT32);
  ExpectShapes(Infer(scatter, {S({kU, 1}), S({kU, 3}), S({2})}), {S({kU, kU})});
  const Tensor shape = MakeVector<int32_t>({5, 3});
  ExpectShapes(Infer(scatter, {S({kU, 1}), S({kU, 3}), S({2})}, {nullptr, nullptr, &shape}),
               {S({5, 3})});
  test::ExpectInferenceError(
      Infer(scatter, {S({2, 1}), S({2, 4}), S({2})}, {nullptr, nullptr, &shape}),
      "updates must have shape [2,3]");
}

}  // namespace
}  // namespace cfx
