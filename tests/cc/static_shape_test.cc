// Scope::StaticShape and the GraphShapes cache under it: after every append and every other change
// to the graph, the cached shapes are what inferring the whole graph afresh gives.
#include <gtest/gtest.h>

#include "conflux/cc/op_builder.h"
#include "conflux/cc/ops/standard_ops.h"
#include "graph/graph_shapes.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;

Tensor Int32s(std::vector<int32_t> v) {
  Tensor t(DT_INT32, TensorShape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.at<int32_t>(i) = v[i];
  return t;
}

Tensor Zeros(TensorShape shape) {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.at<float>(i) = 0;
  return t;
}

// Every output of every node of the scope's graph: StaticShape (the cache) against a fresh
// whole-graph inference.
void ExpectMatchesFreshInference(const Scope& root) {
  ASSERT_TRUE(root.ok()) << root.status();
  const std::vector<NodeShapes> fresh = InferGraphShapes(*root.graph());
  for (const auto& node : root.graph()->nodes())
    for (int i = 0; i < node->num_outputs(); ++i)
      EXPECT_EQ(root.StaticShape(Output(node.get(), i)), fresh[node->id()].outputs[i])
          << node->name() << ":" << i;
}

TEST(StaticShape, MatchesFreshInferenceAfterEachAppend) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_FLOAT, ops::PlaceholderAttrs().Shape({2, 6}));
  ExpectMatchesFreshInference(root);
  // Shapes read from Const inputs: Reshape's shape, Fill's dims, ConcatV2's axis.
  Output r = ops::Reshape(root, x, ops::Const(root, Int32s({3, 4})));
  EXPECT_EQ(root.StaticShape(r), PartialTensorShape({3, 4}));
  ExpectMatchesFreshInference(root);
  Output sum = ops::Add(root, r, ops::Const(root, Zeros({4})));  // broadcasts
  Output product = ops::MatMul(root, sum, ops::Const(root, Zeros({4, 5})));
  EXPECT_EQ(root.StaticShape(product), PartialTensorShape({3, 5}));
  ExpectMatchesFreshInference(root);
  Output filled = ops::Fill(root, ops::Const(root, Int32s({3, 5})), ops::Const(root, 1.0f));
  Output joined = ops::ConcatV2(root, {product, filled}, ops::Const(root, 0));
  Output back = ops::Reshape(root, ops::Identity(root, joined), ops::Const(root, Int32s({-1})));
  EXPECT_EQ(root.StaticShape(joined), PartialTensorShape({6, 5}));
  EXPECT_EQ(root.StaticShape(back), PartialTensorShape({30}));
  ExpectMatchesFreshInference(root);
  // A shape function that fails leaves its node unknown, and what reads it.
  Output bad = ops::MatMul(root, x, x);
  Output after = ops::Identity(root, bad);
  EXPECT_TRUE(root.StaticShape(after).unknown_rank());
  ExpectMatchesFreshInference(root);
}

TEST(StaticShape, UpdateEdgeInvalidates) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_FLOAT, ops::PlaceholderAttrs().Shape({12}));
  Output shape_a = ops::Const(root, Int32s({3, 4}));
  Output shape_b = ops::Const(root, Int32s({2, 6}));
  Output r = ops::Reshape(root, x, shape_a);
  Output y = ops::Neg(root, ops::Identity(root, r));
  EXPECT_EQ(root.StaticShape(y), PartialTensorShape({3, 4}));
  ASSERT_TRUE(root.graph()->UpdateEdge(shape_b.node(), 0, r.node(), 1).ok());
  EXPECT_EQ(root.StaticShape(y), PartialTensorShape({2, 6}));
  ExpectMatchesFreshInference(root);
}

TEST(StaticShape, ControlEdgesThatCloseAndOpenACycleInvalidate) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_FLOAT, ops::PlaceholderAttrs().Shape({2}));
  Output a = ops::Identity(root, x);
  Output b = ops::Identity(root, a);
  EXPECT_EQ(root.StaticShape(b), PartialTensorShape({2}));
  // a cycle that no NextIteration closes: every shape is unknown, also of nodes added after it
  root.graph()->AddControlEdge(b.node(), a.node());
  EXPECT_TRUE(root.StaticShape(b).unknown_rank());
  Output c = ops::Const(root, Zeros({3}));
  EXPECT_TRUE(root.StaticShape(c).unknown_rank());
  ExpectMatchesFreshInference(root);
  root.graph()->RemoveControlEdge(b.node(), a.node());
  EXPECT_EQ(root.StaticShape(b), PartialTensorShape({2}));
  EXPECT_EQ(root.StaticShape(c), PartialTensorShape({3}));
  ExpectMatchesFreshInference(root);
}

// A node appended with a loop back edge as input sees that edge's shape only when the topological
// order reaches the NextIteration first: here it does not (the NextIteration is three nodes
// deep), so the Merge reads an unknown shape, which makes its own unknown.
TEST(StaticShape, AppendedReaderOfABackEdgeSeesWhatAFreshInferenceSees) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output five = ops::Const(root, Zeros({5}));
  Output deep = ops::Identity(root, ops::Identity(root, ops::Identity(root, five)));
  Operation next = OpBuilder(root, "NextIteration").Input(deep).Finish();
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root.StaticShape(next.output(0)), PartialTensorShape({5}));
  Output seven = ops::Const(root, Zeros({7}));
  Operation merge = OpBuilder(root, "Merge").Input(InputList{seven, next.output(0)}).Finish();
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_TRUE(root.StaticShape(merge.output(0)).unknown_rank());
  ExpectMatchesFreshInference(root);
}

TEST(GraphShapes, InfersOnlyAppendedNodesUntilAnEdgeChanges) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_FLOAT, ops::PlaceholderAttrs().Shape({4}));
  Output shape = ops::Const(root, Int32s({2, 2}));
  Output r = ops::Reshape(root, x, shape);
  GraphShapes shapes(root.graph());
  shapes.Update();
  EXPECT_EQ(shapes.TEST_nodes_inferred(), 3);
  shapes.Update();
  EXPECT_EQ(shapes.TEST_nodes_inferred(), 3);
  Output y = ops::Neg(root, r);
  shapes.Update();
  EXPECT_EQ(shapes.TEST_nodes_inferred(), 4);
  EXPECT_EQ(shapes.node_shapes(*y.node()).outputs[0], PartialTensorShape({2, 2}));
  root.graph()->AddControlEdge(x.node(), y.node());
  shapes.Update();
  EXPECT_EQ(shapes.TEST_nodes_inferred(), 8);
}

// `graph show` reports what the shape functions alone infer; estimates also use what nodes
// record about themselves.
TEST(GraphShapes, RecordedShapesRefineOnlyWhenAsked) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_FLOAT);
  Operation y =
      OpBuilder(root, "Identity")
          .Input(x)
          .Attr("_output_shapes", std::vector<PartialTensorShape>{PartialTensorShape({3, -1})})
          .Finish();
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(InferGraphShapes(*root.graph())[y.node()->id()].outputs[0],
            PartialTensorShape({3, -1}));
  EXPECT_TRUE(InferGraphShapes(*root.graph(), {.use_recorded_shapes = false})[y.node()->id()]
                  .outputs[0]
                  .unknown_rank());
}

}  // namespace
}  // namespace cfx
