// Shape inference of the element-wise ops on partially known shapes (the kernel tests check
// fully known shapes, since the harness compares every output with the shape function).
#include <string>
#include <utility>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

constexpr int64_t kUnknown = kUnknownDim;

PartialTensorShape Partial(std::vector<int64_t> dims) { return PartialTensorShape(std::move(dims)); }

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
    ExpectInferred(n, {Partial({2, kUnknown}), Partial({3})}, Partial({2, 3}));
    ExpectInferred(n, {Partial({5, 1, 4}), Partial({3, 1})}, Partial({5, 3, 4}));
    ExpectInferred(n, {Partial({}), Partial({kUnknown, 2})}, Partial({kUnknown, 2}));
    ExpectInferred(n, {PartialTensorShape::UnknownRank(), Partial({3})},
                   PartialTensorShape::UnknownRank());
    ExpectInferenceError(n, {Partial({2, 3}), Partial({4})}, "[2,3] and [4]");
  }
  ExpectInferred(test::MakeNode("LogicalAnd", 2), {Partial({2, 1}), Partial({1, 3})}, Partial({2, 3}));
}

TEST(ElementwiseShapeInference, UnaryOpsAndCastKeepTheShape) {
  for (const char* op :
       {"Neg", "Abs", "Square", "Exp", "Log", "Sqrt", "Rsqrt", "Tanh", "Sigmoid", "Relu"}) {
    ExpectInferred(Typed(op, 1), {Partial({kUnknown, 3})}, Partial({kUnknown, 3}));
  }
  ExpectInferred(test::MakeNode("LogicalNot", 1), {Partial({4})}, Partial({4}));
  NodeDef cast = test::MakeNode(
      "Cast", 1, {{"SrcT", AttrValue::Type(DT_FLOAT)}, {"DstT", AttrValue::Type(DT_INT32)}});
  ExpectInferred(cast, {Partial({2, 0})}, Partial({2, 0}));
}

TEST(ElementwiseShapeInference, EqualityWithoutShapeErrors) {
  for (const char* op : {"Equal", "NotEqual"}) {
    SCOPED_TRACE(op);
    NodeDef n = test::MakeNode(
        op, 2,
        {{"T", AttrValue::Type(DT_INT32)}, {"incompatible_shape_error", AttrValue::Bool(false)}});
    ExpectInferred(n, {Partial({2, 1}), Partial({3})}, Partial({2, 3}));  // surely broadcast
    ExpectInferred(n, {Partial({3}), Partial({2})}, Partial({}));         // surely not: a scalar
    ExpectInferred(n, {Partial({kUnknown}), Partial({3})},             // either, until run
                   PartialTensorShape::UnknownRank());
  }
}

TEST(ElementwiseShapeInference, SelectFollowsItsThreeRules) {
  NodeDef n = Typed("Select", 3);
  // t and e merge; a condition of the same shape, a scalar, or a vector of rows.
  ExpectInferred(n, {Partial({2, 3}), Partial({kUnknown, 3}), Partial({2, kUnknown})}, Partial({2, 3}));
  ExpectInferred(n, {Partial({}), Partial({2, 3}), Partial({2, 3})}, Partial({2, 3}));
  ExpectInferred(n, {Partial({2}), Partial({2, 3}), Partial({2, 3})}, Partial({2, 3}));
  ExpectInferred(n, {Partial({kUnknown, kUnknown}), Partial({kUnknown, 3}), Partial({2, kUnknown})},
                 Partial({2, 3}));
  ExpectInferenceError(n, {Partial({4}), Partial({2, 3}), Partial({2, 3})},
                       "'condition' is a vector of 4 elements");
  ExpectInferenceError(n, {Partial({2, 1}), Partial({2, 3}), Partial({2, 3})},
                       "'condition' must be a scalar");
  ExpectInferenceError(n, {Partial({2}), Partial({2, 3}), Partial({3, 3})},
                       "'t' and 'e' must have the same shape");
}

TEST(ElementwiseShapeInference, SelectV2BroadcastsAllThree) {
  NodeDef n = Typed("SelectV2", 3);
  ExpectInferred(n, {Partial({2, 1, 1}), Partial({1, 3, 1}), Partial({4})}, Partial({2, 3, 4}));
  ExpectInferred(n, {Partial({}), Partial({kUnknown}), Partial({5})}, Partial({5}));
  ExpectInferenceError(n, {Partial({2}), Partial({3}), Partial({1})}, "[2] and [3]");
}

TEST(ElementwiseShapeInference, AddNMergesItsInputs) {
  auto add_n = [](int n) {
    return test::MakeNode("AddN", n, {{"N", AttrValue::Int(n)}, {"T", AttrValue::Type(DT_FLOAT)}});
  };
  const PartialTensorShape unknown = PartialTensorShape::UnknownRank();
  ExpectInferred(add_n(1), {Partial({kUnknown, 3})}, Partial({kUnknown, 3}));
  // Each dimension known when some input knows it; an input of unknown rank adds nothing.
  ExpectInferred(add_n(3), {Partial({2, kUnknown, kUnknown}), unknown, Partial({kUnknown, 3, kUnknown})},
                 Partial({2, 3, kUnknown}));
  ExpectInferred(add_n(2), {unknown, unknown}, unknown);
  ExpectInferred(add_n(2), {Partial({}), Partial({})}, Partial({}));
  // No broadcasting. The error names an input and an earlier one it conflicts with on its own,
  // even when the merge of several earlier ones is what rejects it.
  ExpectInferenceError(add_n(2), {Partial({3}), Partial({})},
                       "all inputs must have the same shape, but input 0 has shape [3] and input 1 "
                       "has shape []");
  ExpectInferenceError(add_n(3), {Partial({kUnknown, 3}), Partial({2, kUnknown}), Partial({4, 3})},
                       "input 1 has shape [2,?] and input 2 has shape [4,3]");
  ExpectInferenceError(add_n(4), {unknown, Partial({2}), Partial({kUnknown}), Partial({2, 2})},
                       "input 1 has shape [2] and input 3 has shape [2,2]");
}

}  // namespace
}  // namespace cfx
