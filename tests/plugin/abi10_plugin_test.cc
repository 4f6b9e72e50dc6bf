// A plugin built against the frozen ABI 1.0 header (fixtures/abi10_plugin.c) loads into this
// host at minor 0 and runs: its op in a Session on CPU and on its own device type, whose memory
// only its copy functions can read.
#include <gtest/gtest.h>

#include "conflux/runtime.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

std::unique_ptr<Runtime> RuntimeWithAbi10Plugin() {
  auto rt = test::RuntimeWithFixture("abi10");
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

TEST(Abi10Plugin, LoadsWithMinorZero) {
  auto rt = RuntimeWithAbi10Plugin();
  ASSERT_NE(rt, nullptr);
  const std::vector<LoadedPluginInfo> plugins = rt->plugins();  // by value: keep it alive
  const LoadedPluginInfo* info = nullptr;
  for (const LoadedPluginInfo& p : plugins)
    if (p.name == "abi10") info = &p;
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->abi_major, 1u);
  EXPECT_EQ(info->abi_minor, 0u);
  EXPECT_EQ(info->version, "1.0.0");
  EXPECT_EQ(info->num_kernels, 2);
  auto dev = rt->FindDevice("ABI10:0");
  ASSERT_TRUE(dev.ok()) << dev.status();
  EXPECT_EQ((*dev)->description(), "ABI 1.0 fixture device 0");
  EXPECT_FALSE((*dev)->host_addressable());
}

TEST(Abi10Plugin, RunsItsKernelInASessionOnCpuAndOnItsDevice) {
  auto rt = RuntimeWithAbi10Plugin();
  ASSERT_NE(rt, nullptr);
  test::GraphBuilder b;
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({2, 3})).device = "/device:CPU:0";
  b.Op("on_cpu", "Abi10Affine", {"x"}, {{"a", AttrValue::Float(2)}}, "/device:CPU:0");
  b.Op("on_abi10", "Abi10Affine", {"x"},
       {{"a", AttrValue::Float(-3)}, {"b", AttrValue::Float(0.5f)}}, "/device:ABI10:0");
  // Back from ABI10 memory into a CPU op, and from CPU into ABI10 again.
  b.Op("chained", "Abi10Affine", {"on_abi10"}, {{"a", AttrValue::Float(10)}}, "/device:CPU:0");
  b.Op("chained_back", "Abi10Affine", {"on_cpu"}, {{"a", AttrValue::Float(1)}}, "/device:ABI10:0");
  auto session = Session::Create(rt.get(), b.graph());
  ASSERT_TRUE(session.ok()) << session.status();
  Tensor x = test::MakeTensor<float>(TensorShape({2, 3}), {1, 2, 3, -1, 0, 0.25f});
  std::vector<Tensor> out;
  ASSERT_OK(
      (*session)->Run({{"x", x}}, {"on_cpu", "on_abi10", "chained", "chained_back"}, {}, &out));
  ASSERT_EQ(out.size(), 4u);
  // on_cpu = 2x + 1 (b's default), on_abi10 = -3x + 0.5.
  EXPECT_EQ(test::Values<float>(out[0]), (std::vector<float>{3, 5, 7, -1, 1, 1.5f}));
  EXPECT_EQ(test::Values<float>(out[1]),
            (std::vector<float>{-2.5f, -5.5f, -8.5f, 3.5f, 0.5f, -0.25f}));
  EXPECT_EQ(test::Values<float>(out[2]), (std::vector<float>{-24, -54, -84, 36, 6, -1.5f}));
  EXPECT_EQ(test::Values<float>(out[3]), (std::vector<float>{4, 6, 8, 0, 2, 2.5f}));
  for (const Tensor& t : out) EXPECT_EQ(t.shape(), TensorShape({2, 3}));
}

}  // namespace
}  // namespace cfx
