// Shape inference of the element-wise ops on partially known shapes (the kernel tests check
// fully known shapes, since the harness compares every output with the shape function).
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

constexpr int64_t kUnknown = kUnknownDim;

PartialTensorShape Dims(std::vector<int64_t> dims) { return PartialTensorShape(std::move(dims)); }

StatusOr<PartialTensorShape> InferOne(const NodeDef& node,
                                      const std::vector<PartialTensorShape>& in) {
  CFX_ASSIGN_OR_RETURN(std::vector<PartialTensorShape> out,
                       InferNodeShapes(test::TestRuntime(), node, in, {}));
  if (out.size() != 1) return errors::Internal("expected one output, got ", out.size());
  return out[0];
}

void ExpectInferred(const NodeDef& node, const std::vector<PartialTensorShape>& in,
                    const PartialTensorShape& expected) {
  auto out = InferOne(node, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, expected) << "got " << out->ToString() << ", expected " << expected.ToString();
}

void ExpectInferenceError(const NodeDef& node, const std::vector<PartialTensorShape>& in,
                          const std::string& substring) {
  auto out = InferOne(node, in);
  ASSERT_FALSE(out.ok()) << "inferred " << out->ToString();
  EXPECT_EQ(out.status().code(), Code::kInvalidArgument) << out.status();
  EXPECT_NE(out.status().message().find(substring), std::string::npos) << out.status();
}

NodeDef Typed(const std::string& op, int num_inputs, DataType t = DT_FLOAT) {
  return test::MakeNode(op, num_inputs, {{"T", AttrValue::Type(t)}});
}

TEST(ElementwiseShapeInference, BinaryOpsBroadcast) {
  for (const char* op : {"Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
                         "SquaredDifference", "Less", "GreaterEqual", "Equal"}) {
    SCOPED_TRACE(op);
    NodeDef n = Typed(op, 2);
    ExpectInferred(n, {Dims({2, kUnknown}), Dims({3})}, Dims({2, 3}));
    ExpectInferred(n, {Dims({5, 1, 4}), Dims({3, 1})}, Dims({5, 3, 4}));
    ExpectInferred(n, {Dims({}), Dims({kUnknown, 2})}, Dims({kUnknown, 2}));
    ExpectInferred(n, {PartialTensorShape::UnknownRank(), Dims({3})},
                   PartialTensorShape::UnknownRank());
    ExpectInferenceError(n, {Dims({2, 3}), Dims({4})}, "[2,3] and [4]");
  }
  ExpectInferred(test::MakeNode("LogicalAnd", 2), {Dims({2, 1}), Dims({1, 3})}, Dims({2, 3}));
}

TEST(ElementwiseShapeInference, UnaryOpsAndCastKeepTheShape) {
  for (const char* op :
       {"Neg", "Abs", "Square", "Exp", "Log", "Sqrt", "Rsqrt", "Tanh", "Sigmoid", "Relu"}) {
    ExpectInferred(Typed(op, 1), {Dims({kUnknown, 3})}, Dims({kUnknown, 3}));
  }
  ExpectInferred(test::MakeNode("LogicalNot", 1), {Dims({4})}, Dims({4}));
  NodeDef cast = test::MakeNode(
      "Cast", 1, {{"SrcT", AttrValue::Type(DT_FLOAT)}, {"DstT", AttrValue::Type(DT_INT32)}});
  ExpectInferred(cast, {Dims({2, 0})}, Dims({2, 0}));
}

TEST(ElementwiseShapeInference, EqualityWithoutShapeErrors) {
  for (const char* op : {"Equal", "NotEqual"}) {
    SCOPED_TRACE(op);
    NodeDef n = test::MakeNode(
        op, 2,
        {{"T", AttrValue::Type(DT_INT32)}, {"incompatible_shape_error", AttrValue::Bool(false)}});
    ExpectInferred(n, {Dims({2, 1}), Dims({3})}, Dims({2, 3}));  // surely broadcast
    ExpectInferred(n, {Dims({3}), Dims({2})}, Dims({}));         // surely not: a scalar
    ExpectInferred(n, {Dims({kUnknown}), Dims({3})},             // either, until run
                   PartialTensorShape::UnknownRank());
  }
}

TEST(ElementwiseShapeInference, SelectFollowsItsThreeRules) {
  NodeDef n = Typed("Select", 3);
  // t and e merge; a condition of the same shape, a scalar, or a vector of rows.
  ExpectInferred(n, {Dims({2, 3}), Dims({kUnknown, 3}), Dims({2, kUnknown})}, Dims({2, 3}));
  ExpectInferred(n, {Dims({}), Dims({2, 3}), Dims({2, 3})}, Dims({2, 3}));
  ExpectInferred(n, {Dims({2}), Dims({2, 3}), Dims({2, 3})}, Dims({2, 3}));
  ExpectInferred(n, {Dims({kUnknown, kUnknown}), Dims({kUnknown, 3}), Dims({2, kUnknown})},
                 Dims({2, 3}));
  ExpectInferenceError(n, {Dims({4}), Dims({2, 3}), Dims({2, 3})},
                       "'condition' is a vector of 4 elements");
  ExpectInferenceError(n, {Dims({2, 1}), Dims({2, 3}), Dims({2, 3})},
                       "'condition' must be a scalar");
  ExpectInferenceError(n, {Dims({2}), Dims({2, 3}), Dims({3, 3})},
                       "'t' and 'e' must have the same shape");
}

TEST(ElementwiseShapeInference, SelectV2BroadcastsAllThree) {
  NodeDef n = Typed("SelectV2", 3);
  ExpectInferred(n, {Dims({2, 1, 1}), Dims({1, 3, 1}), Dims({4})}, Dims({2, 3, 4}));
  ExpectInferred(n, {Dims({}), Dims({kUnknown}), Dims({5})}, Dims({5}));
  ExpectInferenceError(n, {Dims({2}), Dims({3}), Dims({1})}, "[2] and [3]");
}

TEST(ElementwiseShapeInference, AddNMergesItsInputs) {
  auto add_n = [](int n) {
    return test::MakeNode("AddN", n, {{"N", AttrValue::Int(n)}, {"T", AttrValue::Type(DT_FLOAT)}});
  };
  const PartialTensorShape unknown = PartialTensorShape::UnknownRank();
  ExpectInferred(add_n(1), {Dims({kUnknown, 3})}, Dims({kUnknown, 3}));
  // Each dimension known when some input knows it; an input of unknown rank adds nothing.
  ExpectInferred(add_n(3), {Dims({2, kUnknown, kUnknown}), unknown, Dims({kUnknown, 3, kUnknown})},
                 Dims({2, 3, kUnknown}));
  ExpectInferred(add_n(2), {unknown, unknown}, unknown);
  ExpectInferred(add_n(2), {Dims({}), Dims({})}, Dims({}));
  // No broadcasting. The error names an input and an earlier one it conflicts with on its own,
  // even when the merge of several earlier ones is what rejects it.
  ExpectInferenceError(add_n(2), {Dims({3}), Dims({})},
                       "all inputs must have the same shape, but input 0 has shape [3] and input 1 "
                       "has shape []");
  ExpectInferenceError(add_n(3), {Dims({kUnknown, 3}), Dims({2, kUnknown}), Dims({4, 3})},
                       "input 1 has shape [2,?] and input 2 has shape [4,3]");
  ExpectInferenceError(add_n(4), {unknown, Dims({2}), Dims({kUnknown}), Dims({2, 2})},
                       "input 1 has shape [2] and input 3 has shape [2,2]");
}

}  // namespace
}  // namespace cfx
