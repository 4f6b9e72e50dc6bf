// Training updates through sessions: ApplyGradientDescent on reference variables and
// ResourceApplyGradientDescent on resource variables, step after step, with their errors.
#include <gtest/gtest.h>

#include <vector>

#include "conflux/op_def.h"
#include "conflux/session.h"
#include "conflux/shape_inference.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// var = x0 - steps * alpha * delta, computed one step at a time as the kernel does (in T).
template <typename V>
std::vector<V> Descend(std::vector<V> var, V alpha, const std::vector<V>& delta, int steps) {
  for (int s = 0; s < steps; ++s)
    for (size_t i = 0; i < var.size(); ++i) var[i] -= alpha * delta[i];
  return var;
}

// v = VariableV2 [3]; init: v = [1, 2, 3]; step: v -= alpha * delta (alpha, delta fed).
GraphDef RefDescentGraph(const std::string& shared_name, DataType t = DT_FLOAT,
                         bool use_locking = false) {
  GraphBuilder b;
  b.Op("v", "VariableV2", {},
       {{"dtype", T(t)},
        {"shape", AttrValue::Shape(PartialTensorShape({3}))},
        {"shared_name", AttrValue::String(shared_name)}});
  b.Placeholder("init_value", t);
  b.Op("init", "Assign", {"v", "init_value"}, {{"T", T(t)}});
  b.Placeholder("alpha", t);
  b.Placeholder("delta", t);
  b.Op("step", "ApplyGradientDescent", {"v", "alpha", "delta"},
       {{"T", T(t)}, {"use_locking", AttrValue::Bool(use_locking)}});
  b.Op("read", "Identity", {"v"}, {{"T", T(t)}});
  return b.graph();
}

TEST(ApplyGradientDescent, UpdatesAReferenceVariableInPlaceStepByStep) {
  for (bool use_locking : {false, true}) {
    auto session = NewTestSession(
        RefDescentGraph(use_locking ? "gd_ref_locked" : "gd_ref", DT_FLOAT, use_locking));
    ASSERT_NE(session, nullptr);
    const std::vector<float> x0 = {1, 2, 3}, delta = {0.5f, -1, 4};
    const float alpha = 0.1f;
    ASSERT_OK(session->Run({{"init_value", MakeVector<float>(x0)}}, {}, {"init"}, nullptr));
    std::vector<Tensor> out;
    for (int step = 1; step <= 5; ++step) {
      // `step`'s output is the variable itself, already updated.
      ASSERT_OK(session->Run({{"alpha", MakeScalar<float>(alpha)}, {"delta", MakeVector(delta)}},
                             {"step"}, {}, &out));
      ExpectTensorEqual(MakeVector<float>(Descend(x0, alpha, delta, step)), out[0]);
    }
    ASSERT_OK(session->Run({}, {"read"}, {}, &out));
    ExpectTensorEqual(MakeVector<float>(Descend(x0, alpha, delta, 5)), out[0]);
  }
}

TEST(ApplyGradientDescent, DoubleVariablesAndAlphaZero) {
  auto session = NewTestSession(RefDescentGraph("gd_ref_double", DT_DOUBLE));
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({{"init_value", MakeVector<double>({1, 2, 3})}}, {}, {"init"}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(
      session->Run({{"alpha", MakeScalar<double>(0)}, {"delta", MakeVector<double>({5, 5, 5})}},
                   {"step"}, {}, &out));
  ExpectTensorEqual(MakeVector<double>({1, 2, 3}), out[0]);
  ASSERT_OK(
      session->Run({{"alpha", MakeScalar<double>(0.25)}, {"delta", MakeVector<double>({4, -8, 2})}},
                   {"step"}, {}, &out));
  ExpectTensorEqual(MakeVector<double>({0, 4, 2.5}), out[0]);
}

TEST(ApplyGradientDescent, BadShapesAndUninitializedVariablesAreErrors) {
  auto session = NewTestSession(RefDescentGraph("gd_ref_errors"));
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> out;
  Status s =
      session->Run({{"alpha", MakeScalar<float>(1)}, {"delta", MakeVector<float>({1, 1, 1})}},
                   {"step"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("uninitialized"), std::string::npos) << s;

  ASSERT_OK(session->Run({{"init_value", MakeVector<float>({1, 2, 3})}}, {}, {"init"}, nullptr));
  s = session->Run({{"alpha", MakeScalar<float>(1)}, {"delta", MakeVector<float>({1, 1})}},
                   {"step"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("delta has shape [2]"), std::string::npos) << s;
  s = session->Run({{"alpha", MakeVector<float>({1, 1})}, {"delta", MakeVector<float>({1, 1, 1})}},
                   {"step"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("alpha must be a scalar"), std::string::npos) << s;
  // The failed steps left the variable alone.
  ASSERT_OK(session->Run({}, {"read"}, {}, &out));
  ExpectTensorEqual(MakeVector<float>({1, 2, 3}), out[0]);
}

// The registered shape functions: alpha a scalar, delta of var's shape; out has var's shape.
StatusOr<std::vector<PartialTensorShape>> InferShapes(const std::string& op,
                                                      std::vector<PartialTensorShape> inputs) {
  const OpRegistration* reg = TestRuntime().ops().LookUp(op);
  if (reg == nullptr || !reg->shape_fn) return errors::NotFound(op, " has no shape function");
  NodeDef node = MakeNode(op, 3, {{"T", T()}});
  InferenceContext c(&node, &reg->def, std::move(inputs), {},
                     static_cast<int>(reg->def.output_arg.size()));
  CFX_RETURN_IF_ERROR(reg->shape_fn(c));
  return c.outputs();
}

TEST(ApplyGradientDescent, ShapeInference) {
  using P = PartialTensorShape;
  const P scalar(std::vector<int64_t>{});
  auto out = InferShapes("ApplyGradientDescent", {P({-1, 3}), scalar, P({2, -1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({2, 3}));
  out = InferShapes("ApplyGradientDescent", {P(), P(), P({4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], P({4}));
  EXPECT_EQ(InferShapes("ApplyGradientDescent", {P({3}), scalar, P({2})}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(InferShapes("ApplyGradientDescent", {P({3}), P({1}), P({3})}).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(InferShapes("ResourceApplyGradientDescent", {scalar, scalar, P({5})}).ok());
  EXPECT_EQ(InferShapes("ResourceApplyGradientDescent", {scalar, P({2}), P({5})}).status().code(),
            Code::kInvalidArgument);
}

// h = VarHandleOp; assign: h = value; step: h -= alpha * delta; read: ReadVariableOp(h).
GraphDef ResourceDescentGraph(const std::string& shared_name) {
  GraphBuilder b;
  b.Op("h", "VarHandleOp", {},
       {{"dtype", T()},
        {"shape", AttrValue::Shape(PartialTensorShape({2, 2}))},
        {"shared_name", AttrValue::String(shared_name)}});
  b.Placeholder("value", DT_FLOAT);
  b.Op("assign", "AssignVariableOp", {"h", "value"}, {{"dtype", T()}});
  b.Placeholder("alpha", DT_FLOAT);
  b.Placeholder("delta", DT_FLOAT);
  b.Op("step", "ResourceApplyGradientDescent", {"h", "alpha", "delta"}, {{"T", T()}});
  b.Op("read", "ReadVariableOp", {"h"}, {{"dtype", T()}});
  return b.graph();
}

TEST(ResourceApplyGradientDescent, UpdatesAResourceVariableStepByStep) {
  auto session = NewTestSession(ResourceDescentGraph("gd_resource"));
  ASSERT_NE(session, nullptr);
  const std::vector<float> x0 = {4, -2, 0.5f, 8}, delta = {1, 2, -3, 0.25f};
  const float alpha = 0.5f;
  const TensorShape shape({2, 2});
  ASSERT_OK(session->Run({{"value", MakeTensor<float>(shape, x0)}}, {}, {"assign"}, nullptr));
  std::vector<Tensor> out;
  for (int step = 1; step <= 4; ++step) {
    ASSERT_OK(session->Run(
        {{"alpha", MakeScalar<float>(alpha)}, {"delta", MakeTensor<float>(shape, delta)}}, {},
        {"step"}, nullptr));
    ASSERT_OK(session->Run({}, {"read"}, {}, &out));
    ExpectTensorEqual(MakeTensor<float>(shape, Descend(x0, alpha, delta, step)), out[0]);
  }
}

TEST(ResourceApplyGradientDescent, AValueReadBeforeTheUpdateKeepsTheOldValue) {
  auto session = NewTestSession(ResourceDescentGraph("gd_resource_cow"));
  ASSERT_NE(session, nullptr);
  const TensorShape shape({2, 2});
  ASSERT_OK(
      session->Run({{"value", MakeTensor<float>(shape, {1, 2, 3, 4})}}, {}, {"assign"}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"read"}, {}, &out));
  Tensor before = out[0];  // shares the variable's buffer until the update copies it
  ASSERT_OK(session->Run(
      {{"alpha", MakeScalar<float>(1)}, {"delta", MakeTensor<float>(shape, {1, 1, 1, 1})}}, {},
      {"step"}, nullptr));
  ExpectTensorEqual(MakeTensor<float>(shape, {1, 2, 3, 4}), before);
  ASSERT_OK(session->Run({}, {"read"}, {}, &out));
  ExpectTensorEqual(MakeTensor<float>(shape, {0, 1, 2, 3}), out[0]);
}

TEST(ResourceApplyGradientDescent, ErrorsNameTheProblem) {
  auto session = NewTestSession(ResourceDescentGraph("gd_resource_errors"));
  ASSERT_NE(session, nullptr);
  const TensorShape shape({2, 2});
  auto step = [&](Tensor alpha, Tensor delta) {
    return session->Run({{"alpha", alpha}, {"delta", delta}}, {}, {"step"}, nullptr);
  };
  Tensor ones = MakeTensor<float>(shape, {1, 1, 1, 1});
  Status s = step(MakeScalar<float>(1), ones);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;  // never assigned

  ASSERT_OK(
      session->Run({{"value", MakeTensor<float>(shape, {1, 2, 3, 4})}}, {}, {"assign"}, nullptr));
  s = step(MakeScalar<float>(1), MakeVector<float>({1, 1, 1, 1}));
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("var has shape [2,2] and delta has shape [4]"), std::string::npos)
      << s;
  s = step(MakeVector<float>({1}), ones);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("alpha must be a scalar"), std::string::npos) << s;
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"read"}, {}, &out));
  ExpectTensorEqual(MakeTensor<float>(shape, {1, 2, 3, 4}), out[0]);
}

TEST(ResourceApplyGradientDescent, AVariableOfAnotherDtypeIsAnError) {
  GraphBuilder b;
  b.Op("h", "VarHandleOp", {},
       {{"dtype", T(DT_DOUBLE)},
        {"shape", AttrValue::Shape(PartialTensorShape({2}))},
        {"shared_name", AttrValue::String("gd_resource_dtype")}});
  b.Const("value", MakeVector<double>({1, 2}));
  b.Op("assign", "AssignVariableOp", {"h", "value"}, {{"dtype", T(DT_DOUBLE)}});
  b.Const("alpha", MakeScalar<float>(1));
  b.Const("delta", MakeVector<float>({1, 1}));
  b.Op("step", "ResourceApplyGradientDescent", {"h", "alpha", "delta"}, {{"T", T()}});
  auto session = NewTestSession(b.graph());
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"assign"}, nullptr));
  Status s = session->Run({}, {}, {"step"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("the variable holds double but T is float"), std::string::npos) << s;
}

}  // namespace
}  // namespace cfx
