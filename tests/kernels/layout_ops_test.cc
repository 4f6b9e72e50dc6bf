// SpaceToDepth, DepthToSpace and MatrixBandPart: refusals of bad inputs by both the shape
// functions and the kernels, naming the node; shape inference for the layouts the CPU kernels
// do not take (NCHW, NCHW_VECT_C), whose kernels refuse them; SpaceToDepth undone by
// DepthToSpace. TensorFlow's own results are checked in tf_op_values_test.cc.
#include <string>
#include <vector>

#include "array_test_util.h"

namespace cfx {
namespace {

using test::ExpectRefused;
using test::ExpectShapes;
using test::Infer;
using test::kU;
using test::MakeScalar;
using test::MakeTensor;
using test::S;

NodeDef SpaceDepthNode(const std::string& op, int64_t block, const std::string& format = "NHWC") {
  NodeDef node = test::MakeNode(op, 1,
                                {{"T", AttrValue::Type(DT_FLOAT)},
                                 {"block_size", AttrValue::Int(block)},
                                 {"data_format", AttrValue::String(format)}});
  node.name = "bad_" + op;
  return node;
}

TEST(SpaceToDepth, BadShapesAreRefusedNamingTheNode) {
  ExpectRefused(SpaceDepthNode("SpaceToDepth", 3), {test::Iota<float>({1, 4, 6, 1})},
                "block_size = 3 must divide the height and width, got shape [1,4,6,1] (NHWC)");
  ExpectRefused(SpaceDepthNode("SpaceToDepth", 2), {test::Iota<float>({4, 4, 1})},
                "input must have rank 4 (NHWC), got shape [4,4,1]");
  ExpectRefused(SpaceDepthNode("DepthToSpace", 2), {test::Iota<float>({1, 2, 2, 3})},
                "the depth 3 must be a multiple of block_size * block_size = 4");
}

TEST(SpaceToDepth, OtherLayoutsInferShapesButAreUnimplementedOnCpu) {
  ExpectShapes(Infer(SpaceDepthNode("SpaceToDepth", 2, "NCHW"), {S({kU, 3, 4, 6})}),
               {S({kU, 12, 2, 3})});
  ExpectShapes(Infer(SpaceDepthNode("DepthToSpace", 2, "NCHW_VECT_C"), {S({1, 8, 2, kU, 4})}),
               {S({1, 2, 4, kU, 4})});
  ExpectShapes(Infer(SpaceDepthNode("DepthToSpace", 3), {PartialTensorShape::UnknownRank()}),
               {S({kU, kU, kU, kU})});
  auto result =
      test::RunNode(SpaceDepthNode("SpaceToDepth", 2, "NCHW"), {test::Iota<float>({1, 1, 2, 2})});
  test::ExpectError(result, Code::kUnimplemented, "takes data_format NHWC only, got NCHW");
}

TEST(SpaceToDepth, DepthToSpaceUndoesIt) {
  const Tensor x = test::Iota<float>({2, 6, 4, 3});
  const Tensor depth = test::RunNodeOk(SpaceDepthNode("SpaceToDepth", 2), {x});
  EXPECT_EQ(depth.shape(), TensorShape({2, 3, 2, 12}));
  test::ExpectTensorEqual(x, test::RunNodeOk(SpaceDepthNode("DepthToSpace", 2), {depth}));
}

NodeDef BandNode() {
  NodeDef node =
      test::MakeNode("MatrixBandPart", 3,
                     {{"T", AttrValue::Type(DT_FLOAT)}, {"Tindex", AttrValue::Type(DT_INT32)}});
  node.name = "bad_band";
  return node;
}

TEST(MatrixBandPart, BadBoundsAreRefusedNamingTheNode) {
  const Tensor x = test::Iota<float>({3, 4});
  ExpectRefused(BandNode(), {x, MakeScalar<int32_t>(4), MakeScalar<int32_t>(0)},
                "num_lower = 4 must be negative or at most the number of rows (3)");
  ExpectRefused(BandNode(), {x, MakeScalar<int32_t>(0), MakeScalar<int32_t>(5)},
                "num_upper = 5 must be negative or at most the number of columns (4)");
  ExpectRefused(BandNode(),
                {test::Iota<float>({3}), MakeScalar<int32_t>(0), MakeScalar<int32_t>(0)},
                "input must have rank >= 2");
  ExpectRefused(BandNode(), {x, test::MakeVector<int32_t>({0}), MakeScalar<int32_t>(0)},
                "num_lower must be a scalar");
}

// Element by element against the definition, on a batch of wide and tall matrices.
TEST(MatrixBandPart, KeepsExactlyTheBand) {
  for (const TensorShape& shape : {TensorShape({2, 3, 7}), TensorShape({2, 7, 3})}) {
    const Tensor x = test::Iota<float>(shape, 1);
    for (int32_t lower : {-1, 0, 2}) {
      for (int32_t upper : {-1, 0, 1}) {
        const Tensor out = test::RunNodeOk(
            BandNode(), {x, MakeScalar<int32_t>(lower), MakeScalar<int32_t>(upper)});
        for (int64_t k = 0; k < x.num_elements(); ++k) {
          const std::vector<int64_t> at = test::MultiIndex(k, shape);
          const int64_t i = at[1], j = at[2];
          const bool kept = (lower < 0 || i - j <= lower) && (upper < 0 || j - i <= upper);
          ASSERT_EQ(out.data<float>()[k], kept ? x.data<float>()[k] : 0.0f)
              << shape.ToString() << " lower " << lower << " upper " << upper << " at " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace cfx
