// Const, Identity, IdentityN, EnsureShape and NoOp through the kernel harness, and the harness's
// own checks.
#include "kernel_test_util.h"

namespace cfx {
namespace {

TEST(BasicKernels, ConstReturnsItsValueForEveryDtype) {
  for (Tensor v : {test::MakeTensor<float>({2, 2}, {1, 2, 3, 4}), test::MakeVector<int64_t>({7}),
                   test::MakeScalar<bool>(true), test::MakeVector<double>({})}) {
    NodeDef n = test::MakeNode(
        "Const", 0, {{"value", AttrValue::TensorValue(v)}, {"dtype", AttrValue::Type(v.dtype())}});
    test::ExpectTensorEqual(v, test::RunNodeOk(n, {}));
  }
  Tensor s(DT_STRING, TensorShape({1}));
  s.at<std::string>(0) = "text";
  NodeDef n = test::MakeNode(
      "Const", 0, {{"value", AttrValue::TensorValue(s)}, {"dtype", AttrValue::Type(DT_STRING)}});
  EXPECT_TRUE(test::RunNodeOk(n, {}).Equals(s));
}

TEST(BasicKernels, ConstRejectsAValueOfAnotherDtype) {
  NodeDef n = test::MakeNode("Const", 0,
                             {{"value", AttrValue::TensorValue(test::MakeScalar<int32_t>(1))},
                              {"dtype", AttrValue::Type(DT_FLOAT)}});
  auto out = test::RunNode(n, {});
  test::ExpectError(out, Code::kInvalidArgument, "int32");
}

TEST(BasicKernels, IdentityNSharesEveryBuffer) {
  const Tensor a = test::MakeVector<float>({1, 2}), b = test::MakeScalar<int64_t>(7);
  NodeDef n = test::MakeNode("IdentityN", 2, {{"T", AttrValue::TypeList({DT_FLOAT, DT_INT64})}});
  auto out = test::RunNode(n, {a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ((*out)[0].raw_data(), a.raw_data());
  EXPECT_EQ((*out)[1].raw_data(), b.raw_data());
}

TEST(BasicKernels, EnsureShapePassesFittingShapesAndNamesTheNodeOtherwise) {
  auto node = [](PartialTensorShape shape) {
    NodeDef n = test::MakeNode(
        "EnsureShape", 1, {{"T", AttrValue::Type(DT_FLOAT)}, {"shape", AttrValue::Shape(shape)}});
    n.name = "check";
    return n;
  };
  const Tensor x = test::MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (PartialTensorShape fits :
       {PartialTensorShape({2, 3}), PartialTensorShape({-1, 3}), PartialTensorShape::UnknownRank()})
    EXPECT_EQ(test::RunNodeOk(node(fits), {x}).raw_data(), x.raw_data()) << fits.ToString();
  for (PartialTensorShape bad : {PartialTensorShape({2, 4}), PartialTensorShape({2, 3, 1})}) {
    SCOPED_TRACE(bad.ToString());
    // The shape function refuses it (RunNode) and so does the kernel alone.
    for (auto out : {test::RunNode(node(bad), {x}), test::RunKernelOnly(node(bad), {x})}) {
      test::ExpectError(
          out, Code::kInvalidArgument,
          "input shape [2,3] is not compatible with the expected shape " + bad.ToString());
      if (!out.ok()) {
        EXPECT_NE(out.status().message().find("check"), std::string::npos);
      }
    }
  }
}

TEST(BasicKernels, IdentitySharesTheBuffer) {
  Tensor x = test::MakeTensor<int32_t>({3}, {1, 2, 3});
  auto out = test::RunNode(test::MakeNode("Identity", 1, {{"T", AttrValue::Type(DT_INT32)}}), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
}

TEST(BasicKernels, NoOpHasNoOutputs) {
  auto out = test::RunNode(test::MakeNode("NoOp", 0), {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->empty());
}

TEST(KernelHarness, RejectsWrongInputCountAndDtype) {
  NodeDef n = test::MakeNode("Identity", 1, {{"T", AttrValue::Type(DT_INT32)}});
  test::ExpectError(test::RunNode(n, {}), Code::kInvalidArgument, "got 0 inputs; expected 1");
  test::ExpectError(test::RunNode(n, {test::MakeScalar<float>(1)}), Code::kInvalidArgument,
                    "input 0 is float; expected int32");
  test::ExpectError(test::RunNode(test::MakeNode("NoSuchOp", 0), {}), Code::kNotFound, "NoSuchOp");
  test::ExpectError(test::RunNode(n, {test::MakeScalar<int32_t>(1)}, "GPU:0"), Code::kNotFound,
                    "no device matches");
}

}  // namespace
}  // namespace cfx

namespace cfx {
namespace {

TEST(BasicKernels, ReshapeExpandDimsAndSqueezeShareTheBuffer) {
  Tensor x = test::MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  NodeDef reshape = test::MakeNode(
      "Reshape", 2, {{"T", AttrValue::Type(DT_FLOAT)}, {"Tshape", AttrValue::Type(DT_INT32)}});
  auto out = test::RunNode(reshape, {x, test::MakeVector<int32_t>({3, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({3, 2}));
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  NodeDef expand = test::MakeNode(
      "ExpandDims", 2, {{"T", AttrValue::Type(DT_FLOAT)}, {"Tdim", AttrValue::Type(DT_INT32)}});
  out = test::RunNode(expand, {x, test::MakeScalar<int32_t>(0)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({1, 2, 3}));
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
}

}  // namespace
}  // namespace cfx
