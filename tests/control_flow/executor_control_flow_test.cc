// The executor's control flow (EuroSys 2018 §4, Fig. 5) on hand-written GraphDefs: Switch and
// Merge with dead tensors, while loops built from Enter/Merge/Switch/Exit/NextIteration/LoopCond,
// loop invariants, nesting, loops on untaken branches, parallel_iterations, ControlTrigger,
// malformed loops, and conditionals whose branches sit on another device.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <tuple>

#include "conflux/config.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "loop_graph.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

StatusOr<std::vector<Tensor>> RunGraph(const GraphDef& g,
                                       const std::vector<std::pair<std::string, Tensor>>& feeds,
                                       const std::vector<std::string>& fetches,
                                       Runtime* runtime = nullptr) {
  CFX_ASSIGN_OR_RETURN(auto session,
                       Session::Create(runtime != nullptr ? runtime : &TestRuntimeWith(2, 1), g));
  std::vector<Tensor> out;
  CFX_RETURN_IF_ERROR(session->Run(feeds, fetches, {}, &out));
  return out;
}

// The loop of these tests, under prefix `p` in frame `frame`:
//   for (i = 0; i < n; ++i) x = x * scale * 2 + 1      (scale: a loop invariant, if given)
// Returns <p>/exit_x; the counter's exit is <p>/exit_i. `anchor` gives the counter's initial
// value its frame or branch when the loop is nested.
std::string AddCountingLoop(GraphBuilder& b, const std::string& p, const std::string& frame,
                            const std::string& x0, const std::string& n, int64_t parallel = 10,
                            const std::string& scale = "", const std::string& anchor = "") {
  LoopOptions options{p + "/", frame, parallel, anchor};
  return AddCountedLoop(b, options, n, {{"x", x0, DT_FLOAT}},
                        [&](const std::string& i, const std::vector<std::string>& v) {
                          std::string x = v[0];
                          if (!scale.empty()) {
                            EnterFrame(b, p + "/enter_scale", scale, DT_FLOAT, frame, true,
                                       parallel);
                            b.Binary(p + "/scaled", "Mul", x, p + "/enter_scale");
                            x = p + "/scaled";
                          }
                          FrameConst(b, p + "/two", MakeScalar<float>(2), i);
                          FrameConst(b, p + "/onef", MakeScalar<float>(1), i);
                          b.Binary(p + "/mul", "Mul", x, p + "/two");
                          b.Binary(p + "/add_x", "AddV2", p + "/mul", p + "/onef");
                          return std::vector<std::string>{p + "/add_x"};
                        })[0];
}

float CountingLoopReference(float x, int n, float scale = 1.0f) {
  for (int i = 0; i < n; ++i) x = x * scale * 2 + 1;
  return x;
}

TEST(ControlFlowExecutor, SwitchMergeTakesOneBranch) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Op("sw", "Switch", {"x", "p"}, {{"T", T(DT_FLOAT)}});
  b.Op("neg", "Neg", {"sw:0"}, {{"T", T(DT_FLOAT)}});    // false branch
  b.Op("sq", "Square", {"sw:1"}, {{"T", T(DT_FLOAT)}});  // true branch
  b.Op("m", "Merge", {"neg", "sq"}, {{"T", T(DT_FLOAT)}, {"N", AttrValue::Int(2)}});
  for (bool pred : {false, true}) {
    auto out = RunGraph(b.graph(), {{"x:0", MakeScalar<float>(3)}, {"p:0", MakeScalar(pred)}},
                        {"m:0", "m:1"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<float>((*out)[0])[0], pred ? 9.0f : -3.0f);
    EXPECT_EQ(Values<int32_t>((*out)[1])[0], pred ? 1 : 0);
  }
}

TEST(ControlFlowExecutor, DeadBranchDoesNotRun) {
  // The untaken branch holds a Reshape to an impossible shape: running it would fail the step.
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Op("sw", "Switch", {"x", "p"}, {{"T", T(DT_FLOAT)}});
  b.Const("bad_shape", MakeVector<int32_t>({7, 7}));
  b.Op("bad", "Reshape", {"sw:0", "bad_shape"}, {{"T", T(DT_FLOAT)}, {"Tshape", T(DT_INT32)}});
  b.Op("ok", "Neg", {"sw:1"}, {{"T", T(DT_FLOAT)}});
  b.Op("m", "Merge", {"bad", "ok"}, {{"T", T(DT_FLOAT)}, {"N", AttrValue::Int(2)}});
  auto out =
      RunGraph(b.graph(), {{"x:0", MakeVector<float>({1, 2})}, {"p:0", MakeScalar(true)}}, {"m:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{-1, -2}));
  // With the other predicate the bad branch runs and its error reaches the caller.
  auto bad = RunGraph(b.graph(), {{"x:0", MakeVector<float>({1, 2})}, {"p:0", MakeScalar(false)}},
                      {"m:0"});
  EXPECT_FALSE(bad.ok());
}

TEST(ControlFlowExecutor, FetchingADeadTensorIsAnError) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Op("sw", "Switch", {"x", "p"}, {{"T", T(DT_FLOAT)}});
  b.Op("y", "Neg", {"sw:0"}, {{"T", T(DT_FLOAT)}});
  auto out =
      RunGraph(b.graph(), {{"x:0", MakeScalar<float>(1)}, {"p:0", MakeScalar(true)}}, {"y:0"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("y:0"), std::string::npos) << out.status();
}

TEST(ControlFlowExecutor, WhileLoopCountsToN) {
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Placeholder("x", DT_FLOAT);
  AddCountingLoop(b, "loop", "loop_frame", "x", "n");
  for (int n : {0, 1, 5, 17}) {
    auto out =
        RunGraph(b.graph(), {{"n:0", MakeScalar<int32_t>(n)}, {"x:0", MakeScalar<float>(0.5f)}},
                 {"loop/exit_i:0", "loop/exit_x:0"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<int32_t>((*out)[0])[0], n);
    EXPECT_FLOAT_EQ(Values<float>((*out)[1])[0], CountingLoopReference(0.5f, n));
  }
}

TEST(ControlFlowExecutor, ManyIterationsAndRepeatedSteps) {
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Placeholder("x", DT_FLOAT);
  b.Const("half", MakeScalar<float>(0.5f));
  AddCountingLoop(b, "loop", "f", "x", "n", 10, "half");
  auto session = Session::Create(&TestRuntimeWith(2, 1), b.graph());
  ASSERT_TRUE(session.ok()) << session.status();
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    ASSERT_TRUE((*session)
                    ->Run({{"n:0", MakeScalar<int32_t>(5000)}, {"x:0", MakeScalar<float>(3)}},
                          {"loop/exit_i:0", "loop/exit_x:0"}, {}, &out)
                    .ok());
    EXPECT_EQ(Values<int32_t>(out[0])[0], 5000);
    // x <- x * 0.5 * 2 + 1 = x + 1.
    EXPECT_FLOAT_EQ(Values<float>(out[1])[0], 5003.0f);
  }
}

TEST(ControlFlowExecutor, ParallelIterationsDoNotChangeResults) {
  for (int64_t parallel : {1, 2, 10, 32}) {
    for (int inter_op : {1, 4}) {
      GraphBuilder b;
      b.Placeholder("n", DT_INT32);
      b.Placeholder("x", DT_FLOAT);
      b.Const("s", MakeScalar<float>(0.75f));
      AddCountingLoop(b, "loop", "f", "x", "n", parallel, "s");
      auto out =
          RunGraph(b.graph(), {{"n:0", MakeScalar<int32_t>(40)}, {"x:0", MakeScalar<float>(1)}},
                   {"loop/exit_x:0"}, &TestRuntimeWith(inter_op, 1));
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_FLOAT_EQ(Values<float>((*out)[0])[0], CountingLoopReference(1, 40, 0.75f))
          << "parallel_iterations " << parallel << ", inter_op " << inter_op;
    }
  }
}

// parallel_iterations bounds how many iterations run at once; it is not a size (a frame's ring
// of iterations sized from 2^62 could not be allocated).
TEST(ControlFlowExecutor, HugeParallelIterationsIsABoundNotASize) {
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Placeholder("x", DT_FLOAT);
  AddCountingLoop(b, "loop", "f", "x", "n", int64_t{1} << 62);
  auto out = RunGraph(b.graph(), {{"n:0", MakeScalar<int32_t>(5)}, {"x:0", MakeScalar<float>(1)}},
                      {"loop/exit_x:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(Values<float>((*out)[0])[0], CountingLoopReference(1, 5));
}

TEST(ControlFlowExecutor, NestedLoopsWithOuterDependentTripCount) {
  // for (i = 0; i < n; ++i) { for (j = 0; j < i; ++j) x = x * 2 + 1 }: the inner loop's trip
  // count is the outer counter.
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Placeholder("x", DT_FLOAT);
  AddCountedLoop(b, {"outer/", "outer_frame", 10, ""}, "n", {{"x", "x", DT_FLOAT}},
                 [&](const std::string& i, const std::vector<std::string>& v) {
                   return std::vector<std::string>{
                       AddCountingLoop(b, "inner", "inner_frame", v[0], i, 10, "", i)};
                 });
  for (int n : {0, 1, 4, 7}) {
    auto out = RunGraph(b.graph(), {{"n:0", MakeScalar<int32_t>(n)}, {"x:0", MakeScalar<float>(0)}},
                        {"outer/exit_x:0", "outer/exit_i:0"});
    ASSERT_TRUE(out.ok()) << out.status();
    float expected = 0;
    for (int i = 0; i < n; ++i) expected = CountingLoopReference(expected, i);
    EXPECT_FLOAT_EQ(Values<float>((*out)[0])[0], expected) << "n = " << n;
    EXPECT_EQ(Values<int32_t>((*out)[1])[0], n);
  }
}

// cond(p, loop(x), x - 1): a loop inside a conditional; on the untaken branch the whole loop
// frame is dead and its Exit must make the Merge's input dead, not hang the step.
TEST(ControlFlowExecutor, LoopInsideAConditional) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Placeholder("n", DT_INT32);
  b.Op("sw_x", "Switch", {"x", "p"}, {{"T", T(DT_FLOAT)}});
  b.Op("sw_n", "Switch", {"n", "p"}, {{"T", T(DT_INT32)}});
  b.Op("pivot_t", "Identity", {"sw_x:1"}, {{"T", T(DT_FLOAT)}});
  AddCountingLoop(b, "loop", "loop_in_cond", "sw_x:1", "sw_n:1", 10, "", "pivot_t");
  b.Const("onef", MakeScalar<float>(1));
  b.Binary("minus", "Sub", "sw_x:0", "onef");
  b.Op("m", "Merge", {"minus", "loop/exit_x"}, {{"T", T(DT_FLOAT)}, {"N", AttrValue::Int(2)}});
  for (bool pred : {true, false}) {
    auto out = RunGraph(
        b.graph(),
        {{"x:0", MakeScalar<float>(2)}, {"p:0", MakeScalar(pred)}, {"n:0", MakeScalar<int32_t>(3)}},
        {"m:0"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_FLOAT_EQ(Values<float>((*out)[0])[0], pred ? CountingLoopReference(2, 3) : 1.0f);
  }
}

// A conditional inside a loop body: even iterations multiply, odd ones add.
TEST(ControlFlowExecutor, ConditionalInsideALoop) {
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Placeholder("x", DT_FLOAT);
  const std::string p = "loop/";
  AddCountedLoop(b, {p, "f", 10, ""}, "n", {{"x", "x", DT_FLOAT}},
                 [&](const std::string& i, const std::vector<std::string>& v) {
                   FrameConst(b, p + "two", MakeScalar<int32_t>(2), i);
                   FrameConst(b, p + "three", MakeScalar<float>(3), i);
                   b.Binary(p + "half", "Div", i, p + "two", DT_INT32);
                   b.Binary(p + "twice_half", "Mul", p + "half", p + "two", DT_INT32);
                   b.Binary(p + "is_even", "Equal", p + "twice_half", i, DT_INT32);
                   b.Op(p + "csw", "Switch", {v[0], p + "is_even"}, {{"T", T(DT_FLOAT)}});
                   b.Binary(p + "odd", "AddV2", p + "csw:0", p + "three");
                   b.Binary(p + "even", "Mul", p + "csw:1", p + "three");
                   b.Op(p + "cmerge", "Merge", {p + "odd", p + "even"},
                        {{"T", T(DT_FLOAT)}, {"N", AttrValue::Int(2)}});
                   return std::vector<std::string>{p + "cmerge"};
                 });
  auto out = RunGraph(b.graph(), {{"n:0", MakeScalar<int32_t>(6)}, {"x:0", MakeScalar<float>(1)}},
                      {p + "exit_x:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  float x = 1;
  for (int i = 0; i < 6; ++i) x = i % 2 == 0 ? x * 3 : x + 3;
  EXPECT_FLOAT_EQ(Values<float>((*out)[0])[0], x);
}

TEST(ControlFlowExecutor, ControlTriggerRunsAfterDeadInputs) {
  // The trigger waits for a dead node, then lets `after` run live.
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Op("sw", "Switch", {"x", "p"}, {{"T", T(DT_FLOAT)}});
  b.Op("dead", "Neg", {"sw:0"}, {{"T", T(DT_FLOAT)}});
  b.Op("trigger", "ControlTrigger", {"^dead"});
  NodeDef& c = b.Const("after", MakeScalar<float>(4));
  c.input.push_back("^trigger");
  NodeDef& c2 = b.Const("after_dead", MakeScalar<float>(5));
  c2.input.push_back("^dead");
  auto out =
      RunGraph(b.graph(), {{"x:0", MakeScalar<float>(1)}, {"p:0", MakeScalar(true)}}, {"after:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0])[0], 4.0f);
  // A control edge from a dead node makes its consumer dead too.
  auto dead = RunGraph(b.graph(), {{"x:0", MakeScalar<float>(1)}, {"p:0", MakeScalar(true)}},
                       {"after_dead:0"});
  EXPECT_FALSE(dead.ok());
}

TEST(ControlFlowExecutor, InputsFromTwoFramesAreAnError) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  EnterFrame(b, "enter", "x", DT_FLOAT, "f", false);
  b.Binary("mixed", "AddV2", "enter", "x");
  auto out = RunGraph(b.graph(), {{"x:0", MakeScalar<float>(1)}}, {"mixed:0"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("different frames"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("mixed"), std::string::npos) << out.status();
}

TEST(ControlFlowExecutor, ExitOutsideALoopIsAnError) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Op("exit", "Exit", {"x"}, {{"T", T(DT_FLOAT)}});
  auto out = RunGraph(b.graph(), {{"x:0", MakeScalar<float>(1)}}, {"exit:0"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("not inside a loop"), std::string::npos) << out.status();
}

TEST(ControlFlowExecutor, CycleWithoutNextIterationIsStillAnError) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Binary("a", "AddV2", "x", "b");
  b.Binary("b", "AddV2", "x", "a");
  auto out = RunGraph(b.graph(), {{"x:0", MakeScalar<float>(1)}}, {"a:0"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("cycle"), std::string::npos) << out.status();
}

// A conditional whose branches run on another device: the dead signal of the untaken branch
// crosses the partition through _Send/_Recv.
TEST(ControlFlowExecutor, BranchesOnAnotherDevice) {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT);
  b.Placeholder("p", DT_BOOL);
  b.Op("sw", "Switch", {"x", "p"}, {{"T", T(DT_FLOAT)}}, "/device:CPU:0");
  b.Op("neg", "Neg", {"sw:0"}, {{"T", T(DT_FLOAT)}}, "/device:CPU:1");
  b.Op("sq", "Square", {"sw:1"}, {{"T", T(DT_FLOAT)}}, "/device:CPU:1");
  b.Op("sq2", "Square", {"sq"}, {{"T", T(DT_FLOAT)}}, "/device:CPU:0");
  b.Op("m", "Merge", {"neg", "sq2"}, {{"T", T(DT_FLOAT)}, {"N", AttrValue::Int(2)}},
       "/device:CPU:0");
  for (bool pred : {false, true}) {
    auto out = RunGraph(b.graph(), {{"x:0", MakeScalar<float>(3)}, {"p:0", MakeScalar(pred)}},
                        {"m:0"}, &TestRuntimeWith(2, 2));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(Values<float>((*out)[0])[0], pred ? 81.0f : -3.0f);
  }
}

}  // namespace
}  // namespace cfx

namespace cfx {
namespace {

// The body of a while loop split across two devices: the partitions meet through _Send/_Recv
// inside the loop frame, driven by a control loop in each partition (EuroSys 2018 §4.4).
GraphDef SplitLoop(int64_t parallel, bool nested) {
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Placeholder("x", DT_FLOAT);
  b.Const("s", MakeScalar<float>(0.5f));
  if (!nested) {
    AddCountingLoop(b, "loop", "f", "x", "n", parallel, "s");
  } else {
    // An outer loop of two iterations, each running the inner loop n times.
    b.Const("two", MakeScalar<int32_t>(2));
    AddCountedLoop(
        b, {"outer/", "outer", parallel, ""}, "two", {{"x", "x", DT_FLOAT}},
        [&](const std::string& i, const std::vector<std::string>& v) {
          EnterFrame(b, "outer/enter_inner_n", "n", DT_INT32, "outer", true, parallel);
          EnterFrame(b, "outer/enter_s", "s", DT_FLOAT, "outer", true, parallel);
          return std::vector<std::string>{AddCountingLoop(
              b, "loop", "inner", v[0], "outer/enter_inner_n", parallel, "outer/enter_s", i)};
        });
  }
  GraphDef g = b.graph();
  // The loop's arithmetic on x runs on CPU:1, everything else on CPU:0.
  for (NodeDef& n : g.node) {
    const bool on_one = n.name == "loop/scaled" || n.name == "loop/mul" || n.name == "loop/two";
    n.device = on_one ? "/device:CPU:1" : "/device:CPU:0";
  }
  return g;
}

TEST(ControlFlowExecutor, LoopBodySplitAcrossDevices) {
  for (bool nested : {false, true}) {
    for (int64_t parallel : {1, 10}) {
      SCOPED_TRACE(::testing::Message() << "nested " << nested << ", parallel " << parallel);
      GraphDef g = SplitLoop(parallel, nested);
      auto session = Session::Create(&TestRuntimeWith(2, 2), g);
      ASSERT_TRUE(session.ok()) << session.status();
      const std::string fetch = nested ? "outer/exit_x:0" : "loop/exit_x:0";
      for (int n : {0, 3, 50}) {
        std::vector<Tensor> out;
        RunMetadata meta;
        Status s = (*session)->Run(RunOptions(),
                                   {{"n:0", MakeScalar<int32_t>(n)}, {"x:0", MakeScalar<float>(2)}},
                                   {fetch}, {}, &out, &meta);
        ASSERT_TRUE(s.ok()) << s;
        float expected = CountingLoopReference(2, n, 0.5f);
        if (nested) expected = CountingLoopReference(expected, n, 0.5f);
        EXPECT_FLOAT_EQ(Values<float>(out[0])[0], expected) << "n = " << n;
        // Both partitions hold a piece of the loop: a control loop and _Recv nodes.
        ASSERT_EQ(meta.partition_graphs.size(), 2u);
        for (const auto& [device, part] : meta.partition_graphs) {
          int control_loop_merges = 0;
          for (const NodeDef& node : part.node)
            control_loop_merges += node.op == "Merge" && node.name.rfind("_cloop/", 0) == 0;
          EXPECT_EQ(control_loop_merges, nested ? 2 : 1) << device;
        }
      }
    }
  }
}

}  // namespace
}  // namespace cfx
