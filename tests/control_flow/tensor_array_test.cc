// TensorArrayV3 and its operations, run through Sessions: each op's results, shape inference,
// every error (reads of cleared or unwritten indices, bounds, repeated writes, shapes, dtypes,
// closed arrays), the per-step lifetime, arrays used from several executors of one step and from
// concurrent loop iterations, and the gradients of read/write, gather/scatter and concat/split
// against finite differences.
#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "../nn/nn_test_util.h"
#include "conflux/cc/client_session.h"
#include "conflux/cc/gradient_checker.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/config.h"
#include "control_flow_builders.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "loop_graph.h"

namespace cfx {
namespace {

using test::Type;

using test::InferShapes;
using test::MakeNode;
using test::MakeScalar;
using test::MakeTensor;
using test::MakeVector;
using test::TestRuntime;
using test::Values;
using TA = ops::TensorArrayV3Attrs;

Tensor Floats(const std::vector<float>& v) { return MakeVector<float>(v); }
Tensor Floats(const std::vector<float>& v, const TensorShape& shape) {
  return MakeTensor<float>(shape, v);
}
Tensor Doubles(const std::vector<double>& v, const TensorShape& shape) {
  return MakeTensor<double>(shape, v);
}

using test::RunStep;

// The step failed with InvalidArgument and a message holding every one of `parts`.
void ExpectInvalid(const StatusOr<std::vector<Tensor>>& result,
                   const std::vector<std::string>& parts) {
  ASSERT_FALSE(result.ok()) << "the step succeeded";
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument) << result.status();
  for (const std::string& p : parts)
    EXPECT_NE(result.status().message().find(p), std::string::npos)
        << "'" << p << "' not in: " << result.status();
}

// An array of 3 float elements of shape [2] holding {0, 0}, {1, 10}, {2, 20}; the flow after
// the writes.
struct Filled {
  ops::TensorArrayV3Outputs array;
  Output flow;
};
Filled FillThree(const Scope& root, const TA& attrs = TA()) {
  Filled f{ops::TensorArrayV3(root.WithOpName("ta"), 3, DT_FLOAT, attrs), Output()};
  f.flow = f.array.flow;
  for (int i = 0; i < 3; ++i)
    f.flow = ops::TensorArrayWriteV3(root, f.array.handle, i, Floats({1.f * i, 10.f * i}), f.flow);
  return f;
}

TEST(TensorArray, WritesThenReadsEachElement) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root);
  Output r2 = ops::TensorArrayReadV3(root, f.array.handle, 2, f.flow, DT_FLOAT);
  Output r0 = ops::TensorArrayReadV3(root, f.array.handle, 0, f.flow, DT_FLOAT);
  Output size = ops::TensorArraySizeV3(root, f.array.handle, f.flow);
  auto out = RunStep(root, {r0, r2, size, f.flow});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{0, 0}));
  EXPECT_EQ(Values<float>((*out)[1]), (std::vector<float>{2, 20}));
  EXPECT_EQ(Values<int32_t>((*out)[2]), std::vector<int32_t>{3});
  EXPECT_EQ((*out)[3].shape(), TensorShape());  // the flow: a float scalar 0
  EXPECT_EQ(Values<float>((*out)[3]), std::vector<float>{0});
}

TEST(TensorArray, ReadOfUnwrittenIndexGivesZerosWhenTheElementShapeIsKnown) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  // From the attr.
  auto a = ops::TensorArrayV3(root, 2, DT_FLOAT, TA().ElementShape(PartialTensorShape({2, 2})));
  Output ra = ops::TensorArrayReadV3(root, a.handle, 1, a.flow, DT_FLOAT);
  // From an earlier write (identical_element_shapes).
  auto b = ops::TensorArrayV3(root, 2, DT_FLOAT, TA().IdenticalElementShapes(true));
  Output wb = ops::TensorArrayWriteV3(root, b.handle, 0, Floats({1, 2, 3}), b.flow);
  Output rb = ops::TensorArrayReadV3(root, b.handle, 1, wb, DT_FLOAT);
  auto out = RunStep(root, {ra, rb});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({2, 2}));
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(Values<float>((*out)[1]), (std::vector<float>{0, 0, 0}));
}

TEST(TensorArray, ReadOfUnwrittenIndexWithUnknownElementShapeIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root.WithOpName("ta"), 2, DT_FLOAT,
                              TA().ElementShape(PartialTensorShape({-1, 2})));
  Output w = ops::TensorArrayWriteV3(root, a.handle, 0, Floats({1, 2}, {1, 2}), a.flow);
  Output r = ops::TensorArrayReadV3(root.WithOpName("read"), a.handle, 1, w, DT_FLOAT);
  ExpectInvalid(RunStep(root, {r}),
                {"node read", "TensorArray ta:", "index 1", "never written", "[?,2]"});
}

TEST(TensorArray, SecondReadOfAClearedIndexIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root);
  Output first = ops::TensorArrayReadV3(root, f.array.handle, 1, f.flow, DT_FLOAT);
  Output second =
      ops::TensorArrayReadV3(root.WithOpName("second").WithControlDependencies({first.op()}),
                             f.array.handle, 1, f.flow, DT_FLOAT);
  ExpectInvalid(RunStep(root, {second}),
                {"node second", "TensorArray ta:", "index 1 twice", "clear_after_read"});
}

TEST(TensorArray, ReadsRepeatWithoutClearAfterRead) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root, TA().ClearAfterRead(false));
  Output first = ops::TensorArrayReadV3(root, f.array.handle, 1, f.flow, DT_FLOAT);
  Output second = ops::TensorArrayReadV3(root.WithControlDependencies({first.op()}), f.array.handle,
                                         1, f.flow, DT_FLOAT);
  auto out = RunStep(root, {first, second});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{1, 10}));
  EXPECT_EQ(Values<float>((*out)[1]), (std::vector<float>{1, 10}));
}

TEST(TensorArray, ReadOutOfBoundsIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root);
  Output r = ops::TensorArrayReadV3(root.WithOpName("read"), f.array.handle, 3, f.flow, DT_FLOAT);
  ExpectInvalid(RunStep(root, {r}), {"node read", "TensorArray ta:", "index 3", "size is 3"});
}

TEST(TensorArray, WriteOutOfBoundsOfAFixedSizeArrayIsAnError) {
  for (int index : {2, -1}) {
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root.WithOpName("ta"), 2, DT_FLOAT);
    Output w =
        ops::TensorArrayWriteV3(root.WithOpName("write"), a.handle, index, Floats({1}), a.flow);
    ExpectInvalid(RunStep(root, {w}), {"node write", "TensorArray ta:",
                                       "cannot write index " + std::to_string(index), "size is 2"});
  }
}

TEST(TensorArray, DynamicSizeGrowsOnWrite) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 0, DT_FLOAT, TA().DynamicSize(true));
  Output w = ops::TensorArrayWriteV3(root, a.handle, 3, Floats({7}), a.flow);
  Output size = ops::TensorArraySizeV3(root, a.handle, w);
  Output r =
      ops::TensorArrayReadV3(root.WithControlDependencies({size.op()}), a.handle, 3, w, DT_FLOAT);
  auto out = RunStep(root, {size, r});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<int32_t>((*out)[0]), std::vector<int32_t>{4});
  EXPECT_EQ(Values<float>((*out)[1]), std::vector<float>{7});
}

TEST(TensorArray, SecondWriteToAnIndexIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root);
  Output w =
      ops::TensorArrayWriteV3(root.WithOpName("again"), f.array.handle, 1, Floats({5, 5}), f.flow);
  ExpectInvalid(RunStep(root, {w}), {"node again", "TensorArray ta:", "index 1 twice"});
}

TEST(TensorArray, WriteAfterReadIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root.WithOpName("ta"), 1, DT_FLOAT,
                              TA().ElementShape(PartialTensorShape({1})).ClearAfterRead(false));
  Output r = ops::TensorArrayReadV3(root, a.handle, 0, a.flow, DT_FLOAT);  // zeros
  Output w = ops::TensorArrayWriteV3(root.WithControlDependencies({r.op()}), a.handle, 0,
                                     Floats({1}), a.flow);
  ExpectInvalid(RunStep(root, {w}), {"TensorArray ta:", "index 0", "already been read"});
}

TEST(TensorArray, WritesMustFitTheElementShape) {
  {
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root.WithOpName("ta"), 2, DT_FLOAT,
                                TA().ElementShape(PartialTensorShape({2})));
    Output w = ops::TensorArrayWriteV3(root, a.handle, 1, Floats({1, 2, 3}), a.flow);
    ExpectInvalid(RunStep(root, {w}), {"TensorArray ta:", "shape [3]", "index 1", "[2]"});
  }
  {  // identical_element_shapes: the first write fixes the shape.
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a =
        ops::TensorArrayV3(root.WithOpName("ta"), 2, DT_FLOAT, TA().IdenticalElementShapes(true));
    Output w0 = ops::TensorArrayWriteV3(root, a.handle, 0, Floats({1, 2}), a.flow);
    Output w1 = ops::TensorArrayWriteV3(root, a.handle, 1, Floats({1, 2, 3}), w0);
    ExpectInvalid(RunStep(root, {w1}), {"TensorArray ta:", "shape [3]", "index 1", "[2]"});
  }
}

TEST(TensorArray, WriteOfAnotherDtypeIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root.WithOpName("ta"), 2, DT_FLOAT);
  Output w = ops::TensorArrayWriteV3(root, a.handle, 0, MakeVector<int32_t>({1}), a.flow);
  ExpectInvalid(RunStep(root, {w}), {"TensorArray ta:", "holds float", "int32", "index 0"});
}

TEST(TensorArray, NegativeSizeIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root.WithOpName("ta"), -1, DT_FLOAT);
  ExpectInvalid(RunStep(root, {a.flow}), {"node ta", "non-negative", "-1"});
}

// The size is an input value: an array of 2^31 - 1 elements costs only what is written to it
// (its elements' bookkeeping up front would be some 150 GB).
TEST(TensorArray, SizeIsNotAnAllocation) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root.WithOpName("ta"), 2147483647, DT_FLOAT);
  Output w = ops::TensorArrayWriteV3(root, a.handle, 2147483646, Floats({1, 2}), a.flow);
  Output r = ops::TensorArrayReadV3(root, a.handle, 2147483646, w, DT_FLOAT);
  Output size = ops::TensorArraySizeV3(root, a.handle, w);
  auto out = RunStep(root, {r, size});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(Values<int32_t>((*out)[1]), std::vector<int32_t>{2147483647});
}

TEST(TensorArray, ScatterThenGather) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 3, DT_FLOAT, TA().ClearAfterRead(false));
  Output s = ops::TensorArrayScatterV3(root, a.handle, {2, 0, 1},
                                       Floats({1, 2, 3, 4, 5, 6}, {3, 2}), a.flow);
  Output all = ops::TensorArrayGatherV3(root, a.handle, {0, 1, 2}, s, DT_FLOAT);
  Output repeated = ops::TensorArrayGatherV3(root.WithControlDependencies({all.op()}), a.handle,
                                             {2, 2}, s, DT_FLOAT);
  Output r = ops::TensorArrayReadV3(root.WithControlDependencies({repeated.op()}), a.handle, 0, s,
                                    DT_FLOAT);
  auto out = RunStep(root, {all, repeated, r});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({3, 2}));
  EXPECT_EQ(Values<float>((*out)[0]), (std::vector<float>{3, 4, 5, 6, 1, 2}));
  EXPECT_EQ(Values<float>((*out)[1]), (std::vector<float>{1, 2, 1, 2}));
  EXPECT_EQ(Values<float>((*out)[2]), (std::vector<float>{3, 4}));
}

TEST(TensorArray, ScatterNeedsOneRowPerIndex) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 3, DT_FLOAT);
  // Shapes unknown to the graph, so that the kernel sees the mismatch.
  Output value = ops::Placeholder(root, DT_FLOAT);
  Output indices = ops::Placeholder(root, DT_INT32);
  Output s =
      ops::TensorArrayScatterV3(root.WithOpName("scatter"), a.handle, indices, value, a.flow);
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  Status st = session.Run(
      {{value, Floats({1, 2, 3, 4}, {2, 2})}, {indices, MakeVector<int32_t>({0})}}, {s}, &out);
  ExpectInvalid(StatusOr<std::vector<Tensor>>(st), {"node scatter", "2 rows", "1 indices"});
}

TEST(TensorArray, GatherOfElementsOfDifferentShapesIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 2, DT_FLOAT);
  Output w0 = ops::TensorArrayWriteV3(root, a.handle, 0, Floats({1}), a.flow);
  Output w1 = ops::TensorArrayWriteV3(root, a.handle, 1, Floats({1, 2}), w0);
  Output g = ops::TensorArrayGatherV3(root.WithOpName("gather"), a.handle, {0, 1}, w1, DT_FLOAT);
  ExpectInvalid(RunStep(root, {g}), {"node gather", "different shapes", "[1]", "[2]"});
}

TEST(TensorArray, GatherOfNoElementsWithAKnownElementShapeIsEmpty) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  // The element shape from the array, and from the op's attr.
  auto a = ops::TensorArrayV3(root, 0, DT_FLOAT, TA().ElementShape(PartialTensorShape({2, 3})));
  Output g1 = ops::TensorArrayGatherV3(root, a.handle, std::vector<int32_t>{}, a.flow, DT_FLOAT);
  auto b = ops::TensorArrayV3(root, 2, DT_FLOAT);
  Output g2 = ops::TensorArrayGatherV3(
      root, b.handle, std::vector<int32_t>{}, b.flow, DT_FLOAT,
      ops::TensorArrayGatherV3Attrs().ElementShape(PartialTensorShape({4})));
  auto out = RunStep(root, {g1, g2});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({0, 2, 3}));
  EXPECT_EQ((*out)[1].shape(), TensorShape({0, 4}));
}

TEST(TensorArray, GatherOfNoElementsWithUnknownElementShapeIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 0, DT_FLOAT);
  Output g = ops::TensorArrayGatherV3(root.WithOpName("gather"), a.handle, std::vector<int32_t>{},
                                      a.flow, DT_FLOAT);
  ExpectInvalid(RunStep(root, {g}), {"node gather", "no elements", "fully defined"});
}

TEST(TensorArray, SplitThenConcatAndRead) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 3, DT_FLOAT, TA().ClearAfterRead(false));
  Tensor value = Floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2});
  Output s =
      ops::TensorArraySplitV3(root, a.handle, value, {int64_t{2}, int64_t{0}, int64_t{3}}, a.flow);
  auto concat = ops::TensorArrayConcatV3(root, a.handle, s, DT_FLOAT);
  Output r2 = ops::TensorArrayReadV3(root.WithControlDependencies({concat.operation}), a.handle, 2,
                                     s, DT_FLOAT);
  Output r1 = ops::TensorArrayReadV3(root.WithControlDependencies({concat.operation}), a.handle, 1,
                                     s, DT_FLOAT);
  auto out = RunStep(root, {concat.value, concat.lengths, r2, r1});
  ASSERT_TRUE(out.ok()) << out.status();
  test::ExpectTensorEqual(value, (*out)[0]);
  EXPECT_EQ(Values<int64_t>((*out)[1]), (std::vector<int64_t>{2, 0, 3}));
  test::ExpectTensorEqual(Floats({4, 5, 6, 7, 8, 9}, {3, 2}), (*out)[2]);
  EXPECT_EQ((*out)[3].shape(), TensorShape({0, 2}));
}

TEST(TensorArray, ConcatOfAnEmptyArrayWithAKnownElementShapeIsEmpty) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 0, DT_FLOAT, TA().ElementShape(PartialTensorShape({-1, 3})));
  auto from_array = ops::TensorArrayConcatV3(root, a.handle, a.flow, DT_FLOAT);
  auto b = ops::TensorArrayV3(root, 0, DT_FLOAT);
  auto from_attr = ops::TensorArrayConcatV3(
      root, b.handle, b.flow, DT_FLOAT,
      ops::TensorArrayConcatV3Attrs().ElementShapeExcept0(PartialTensorShape({2})));
  auto out = RunStep(root, {from_array.value, from_array.lengths, from_attr.value});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({0, 3}));
  EXPECT_EQ((*out)[1].shape(), TensorShape({0}));
  EXPECT_EQ((*out)[2].shape(), TensorShape({0, 2}));
}

TEST(TensorArray, ConcatErrors) {
  {  // Nothing to go on for an empty result.
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root, 0, DT_FLOAT);
    auto c = ops::TensorArrayConcatV3(root.WithOpName("concat"), a.handle, a.flow, DT_FLOAT);
    ExpectInvalid(RunStep(root, {c.value}), {"node concat", "no elements", "fully defined"});
  }
  {  // Elements that differ past dimension 0.
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root, 2, DT_FLOAT);
    Output w0 = ops::TensorArrayWriteV3(root, a.handle, 0, Floats({1, 2}, {1, 2}), a.flow);
    Output w1 = ops::TensorArrayWriteV3(root, a.handle, 1, Floats({1, 2, 3}, {1, 3}), w0);
    auto c = ops::TensorArrayConcatV3(root.WithOpName("concat"), a.handle, w1, DT_FLOAT);
    ExpectInvalid(RunStep(root, {c.value}), {"node concat", "[1,2]", "element 1", "[1,3]"});
  }
  {  // Scalars have no dimension 0.
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root, 1, DT_FLOAT);
    Output w = ops::TensorArrayWriteV3(root, a.handle, 0, 1.f, a.flow);
    auto c = ops::TensorArrayConcatV3(root.WithOpName("concat"), a.handle, w, DT_FLOAT);
    ExpectInvalid(RunStep(root, {c.value}), {"node concat", "element 0 is a scalar"});
  }
}

TEST(TensorArray, SplitErrors) {
  Tensor value = Floats({0, 1, 2, 3, 4}, {5});
  {  // Lengths that do not add up to the rows.
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root, 2, DT_FLOAT);
    Output s = ops::TensorArraySplitV3(root.WithOpName("split"), a.handle, value,
                                       {int64_t{2}, int64_t{2}}, a.flow);
    ExpectInvalid(RunStep(root, {s}), {"node split", "sum to 4", "5 rows"});
  }
  {  // More pieces than a fixed-size array holds.
    Scope root = Scope::NewRootScope(&TestRuntime());
    auto a = ops::TensorArrayV3(root.WithOpName("ta"), 2, DT_FLOAT);
    Output s = ops::TensorArraySplitV3(root.WithOpName("split"), a.handle, value,
                                       {int64_t{1}, int64_t{1}, int64_t{3}}, a.flow);
    ExpectInvalid(RunStep(root, {s}), {"node split", "TensorArray ta:", "size 2", "3 elements"});
  }
}

TEST(TensorArray, OperationsAfterCloseAreErrors) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root);
  Operation close =
      ops::TensorArrayCloseV3(root.WithControlDependencies({f.flow.op()}), f.array.handle);
  Output size = ops::TensorArraySizeV3(root.WithOpName("size").WithControlDependencies({close}),
                                       f.array.handle, f.flow);
  ExpectInvalid(RunStep(root, {size}), {"node size", "TensorArray ta:", "already been closed"});
}

TEST(TensorArray, EachStepStartsWithNoArrays) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Filled f = FillThree(root);
  Output handle = ops::Placeholder(root, DT_RESOURCE);
  Output flow = ops::Placeholder(root, DT_FLOAT);
  Output read_fed = ops::TensorArrayReadV3(root, handle, 0, flow, DT_FLOAT);
  ClientSession session(root, &TestRuntime());
  // The same writes run again in a later step: a new array, so nothing is written twice.
  std::vector<Tensor> first, second;
  ASSERT_OK(session.Run({}, {f.array.handle, f.flow}, &first));
  ASSERT_OK(session.Run({}, {f.array.handle, f.flow}, &second));
  // The array of the first step is gone with its step.
  std::vector<Tensor> out;
  Status st = session.Run({{handle, first[0]}, {flow, first[1]}}, {read_fed}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kNotFound) << st;
  EXPECT_NE(st.message().find("TensorArray 'ta:"), std::string::npos) << st;
}

// Runtimes with two CPU devices.
Runtime& TwoCpus() {
  static Runtime* runtime = [] {
    Config config = Config::Default();
    config.plugin_paths.insert(config.plugin_paths.begin(), test::BuildPluginDir());
    config.devices["CPU"].count = 2;
    auto rt = Runtime::Create(config);
    EXPECT_TRUE(rt.ok()) << rt.status();
    if (!rt.ok()) std::abort();
    return std::move(rt).value().release();
  }();
  return *runtime;
}

TEST(TensorArray, ArraysOfSeveralExecutorsOfOneStep) {
  Scope root = Scope::NewRootScope(&TwoCpus());
  Scope cpu0 = root.WithDevice("/device:CPU:0"), cpu1 = root.WithDevice("/device:CPU:1");
  auto a = ops::TensorArrayV3(cpu0, 2, DT_FLOAT);
  auto b = ops::TensorArrayV3(cpu1, 2, DT_FLOAT);
  // Each array gets values computed on the other device.
  Output on1 = ops::Neg(cpu1, Floats({1, 2}));
  Output on0 = ops::Neg(cpu0, Floats({3, 4}));
  Output fa = ops::TensorArrayWriteV3(root, a.handle, 0, on1, a.flow);
  fa = ops::TensorArrayWriteV3(root, a.handle, 1, on0, fa);
  Output fb =
      ops::TensorArrayScatterV3(root, b.handle, {1, 0}, ops::Pack(cpu0, {on0, on1}), b.flow);
  Output ga = ops::TensorArrayGatherV3(root, a.handle, {0, 1}, fa, DT_FLOAT);
  Output gb = ops::TensorArrayGatherV3(root, b.handle, {0, 1}, fb, DT_FLOAT);
  ClientSession session(root, &TwoCpus());
  for (int step = 0; step < 3; ++step) {
    std::vector<Tensor> out;
    RunMetadata meta;
    ASSERT_OK(session.Run(RunOptions(), {}, {ga, gb}, {}, &out, &meta));
    EXPECT_EQ(meta.partition_graphs.size(), 2u);  // one executor per device
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{-1, -2, -3, -4}));
    EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{-1, -2, -3, -4}));
  }
}

TEST(TensorArray, ConcurrentWritersOfOneArray) {
  // 64 independent writes, free to run at once on the inter-op threads; then one gather.
  constexpr int kN = 64;
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, kN, DT_FLOAT);
  std::vector<Operation> writes;
  std::vector<int32_t> indices;
  for (int i = 0; i < kN; ++i) {
    writes.push_back(
        ops::TensorArrayWriteV3(root, a.handle, i, Floats({1.f * i, -1.f * i}), a.flow).op());
    indices.push_back(kN - 1 - i);
  }
  Output g = ops::TensorArrayGatherV3(root.WithControlDependencies(writes), a.handle, indices,
                                      a.flow, DT_FLOAT);
  for (int step = 0; step < 5; ++step) {
    auto out = RunStep(root, {g});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> v = Values<float>((*out)[0]);
    ASSERT_EQ(v.size(), 2u * kN);
    for (int i = 0; i < kN; ++i) {
      EXPECT_EQ(v[2 * i], kN - 1 - i);
      EXPECT_EQ(v[2 * i + 1], -(kN - 1 - i));
    }
  }
}

// value_i = 2 * i as a float scalar, in the loop body.
std::string TwiceI(test::GraphBuilder& b, const std::string& i) {
  b.Op("value_i", "Cast", {i}, {{"SrcT", Type(DT_INT32)}, {"DstT", Type(DT_FLOAT)}});
  b.Const("two", MakeScalar<float>(2)).input.push_back("^" + i);
  b.Binary("value", "Mul", "value_i", "two");
  return "value";
}

StatusOr<std::vector<Tensor>> RunGraph(const GraphDef& g, const std::vector<std::string>& fetches,
                                       int n) {
  CFX_ASSIGN_OR_RETURN(auto session, Session::Create(&TestRuntime(), g));
  std::vector<Tensor> out;
  CFX_RETURN_IF_ERROR(session->Run({{"n:0", MakeScalar<int32_t>(n)}}, fetches, {}, &out));
  return out;
}

TEST(TensorArrayInLoop, EachIterationWritesItsElement) {
  // ta = TensorArray(n); for i < n: flow = ta.write(i, 2 * i); gather(0..n-1). Iterations may
  // run in parallel (parallel_iterations = 10): they write one array at once.
  constexpr int kN = 25;
  test::GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Op("ta", "TensorArrayV3", {"n"},
       {{"dtype", Type(DT_FLOAT)}, {"element_shape", AttrValue::Shape(PartialTensorShape({}))}});
  test::EnterLoop(b, "enter_ta", "ta", DT_RESOURCE, true);
  test::AddLoop(b, "ta:1", DT_FLOAT, [&](const std::string& i, const std::string& flow) {
    b.Op("write", "TensorArrayWriteV3", {"enter_ta", i, TwiceI(b, i), flow},
         {{"T", Type(DT_FLOAT)}});
    return std::string("write");
  });
  std::vector<int32_t> indices(kN);
  for (int i = 0; i < kN; ++i) indices[i] = i;
  b.Const("indices", MakeVector<int32_t>(indices));
  b.Op("gather", "TensorArrayGatherV3", {"ta", "indices", "exit_c"}, {{"dtype", Type(DT_FLOAT)}});
  auto out = RunGraph(b.graph(), {"gather:0"}, kN);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected(kN);
  for (int i = 0; i < kN; ++i) expected[i] = 2.f * i;
  EXPECT_EQ(Values<float>((*out)[0]), expected);
}

TEST(TensorArrayInLoop, AnArrayCreatedInTheBodyIsNewEachIteration) {
  // for i < n: ta = TensorArray(1); ta.write(0, 2 * i); sum += ta.read(0). One array shared by
  // the iterations would fail the second write (or read) of index 0.
  constexpr int kN = 12;
  test::GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Const("sum0", MakeScalar<float>(0));
  test::AddLoop(b, "sum0", DT_FLOAT, [&](const std::string& i, const std::string& sum) {
    b.Const("size", MakeScalar<int32_t>(1)).input.push_back("^" + i);
    b.Const("zero", MakeScalar<int32_t>(0)).input.push_back("^" + i);
    b.Op("ta", "TensorArrayV3", {"size"}, {{"dtype", Type(DT_FLOAT)}});
    b.Op("write", "TensorArrayWriteV3", {"ta", "zero", TwiceI(b, i), "ta:1"},
         {{"T", Type(DT_FLOAT)}});
    b.Op("read", "TensorArrayReadV3", {"ta", "zero", "write"}, {{"dtype", Type(DT_FLOAT)}});
    b.Binary("sum", "AddV2", sum, "read");
    return std::string("sum");
  });
  auto out = RunGraph(b.graph(), {"exit_c:0"}, kN);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values<float>((*out)[0]), std::vector<float>{1.f * kN * (kN - 1)});
}

TEST(TensorArrayShapes, OfEachOp) {
  auto infer = [](const std::string& op, std::vector<PartialTensorShape> inputs,
                  std::initializer_list<std::pair<const std::string, AttrValue>> attrs) {
    NodeDef node = MakeNode(op, static_cast<int>(inputs.size()), attrs);
    return InferShapes(node, std::move(inputs));
  };
  const PartialTensorShape scalar({}), unknown;
  const AttrValue f = Type(DT_FLOAT);
  auto created = infer("TensorArrayV3", {scalar}, {{"dtype", f}});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(*created, (std::vector<PartialTensorShape>{scalar, scalar}));
  auto read = infer("TensorArrayReadV3", {scalar, scalar, scalar}, {{"dtype", f}});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE((*read)[0].unknown_rank());
  auto gather =
      infer("TensorArrayGatherV3", {scalar, PartialTensorShape({3}), scalar},
            {{"dtype", f}, {"element_shape", AttrValue::Shape(PartialTensorShape({-1, 2}))}});
  ASSERT_TRUE(gather.ok()) << gather.status();
  EXPECT_EQ((*gather)[0], PartialTensorShape({3, -1, 2}));
  auto concat =
      infer("TensorArrayConcatV3", {scalar, scalar},
            {{"dtype", f}, {"element_shape_except0", AttrValue::Shape(PartialTensorShape({2}))}});
  ASSERT_TRUE(concat.ok()) << concat.status();
  EXPECT_EQ(*concat, (std::vector<PartialTensorShape>{PartialTensorShape({-1, 2}),
                                                      PartialTensorShape({-1})}));
  for (const auto& [op, inputs] :
       std::vector<std::pair<std::string, std::vector<PartialTensorShape>>>{
           {"TensorArrayWriteV3", {scalar, scalar, PartialTensorShape({2}), scalar}},
           {"TensorArrayScatterV3",
            {scalar, PartialTensorShape({3}), PartialTensorShape({3, 2}), scalar}},
           {"TensorArraySplitV3",
            {scalar, PartialTensorShape({5, 2}), PartialTensorShape({3}), scalar}},
           {"TensorArraySizeV3", {scalar, scalar}}}) {
    auto out = infer(op, inputs, {{"T", f}});
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    EXPECT_EQ(*out, std::vector<PartialTensorShape>{scalar}) << op;
  }
  auto grad = infer("TensorArrayGradV3", {scalar, scalar}, {{"source", AttrValue::String("g")}});
  ASSERT_TRUE(grad.ok()) << grad.status();
  EXPECT_EQ(*grad, (std::vector<PartialTensorShape>{scalar, scalar}));
}

TEST(TensorArrayShapes, RejectBadRanks) {
  const PartialTensorShape scalar({});
  const AttrValue f = Type(DT_FLOAT);
  auto check = [](const StatusOr<std::vector<PartialTensorShape>>& r, const std::string& part) {
    ASSERT_FALSE(r.ok()) << "expected an error mentioning " << part;
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status();
  };
  check(InferShapes(MakeNode("TensorArrayV3", 1, {{"dtype", f}}), {PartialTensorShape({2})}),
        "rank");
  check(InferShapes(MakeNode("TensorArrayReadV3", 3, {{"dtype", f}}),
                    {scalar, PartialTensorShape({2}), scalar}),
        "rank");
  check(InferShapes(MakeNode("TensorArrayGatherV3", 3, {{"dtype", f}}),
                    {scalar, PartialTensorShape({2, 2}), scalar}),
        "rank");
  check(InferShapes(MakeNode("TensorArrayScatterV3", 4, {{"T", f}}),
                    {scalar, PartialTensorShape({3}), PartialTensorShape({2, 5}), scalar}),
        "2 rows");
  check(InferShapes(MakeNode("TensorArraySplitV3", 4, {{"T", f}}),
                    {scalar, PartialTensorShape({5}), PartialTensorShape({}), scalar}),
        "rank");
}

TEST(TensorArrayShapes, ThroughTheClientApi) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  auto a = ops::TensorArrayV3(root, 3, DT_FLOAT);
  Output g = ops::TensorArrayGatherV3(
      root, a.handle, {0, 1}, a.flow, DT_FLOAT,
      ops::TensorArrayGatherV3Attrs().ElementShape(PartialTensorShape({4})));
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root.StaticShape(a.handle), PartialTensorShape({}));
  EXPECT_EQ(root.StaticShape(g), PartialTensorShape({2, 4}));
}

// Gradients against finite differences, in double: one case per way through an array.
Tensor X23() { return Doubles({0.5, -1.2, 0.3, 2.0, -0.7, 1.1}, {2, 3}); }
Tensor X2() { return Doubles({0.9, -0.4}, {2}); }
Tensor X32() { return Doubles({0.5, -1.2, 0.3, 2.0, -0.7, 1.1}, {3, 2}); }
Tensor X52() { return Doubles({0.5, -1.2, 0.3, 2.0, -0.7, 1.1, 0.2, -0.3, 1.5, 0.8}, {5, 2}); }

using X = std::vector<Output>;
struct GradientCase {
  std::string name;
  std::vector<Tensor> inputs;
  std::function<Output(const Scope&, const X&)> build;
};
void PrintTo(const GradientCase& c, std::ostream* os) { *os << c.name; }

std::vector<GradientCase> GradientCases() {
  const std::vector<int64_t> two_three{2, 3};
  return {
      {"WritesThenReads",
       {X23(), X2()},
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 3, DT_DOUBLE);
         Output w = ops::TensorArrayWriteV3(s, a.handle, 0, x[0], a.flow);
         w = ops::TensorArrayWriteV3(s, a.handle, 2, x[1], w);
         w = ops::TensorArrayWriteV3(s, a.handle, 1, ops::Square(s, x[1]), w);  // never read
         Output r0 = ops::TensorArrayReadV3(s, a.handle, 0, w, DT_DOUBLE);
         Output r2 = ops::TensorArrayReadV3(s, a.handle, 2, w, DT_DOUBLE);
         return ops::Mul(s, ops::Sum(s, ops::Tanh(s, r0), 1), r2);
       }},
      {"TwoReadsOfOneElement",
       {X2()},  // y = x^2 from two reads: their gradients sum
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 1, DT_DOUBLE, TA().ClearAfterRead(false));
         Output w = ops::TensorArrayWriteV3(s, a.handle, 0, x[0], a.flow);
         return ops::Mul(s, ops::TensorArrayReadV3(s, a.handle, 0, w, DT_DOUBLE),
                         ops::TensorArrayReadV3(s, a.handle, 0, w, DT_DOUBLE));
       }},
      {"ScatterThenGather",
       {X32()},  // index 0's row is never gathered: zeros
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 3, DT_DOUBLE);
         Output f = ops::TensorArrayScatterV3(s, a.handle, {2, 0, 1}, x[0], a.flow);
         return ops::Square(s, ops::TensorArrayGatherV3(s, a.handle, {1, 2}, f, DT_DOUBLE));
       }},
      {"GatherOfARepeatedIndex",
       {X32()},
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 3, DT_DOUBLE, TA().ClearAfterRead(false));
         Output f = ops::TensorArrayScatterV3(s, a.handle, {0, 1, 2}, x[0], a.flow);
         Output g = ops::TensorArrayGatherV3(s, a.handle, {2, 0, 2}, f, DT_DOUBLE);
         return ops::Mul(s, g, ops::Tanh(s, g));
       }},
      {"WritesThenGather",
       {X2(), X2()},
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 2, DT_DOUBLE);
         Output w = ops::TensorArrayWriteV3(s, a.handle, 1, x[0], a.flow);
         w = ops::TensorArrayWriteV3(s, a.handle, 0, ops::Exp(s, x[1]), w);
         return ops::Square(s, ops::TensorArrayGatherV3(s, a.handle, {1, 0}, w, DT_DOUBLE));
       }},
      {"ScatterThenRead",
       {X32()},
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 3, DT_DOUBLE);
         Output f = ops::TensorArrayScatterV3(s, a.handle, {1, 2, 0}, x[0], a.flow);
         return ops::Sin(s, ops::TensorArrayReadV3(s, a.handle, 2, f, DT_DOUBLE));
       }},
      {"SplitThenConcat",
       {X52()},
       [two_three](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 2, DT_DOUBLE);
         Output f = ops::TensorArraySplitV3(s, a.handle, x[0], two_three, a.flow);
         return ops::Square(s, ops::TensorArrayConcatV3(s, a.handle, f, DT_DOUBLE).value);
       }},
      // Only element 1 is read: element 0's rows get zeros of the shape the gradient array has
      // from the forward array.
      {"SplitThenRead",
       {X52()},
       [two_three](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 2, DT_DOUBLE);
         Output f = ops::TensorArraySplitV3(s, a.handle, x[0], two_three, a.flow);
         return ops::Tanh(s, ops::TensorArrayReadV3(s, a.handle, 1, f, DT_DOUBLE));
       }},
      {"WritesThenConcat",
       {X23(), X2()},
       [](const Scope& s, const X& x) {
         auto a = ops::TensorArrayV3(s, 2, DT_DOUBLE);
         Output w = ops::TensorArrayWriteV3(s, a.handle, 0, ops::Reshape(s, x[1], {1, 2}), a.flow);
         w = ops::TensorArrayWriteV3(s, a.handle, 1, ops::Transpose(s, x[0], {1, 0}), w);
         return ops::Square(s, ops::TensorArrayConcatV3(s, a.handle, w, DT_DOUBLE).value);
       }},
  };
}

class TensorArrayGradientCheck : public ::testing::TestWithParam<GradientCase> {};

TEST_P(TensorArrayGradientCheck, MatchesFiniteDifferences) {
  const GradientCase& c = GetParam();
  Scope root = Scope::NewRootScope(&TestRuntime());
  X xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) xs.push_back(ops::Placeholder(root, DT_DOUBLE));
  Output y = c.build(root, xs);
  auto err = ComputeGradientError(root, &TestRuntime(), xs, c.inputs, {y}, 1e-5);
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_LT(*err, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(TensorArray, TensorArrayGradientCheck,
                         ::testing::ValuesIn(GradientCases()),
                         [](const auto& info) { return info.param.name; });

TEST(TensorArrayGradient, TwoReadsOfOneElementSum) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output x = ops::Placeholder(root, DT_DOUBLE);
  auto a = ops::TensorArrayV3(root, 1, DT_DOUBLE, TA().ClearAfterRead(false));
  Output w = ops::TensorArrayWriteV3(root, a.handle, 0, x, a.flow);
  Output r1 = ops::TensorArrayReadV3(root, a.handle, 0, w, DT_DOUBLE);
  Output r2 = ops::TensorArrayReadV3(root, a.handle, 0, w, DT_DOUBLE);
  // y = r1 + 3 r2 = 4 x: dy/dx = 4 only when both reads' gradients reach x.
  Output y = ops::AddV2(root, r1, ops::Mul(root, r2, 3.0));
  std::vector<Output> grads;
  ASSERT_OK(AddSymbolicGradients(root, {y}, {x}, &grads));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({{x, X2()}}, {grads[0]}, &out));
  EXPECT_EQ(Values<double>(out[0]), (std::vector<double>{4, 4}));
}

TEST(TensorArrayGradient, SizeAndCloseHaveNone) {
  for (const char* op :
       {"TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3", "TensorArrayCloseV3"})
    EXPECT_TRUE(StandardGradients().IsNoGradient(op)) << op;
}

}  // namespace
}  // namespace cfx
