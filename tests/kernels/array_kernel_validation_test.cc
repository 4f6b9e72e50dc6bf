// The array kernels' own input checks, run without the op's shape function (as in a graph where
// shapes and shape-like inputs are only known at run time). Each must refuse bad input with the
// same InvalidArgument the shape function gives when it can tell.
#include <memory>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::Type;

using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;

Tensor Matrix2x3() { return MakeTensor<float>({2, 3}, {0, 1, 2, 3, 4, 5}); }

TEST(ArrayKernelValidation, HelperRunsTheKernel) {
  auto out = test::RunKernelOnly(MakeNode("Reshape", 2, {{"T", Type(DT_FLOAT)}}),
                           {Matrix2x3(), MakeVector<int32_t>({3, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({3, 2}));
}

TEST(ArrayKernelValidation, ReshapeFillSqueezeExpandDims) {
  NodeDef reshape = MakeNode("Reshape", 2, {{"T", Type(DT_FLOAT)}});
  test::ExpectError(test::RunKernelOnly(reshape, {Matrix2x3(), MakeVector<int32_t>({4, 2})}),
                    Code::kInvalidArgument, "(6 elements) to shape [4,2] (8 elements)");
  test::ExpectError(test::RunKernelOnly(reshape, {Matrix2x3(), MakeVector<int32_t>({-1, -1})}),
                    Code::kInvalidArgument, "only one dimension");
  test::ExpectError(test::RunKernelOnly(reshape, {Matrix2x3(), MakeTensor<int32_t>({1, 2}, {3, 2})}),
                    Code::kInvalidArgument, "shape must be a vector, got shape [1,2]");
  test::ExpectError(test::RunKernelOnly(MakeNode("Fill", 2, {{"T", Type(DT_FLOAT)}}),
                                  {MakeVector<int32_t>({-3}), MakeScalar(1.0f)}),
                    Code::kInvalidArgument, "dims[0] = -3 must be >= 0");
  test::ExpectError(
      test::RunKernelOnly(MakeNode("Squeeze", 1,
                             {{"T", Type(DT_FLOAT)}, {"squeeze_dims", AttrValue::IntList({0})}}),
                    {Matrix2x3()}),
      Code::kInvalidArgument, "cannot squeeze dimension 0");
  test::ExpectError(test::RunKernelOnly(MakeNode("ExpandDims", 2, {{"T", Type(DT_FLOAT)}}),
                                  {Matrix2x3(), MakeScalar<int32_t>(-4)}),
                    Code::kInvalidArgument, "dim -4 is out of range [-3, 3)");
}

TEST(ArrayKernelValidation, ConcatPackSplitUnpack) {
  test::ExpectError(
      test::RunKernelOnly(
          MakeNode("ConcatV2", 3, {{"T", Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}}),
          {Matrix2x3(), MakeTensor<float>({3, 3}, std::vector<float>(9)), MakeScalar<int32_t>(1)}),
      Code::kInvalidArgument, "only dimension 1 (the axis) may differ");
  test::ExpectError(
      test::RunKernelOnly(MakeNode("Pack", 2, {{"T", Type(DT_FLOAT)}, {"N", AttrValue::Int(2)}}),
                    {Matrix2x3(), MakeVector<float>({1})}),
      Code::kInvalidArgument, "all inputs must have the same shape");
  test::ExpectError(
      test::RunKernelOnly(MakeNode("Split", 2, {{"T", Type(DT_FLOAT)}, {"num_split", AttrValue::Int(2)}}),
                    {MakeScalar<int32_t>(1), Matrix2x3()}),
      Code::kInvalidArgument, "num_split 2 does not evenly divide dimension 1 of size 3");
  test::ExpectError(
      test::RunKernelOnly(MakeNode("Unpack", 1, {{"T", Type(DT_FLOAT)}, {"num", AttrValue::Int(3)}}),
                    {Matrix2x3()}),
      Code::kInvalidArgument, "has size 2 but attr num is 3");
}

TEST(ArrayKernelValidation, SlicingTransposeTile) {
  NodeDef slice = MakeNode("Slice", 3, {{"T", Type(DT_FLOAT)}, {"Index", Type(DT_INT32)}});
  test::ExpectError(
      test::RunKernelOnly(slice, {Matrix2x3(), MakeVector<int32_t>({0, 1}), MakeVector<int32_t>({1, 3})}),
      Code::kInvalidArgument, "begin[1] + size[1] = 1 + 3 exceeds dimension 1 of size 3");
  NodeDef strided = MakeNode("StridedSlice", 4, {{"T", Type(DT_FLOAT)}, {"Index", Type(DT_INT32)}});
  test::ExpectError(test::RunKernelOnly(strided, {Matrix2x3(), MakeVector<int32_t>({0}),
                                            MakeVector<int32_t>({1}), MakeVector<int32_t>({0})}),
                    Code::kInvalidArgument, "strides[0] is 0");
  test::ExpectError(test::RunKernelOnly(MakeNode("Transpose", 2, {{"T", Type(DT_FLOAT)}}),
                                  {Matrix2x3(), MakeVector<int32_t>({1, 1})}),
                    Code::kInvalidArgument, "is not a permutation");
  test::ExpectError(test::RunKernelOnly(MakeNode("Tile", 2, {{"T", Type(DT_FLOAT)}}),
                                  {Matrix2x3(), MakeVector<int32_t>({1, -2})}),
                    Code::kInvalidArgument, "multiples[1] = -2 must be >= 0");
}

TEST(ArrayKernelValidation, GatherAndRange) {
  NodeDef gather = MakeNode(
      "GatherV2", 3,
      {{"Tparams", Type(DT_FLOAT)}, {"Tindices", Type(DT_INT32)}, {"Taxis", Type(DT_INT32)}});
  test::ExpectError(
      test::RunKernelOnly(gather, {Matrix2x3(), MakeVector<int32_t>({2}), MakeScalar<int32_t>(0)}),
      Code::kInvalidArgument, "indices[0] = 2 is not in [0, 2)");
  test::ExpectError(
      test::RunKernelOnly(gather, {Matrix2x3(), MakeVector<int32_t>({0}), MakeScalar<int32_t>(-3)}),
      Code::kInvalidArgument, "axis -3 is out of range [-2, 2)");
  test::ExpectError(
      test::RunKernelOnly(MakeNode("Range", 3, {{"Tidx", Type(DT_INT64)}}),
                    {MakeScalar<int64_t>(0), MakeScalar<int64_t>(4), MakeScalar<int64_t>(0)}),
      Code::kInvalidArgument, "delta must be non-zero");
  test::ExpectError(test::RunKernelOnly(MakeNode("Range", 3, {{"Tidx", Type(DT_INT32)}}),
                                  {MakeVector<int32_t>({0}), MakeScalar(4), MakeScalar(1)}),
                    Code::kInvalidArgument, "start must be a scalar");
}

}  // namespace
}  // namespace cfx
