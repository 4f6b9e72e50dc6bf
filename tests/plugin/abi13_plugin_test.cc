// A plugin built against the frozen ABI 1.3 headers (fixtures/abi13_plugin.c) loads into this
// host at minor 3 and runs through the tables of minor 3: its kernel reads the step id from the
// kernel table in a Session, and the transport table it was handed is the one of minor 3.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "conflux/runtime.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

std::unique_ptr<Runtime> RuntimeWithAbi13Plugin() {
  auto rt = test::RuntimeWithFixture("abi13");
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

TEST(Abi13Plugin, LoadsWithMinorThree) {
  auto rt = RuntimeWithAbi13Plugin();
  ASSERT_NE(rt, nullptr);
  const std::vector<LoadedPluginInfo> plugins = rt->plugins();  // by value: keep it alive
  const LoadedPluginInfo* info = nullptr;
  for (const LoadedPluginInfo& p : plugins)
    if (p.name == "abi13") info = &p;
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->abi_major, 1u);
  EXPECT_EQ(info->abi_minor, 3u);
  EXPECT_EQ(info->version, "1.3.0");
  EXPECT_EQ(info->num_kernels, 2);
  EXPECT_EQ(info->ops, (std::vector<std::string>{"Abi13Scale", "Abi13HostInfo"}));
}

// y = scale * x through the tensor and kernel tables; `step` is the kernel table's step_id: the
// step's (positive, new each Run) inside a Session, 0 when the kernel runs alone.
TEST(Abi13Plugin, RunsItsKernelWithTheStepIdOfEachRun) {
  auto rt = RuntimeWithAbi13Plugin();
  ASSERT_NE(rt, nullptr);
  test::GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({3})).device = "/device:CPU:0";
  b.Op("scaled", "Abi13Scale", {"x"}, {{"scale", AttrValue::Float(-2)}}, "/device:CPU:0");
  auto session = Session::Create(rt.get(), b.graph());
  ASSERT_TRUE(session.ok()) << session.status();
  Tensor x = test::MakeTensor<float>(TensorShape({3}), {1, 0.5f, -4});
  std::vector<int64_t> steps;
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run({{"x", x}}, {"scaled:0", "scaled:1"}, {}, &out));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{-2, -1, 8}));
    ASSERT_EQ(out[1].dtype(), DT_INT64);
    EXPECT_EQ(out[1].shape(), TensorShape({}));
    steps.push_back(test::Values<int64_t>(out[1])[0]);
  }
  EXPECT_GT(steps[0], 0);
  EXPECT_GT(steps[1], 0);
  EXPECT_NE(steps[0], steps[1]);

  NodeDef node = test::MakeNode("Abi13Scale", 1, {{"scale", AttrValue::Float(3)}});
  auto alone = RunKernelOnce(*rt, rt->FindDevice("CPU:0").value(), node, {x});
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(test::Values<float>((*alone)[0]), (std::vector<float>{3, 1.5f, -12}));
  EXPECT_EQ(test::Values<int64_t>((*alone)[1]), (std::vector<int64_t>{0}));
}

// The root table handed to cfx_plugin_init says minor 3, and its transport table is the one of
// minor 3, which holds only struct_size: the plugin sees the size its header gives that table.
// (The host hands each plugin tables of its negotiated minor: a minor-3 plugin never sees a
// transport table larger than the one its headers declare.)
TEST(Abi13Plugin, IsHandedTheTablesOfMinorThree) {
  auto rt = RuntimeWithAbi13Plugin();
  ASSERT_NE(rt, nullptr);
  auto out = RunKernelOnce(*rt, rt->FindDevice("CPU:0").value(),
                           test::MakeNode("Abi13HostInfo", 0, {}), {});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  const int64_t abi_minor = test::Values<int64_t>((*out)[0])[0];
  const int64_t transport_struct_size = test::Values<int64_t>((*out)[1])[0];
  const int64_t transport_struct_size_built = test::Values<int64_t>((*out)[2])[0];
  EXPECT_EQ(abi_minor, 3);
  // The 1.3 transport table is only its struct_size field.
  EXPECT_EQ(transport_struct_size_built, static_cast<int64_t>(sizeof(size_t)));
  EXPECT_EQ(transport_struct_size, transport_struct_size_built);
}

}  // namespace
}  // namespace cfx
