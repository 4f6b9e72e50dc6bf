// Sessions over CPU:0 and OPENCL:0: a mixed graph gives the CPU-only results, with _Send/_Recv
// pairs between the partitions; an op with no OpenCL kernel pinned to OPENCL is a placement error;
// variables in OpenCL memory take gradient-descent steps in place.
#include <gtest/gtest.h>

#include <thread>

#include "conflux/session.h"
#include "graph_builder.h"
#include "opencl_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr const char* kCpu = "/device:CPU:0";
constexpr const char* kOcl = "/device:OPENCL:0";

// x [3,4] fed; w [4] const. a = x * w (OPENCL), b = relu(a - 0.5) (OPENCL), s = sum over rows of
// b (CPU), c = select(b > 0.25, b, -b) (unpinned), d = sigmoid(c) + cast(x > 0)
// (unpinned), e = reshape(d, [12]) (OPENCL), f = exp(e) (CPU).
GraphDef Mixed() {
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({3, 4}));
  b.Const("w", MakeVector<float>({0.5f, -1.0f, 2.0f, 1.5f}), kOcl);
  b.Const("half", MakeScalar(0.5f));
  b.Const("quarter", MakeScalar(0.25f), kCpu);
  b.Const("zero", MakeScalar(0.0f));
  b.Const("shape", MakeVector<int32_t>({12}));
  b.Const("axis", MakeVector<int32_t>({1}), kCpu);
  b.Binary("a", "Mul", "x", "w", DT_FLOAT, kOcl);
  b.Binary("a_minus", "Sub", "a", "half", DT_FLOAT, kOcl);
  b.Op("b", "Relu", {"a_minus"}, {{"T", F()}}, kOcl);
  b.Op("s", "Sum", {"b", "axis"}, {{"T", F()}, {"Tidx", AttrValue::Type(DT_INT32)}}, kCpu);
  b.Binary("big", "Greater", "b", "quarter", DT_FLOAT, kCpu);
  b.Op("neg_b", "Neg", {"b"}, {{"T", F()}});
  b.Op("c", "SelectV2", {"big", "b", "neg_b"}, {{"T", F()}});
  b.Op("sig", "Sigmoid", {"c"}, {{"T", F()}});
  b.Binary("pos", "Greater", "x", "zero");
  b.Op("pos_f", "Cast", {"pos"}, {{"SrcT", AttrValue::Type(DT_BOOL)}, {"DstT", F()}});
  b.Binary("d", "AddV2", "sig", "pos_f");
  b.Op("e", "Reshape", {"d", "shape"}, {{"T", F()}, {"Tshape", AttrValue::Type(DT_INT32)}}, kOcl);
  b.Op("f", "Exp", {"e"}, {{"T", F()}}, kCpu);
  return b.graph();
}

Tensor X() {
  return MakeTensor<float>(TensorShape({3, 4}),
                           {1, -2, 0.3f, 4, -0.5f, 0.75f, 2, -3, 0, 1.25f, -1, 0.1f});
}

TEST(OpenClSession, MixedGraphMatchesCpuOnly) {
  SKIP_WITHOUT_OPENCL();
  const std::vector<std::string> fetches = {"s", "c", "d", "f"};
  // The reference: the same graph without device pins on a CPU-only runtime.
  GraphDef cpu_graph = Mixed();
  for (NodeDef& n : cpu_graph.node) n.device.clear();
  auto cpu = Session::Create(&TestRuntime(), cpu_graph);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  std::vector<Tensor> expected;
  ASSERT_OK((*cpu)->Run({{"x", X()}}, fetches, {}, &expected));

  auto mixed = Session::Create(&OpenClRuntime(), Mixed());
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  RunMetadata meta;
  std::vector<Tensor> got;
  for (int step = 0; step < 3; ++step) {  // later steps reuse the executors and the constants
    got.clear();
    ASSERT_OK((*mixed)->Run(RunOptions(), {{"x", X()}}, fetches, {}, &got, &meta));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(fetches[i]);
      ExpectTensorNear(expected[i], got[i], 1e-6, 1e-6);
    }
  }
  // Two partitions, with _Send/_Recv pairs between them and the pinned nodes where pinned.
  ASSERT_EQ(meta.partition_graphs.size(), 2u);
  int sends = 0, recvs = 0;
  bool a_on_ocl = false, s_on_cpu = false;
  for (const auto& [device, g] : meta.partition_graphs) {
    for (const NodeDef& n : g.node) {
      sends += n.op == "_Send";
      recvs += n.op == "_Recv";
      if (n.name == "a") a_on_ocl = device.find("OPENCL:0") != std::string::npos;
      if (n.name == "s") s_on_cpu = device.find("CPU:0") != std::string::npos;
    }
  }
  EXPECT_TRUE(a_on_ocl);
  EXPECT_TRUE(s_on_cpu);
  EXPECT_GE(sends, 2);
  EXPECT_EQ(sends, recvs);
}

TEST(OpenClSession, ConcurrentStepsShareKernelsAndQueue) {
  SKIP_WITHOUT_OPENCL();
  GraphDef cpu_graph = Mixed();
  for (NodeDef& n : cpu_graph.node) n.device.clear();
  auto cpu = Session::Create(&TestRuntime(), cpu_graph);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto mixed = Session::Create(&OpenClRuntime(), Mixed());
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  // Different feeds per thread, so that a step reading another step's buffers would show.
  auto feed = [](int k) {
    Tensor x = X();
    for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] += 0.25f * k;
    return x;
  };
  constexpr int kThreads = 4, kSteps = 8;
  std::vector<std::vector<Tensor>> expected(kThreads);
  for (int k = 0; k < kThreads; ++k)
    ASSERT_OK((*cpu)->Run({{"x", feed(k)}}, {"d", "f"}, {}, &expected[k]));
  std::vector<std::thread> threads;
  std::vector<Status> failures(kThreads);
  std::vector<std::vector<Tensor>> last(kThreads);
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      for (int step = 0; step < kSteps; ++step) {
        std::vector<Tensor> out;
        Status s = (*mixed)->Run({{"x", feed(k)}}, {"d", "f"}, {}, &out);
        if (!s.ok()) {
          failures[k] = s;
          return;
        }
        last[k] = out;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int k = 0; k < kThreads; ++k) {
    ASSERT_OK(failures[k]);
    ASSERT_EQ(last[k].size(), 2u);
    ExpectTensorNear(expected[k][0], last[k][0], 1e-6, 1e-6);
    ExpectTensorNear(expected[k][1], last[k][1], 1e-6, 1e-6);
  }
}

TEST(OpenClSession, OpWithoutOpenClKernelPinnedThereIsAPlacementError) {
  SKIP_WITHOUT_OPENCL();
  GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({2, 2}));
  b.Const("axis", MakeScalar<int32_t>(0));
  b.Op("p", "Prod", {"x", "axis"}, {{"T", F()}, {"Tidx", AttrValue::Type(DT_INT32)}}, kOcl);
  auto session = Session::Create(&OpenClRuntime(), b.graph());
  Status s = session.ok() ? Status() : session.status();
  std::vector<Tensor> out;
  if (session.ok())
    s = (*session)->Run({{"x", MakeTensor<float>(TensorShape({2, 2}), {1, 2, 3, 4})}}, {"p"}, {},
                        &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Prod"), std::string::npos) << s;
  EXPECT_NE(s.message().find("OPENCL"), std::string::npos) << s;
}

// The device of node `name` in the partition graphs of `meta` ("" when absent).
std::string DeviceOf(const RunMetadata& meta, const std::string& name) {
  for (const auto& [device, g] : meta.partition_graphs)
    for (const NodeDef& n : g.node)
      if (n.name == name) return device;
  return "";
}

// v = VariableV2 [2,3] (pinned to `device`); init: v = init_value; step: v -= alpha * delta;
// read: Identity(v).
GraphDef RefDescentGraph(const char* device, bool use_locking) {
  GraphBuilder b;
  b.Op("v", "VariableV2", {},
       {{"dtype", F()},
        {"shape", AttrValue::Shape(PartialTensorShape({2, 3}))},
        {"shared_name", AttrValue::String(std::string("ocl_gd_") + device)}},
       device);
  b.Placeholder("init_value", DT_FLOAT);
  b.Op("init", "Assign", {"v", "init_value"}, {{"T", F()}}, device);
  b.Placeholder("alpha", DT_FLOAT);
  b.Placeholder("delta", DT_FLOAT);
  b.Op("step", "ApplyGradientDescent", {"v", "alpha", "delta"},
       {{"T", F()}, {"use_locking", AttrValue::Bool(use_locking)}}, device);
  b.Op("read", "Identity", {"v"}, {{"T", F()}}, device);  // a reference reader: colocated
  return b.graph();
}

TEST(OpenClSession, ApplyGradientDescentUpdatesAVariableInOpenClMemory) {
  SKIP_WITHOUT_OPENCL();
  const TensorShape shape({2, 3});
  const Tensor x0 = MakeTensor<float>(shape, {1, 2, 3, -4, 0.5f, 8});
  const Tensor delta = MakeTensor<float>(shape, {0.5f, -1, 4, 2, -0.25f, 3});
  for (bool use_locking : {false, true}) {
    SCOPED_TRACE(use_locking ? "use_locking" : "no locking");
    auto cpu = Session::Create(&TestRuntime(), RefDescentGraph(kCpu, use_locking));
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    auto ocl = Session::Create(&OpenClRuntime(), RefDescentGraph(kOcl, use_locking));
    ASSERT_TRUE(ocl.ok()) << ocl.status();
    for (Session* s : {cpu->get(), ocl->get()})
      ASSERT_OK(s->Run({{"init_value", x0}}, {}, {"init"}, nullptr));
    for (int step = 1; step <= 4; ++step) {
      SCOPED_TRACE(step);
      const float alpha = 0.1f * static_cast<float>(step);
      std::vector<Tensor> expected, got;
      const std::vector<std::pair<std::string, Tensor>> feeds = {
          {"alpha", MakeScalar<float>(alpha)}, {"delta", delta}};
      ASSERT_OK((*cpu)->Run(feeds, {"step"}, {}, &expected));
      RunMetadata meta;
      ASSERT_OK((*ocl)->Run(RunOptions(), feeds, {"step"}, {}, &got, &meta));
      EXPECT_NE(DeviceOf(meta, "step").find("OPENCL:0"), std::string::npos);
      ExpectTensorNear(expected[0], got[0], 1e-6, 1e-6);  // `step` outputs the updated variable
      ASSERT_OK((*cpu)->Run({}, {"read"}, {}, &expected));
      ASSERT_OK((*ocl)->Run({}, {"read"}, {}, &got));
      ExpectTensorNear(expected[0], got[0], 1e-6, 1e-6);
    }
    // The updates accumulated: x0 - (0.1 + 0.2 + 0.3 + 0.4) * delta.
    std::vector<Tensor> got;
    ASSERT_OK((*ocl)->Run({}, {"read"}, {}, &got));
    for (int64_t i = 0; i < x0.num_elements(); ++i)
      EXPECT_NEAR(got[0].data<float>()[i], x0.data<float>()[i] - 1.0f * delta.data<float>()[i],
                  1e-5);
  }
}

// h = VarHandleOp; assign: h = value; step: h -= alpha * delta; read: ReadVariableOp(h); all on
// `device`.
GraphDef ResourceDescentGraph(const char* device) {
  GraphBuilder b;
  b.Op("h", "VarHandleOp", {},
       {{"dtype", F()},
        {"shape", AttrValue::Shape(PartialTensorShape({4}))},
        {"shared_name", AttrValue::String(std::string("ocl_rgd_") + device)}},
       device);
  b.Placeholder("value", DT_FLOAT);
  b.Op("assign", "AssignVariableOp", {"h", "value"}, {{"dtype", F()}}, device);
  b.Placeholder("alpha", DT_FLOAT);
  b.Placeholder("delta", DT_FLOAT);
  b.Op("step", "ResourceApplyGradientDescent", {"h", "alpha", "delta"}, {{"T", F()}}, device);
  b.Op("read", "ReadVariableOp", {"h"}, {{"dtype", F()}}, device);
  return b.graph();
}

TEST(OpenClSession, ResourceApplyGradientDescentMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  const Tensor x0 = MakeVector<float>({4, -2, 0.5f, 8});
  const Tensor delta = MakeVector<float>({1, 2, -3, 0.25f});
  auto cpu = Session::Create(&TestRuntime(), ResourceDescentGraph(kCpu));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto ocl = Session::Create(&OpenClRuntime(), ResourceDescentGraph(kOcl));
  ASSERT_TRUE(ocl.ok()) << ocl.status();
  for (Session* s : {cpu->get(), ocl->get()})
    ASSERT_OK(s->Run({{"value", x0}}, {}, {"assign"}, nullptr));
  std::vector<Tensor> before;
  ASSERT_OK((*ocl)->Run({}, {"read"}, {}, &before));
  for (int step = 1; step <= 3; ++step) {
    SCOPED_TRACE(step);
    const std::vector<std::pair<std::string, Tensor>> feeds = {{"alpha", MakeScalar(0.5f)},
                                                               {"delta", delta}};
    RunMetadata meta;
    std::vector<Tensor> unused;
    ASSERT_OK((*cpu)->Run(feeds, {}, {"step"}, nullptr));
    ASSERT_OK((*ocl)->Run(RunOptions(), feeds, {}, {"step"}, &unused, &meta));
    EXPECT_NE(DeviceOf(meta, "step").find("OPENCL:0"), std::string::npos);
    std::vector<Tensor> expected, got;
    ASSERT_OK((*cpu)->Run({}, {"read"}, {}, &expected));
    ASSERT_OK((*ocl)->Run({}, {"read"}, {}, &got));
    ExpectTensorNear(expected[0], got[0], 1e-6, 1e-6);
  }
  ExpectTensorEqual(x0, before[0]);  // read before the first update: the old value
}

}  // namespace
}  // namespace cfx
