// The GPU device type of the CUDA plugin: start-up without a GPU (zero devices and a reason;
// `required: true` fails with it), and on a GPU the device's properties, options, copies with
// offsets on streams ordered by events, stream callbacks, the pool's limit, and a session that
// mixes CPU and GPU nodes. Tests that need a GPU skip with the plugin's reason when there is none.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <thread>

#include "conflux/kernel_runner.h"
#include "conflux/session.h"
#include "cuda_test_util.h"
#include "graph_builder.h"
#include "plugin/abi_types.h"
#include "plugin/plugin_device.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// ctest runs the CudaNoGpu tests a second time with CUDA_VISIBLE_DEVICES=-1 (cuda.no_gpu), which
// hides every GPU; in the ordinary run on a GPU machine they have nothing to check.
#define SKIP_WITH_GPU()                                                                  \
  do {                                                                                   \
    if (GpuDevice() != nullptr)                                                          \
      GTEST_SKIP() << "this machine has a GPU; ctest's cuda.no_gpu runs this test with " \
                      "CUDA_VISIBLE_DEVICES=-1";                                         \
  } while (0)

TEST(CudaNoGpu, LoadsWithZeroDevicesAndAReason) {
  SKIP_WITH_GPU();
  auto rt = MakeCudaRuntime();
  ASSERT_TRUE(rt.ok()) << rt.status();
  bool loaded = false;
  for (const auto& p : (*rt)->plugins()) loaded |= p.name == "cuda";
  EXPECT_TRUE(loaded);
  EXPECT_FALSE((*rt)->FindDevice("GPU:0").ok());
  std::string reason;
  for (const auto& [type, why] : (*rt)->device_type_notes())
    if (type == "GPU") reason = why;
  // No driver (this build machine) or a driver that shows no GPU (CUDA_VISIBLE_DEVICES=-1).
  EXPECT_TRUE(reason.find("no usable CUDA driver") != std::string::npos ||
              reason.find("the CUDA driver reports no GPU") != std::string::npos)
      << reason;
  // CPU work goes on.
  EXPECT_TRUE((*rt)->FindDevice("CPU:0").ok());
}

TEST(CudaNoGpu, RequiredDeviceFailsStartUpWithTheReason) {
  SKIP_WITH_GPU();
  auto rt = MakeCudaRuntime("", /*required=*/true);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), Code::kFailedPrecondition) << rt.status();
  EXPECT_NE(rt.status().message().find("requires 1 GPU device(s) but plugin cuda provides 0"),
            std::string::npos)
      << rt.status();
  EXPECT_NE(rt.status().message().find("CUDA driver"), std::string::npos) << rt.status();
}

// config/examples/cuda.yaml starts with or without a GPU: GPU:0 where there is one, else a note.
TEST(CudaConfig, ExampleConfigStartsWithOrWithoutAGpu) {
  auto config = Config::FromFile(std::string(CONFLUX_SOURCE_DIR) + "/config/examples/cuda.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  config->plugin_paths.insert(config->plugin_paths.begin(), BuildPluginDir());
  auto rt = Runtime::Create(*config);
  ASSERT_TRUE(rt.ok()) << rt.status();
  if (GpuDevice() != nullptr) {
    EXPECT_TRUE((*rt)->FindDevice("GPU:0").ok());
  } else {
    EXPECT_FALSE((*rt)->FindDevice("GPU:0").ok());
    EXPECT_FALSE((*rt)->device_type_notes().empty());
  }
  EXPECT_TRUE((*rt)->FindDevice("CPU:0").ok());
}

// The plugin's own options: an unknown key fails the plugin's load, naming the key (with or
// without a GPU).
TEST(CudaConfig, UnknownPluginOptionFailsNamingIt) {
  auto config = Config::FromString(
      "plugins:\n  - name: cpu\n  - name: cuda\n    options: {cudnn_libary: /x}\n",
      "cuda_test.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  config->plugin_paths.insert(config->plugin_paths.begin(), BuildPluginDir());
  auto rt = Runtime::Create(*config);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find(
                "unknown key 'cudnn_libary' (expected cudnn_library or nccl_library)"),
            std::string::npos)
      << rt.status();
}

// With cuDNN (found where this build found it) the convolutions have GPU kernels; the pools,
// which need no cuDNN, always do.
TEST(CudaConfig, ConvolutionsAndPoolsHaveGpuKernels) {
  const KernelRegistry& kernels = CudaRuntime().kernels();
  for (const char* op : {"MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad", "Conv2D",
                         "Conv2DBackpropInput", "Conv2DBackpropFilter"}) {
    bool gpu = false;
    for (const KernelDef* k : kernels.All()) gpu |= k->op == op && k->device_type == "GPU";
    EXPECT_TRUE(gpu) << op;
  }
}

TEST(GpuDevice, EnumeratedWithPropertiesAndOwnMemory) {
  SKIP_WITHOUT_GPU();
  Device* dev = GpuDevice();
  EXPECT_EQ(dev->full_name(), "/job:localhost/replica:0/task:0/device:GPU:0");
  EXPECT_EQ(dev->plugin(), "cuda");
  EXPECT_FALSE(dev->host_addressable());
  EXPECT_FALSE(dev->allocator()->host_addressable());
  const std::string d = dev->description();
  EXPECT_NE(d.find("compute capability "), std::string::npos) << d;
  EXPECT_NE(d.find("GiB memory (pool limit "), std::string::npos) << d;
  EXPECT_NE(d.find("CUDA device 0"), std::string::npos) << d;
}

TEST(GpuDevice, OptionsChooseTheDeviceAndFailClearly) {
  SKIP_WITHOUT_GPU();
  auto same = MakeCudaRuntime("options: {visible_devices: \"0\", memory_fraction: 0.5}");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_NE((*same)->FindDevice("GPU:0").value()->description().find("CUDA device 0"),
            std::string::npos);
  auto missing = MakeCudaRuntime("options: {visible_devices: \"1000\"}");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("visible_devices names CUDA device 1000"),
            std::string::npos)
      << missing.status();
  auto unknown = MakeCudaRuntime("options: {allow_growth: true}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'allow_growth'"), std::string::npos)
      << unknown.status();
}

TEST(GpuDevice, CopiesWithOffsetsOnStreamsOrderedByEvents) {
  SKIP_WITHOUT_GPU();
  const internal::PluginDevice& pd = internal::PluginDevice::Of(*GpuDevice());
  cfx_device* h = pd.handle();
  const cfx_device_funcs* f = pd.desc()->funcs;
  const size_t n = 1 << 20;  // 4 MiB: large enough that a missing wait would show
  std::vector<int32_t> src(n);
  std::iota(src.begin(), src.end(), 7);
  cfx_status s;
  void* a = f->allocate(h, CFX_MEMORY_DEVICE, n * 4, 256, &s);
  void* b = f->allocate(h, CFX_MEMORY_DEVICE, n * 4, 256, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  cfx_stream* up = f->stream_create(h, &s);
  cfx_stream* work = f->stream_create(h, &s);
  cfx_event* uploaded = f->event_create(h, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  // a = src on `up`; `work` waits for it, then b[100, 100 + m) = a[200, 200 + m).
  const size_t m = n - 300;
  f->copy_host_to_device(h, up, a, 0, src.data(), n * 4, &s);
  f->event_record(h, uploaded, up, &s);
  f->stream_wait_event(h, work, uploaded, &s);
  f->copy_device_to_device(h, work, b, 100 * 4, a, 200 * 4, m * 4, &s);
  f->stream_synchronize(h, work, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  std::vector<int32_t> back(m, -1);
  f->copy_device_to_host(h, work, back.data(), b, 100 * 4, m * 4, &s);
  f->stream_synchronize(h, work, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  for (size_t i = 0; i < m; ++i) ASSERT_EQ(back[i], src[200 + i]) << i;
  f->event_destroy(h, uploaded);
  f->stream_destroy(h, up);
  f->stream_destroy(h, work);
  f->deallocate(h, CFX_MEMORY_DEVICE, a, n * 4);
  f->deallocate(h, CFX_MEMORY_DEVICE, b, n * 4);
}

TEST(GpuDevice, StreamThenRunsOnceTheStreamDrained) {
  SKIP_WITHOUT_GPU();
  Device* dev = GpuDevice();
  Tensor host = MakeTensor<float>(TensorShape({2, 3}), {1, 2, 3, 4, 5, 6});
  auto on_dev = dev->FromHost(host);
  ASSERT_TRUE(on_dev.ok()) << on_dev.status();
  auto back = dev->ToHost(*on_dev);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectTensorEqual(host, *back);
  const internal::PluginDevice& pd = internal::PluginDevice::Of(*dev);
  std::atomic<int> called{0};
  pd.desc()->funcs->stream_then(
      pd.handle(), nullptr,
      [](void* arg, const cfx_status* st) {
        static_cast<std::atomic<int>*>(arg)->fetch_add(st == nullptr ? 1 : 100);
      },
      &called);
  for (int i = 0; i < 1000 && called.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(called.load(), 1);
}

TEST(GpuDevice, MemoryLimitIsResourceExhaustedNamingTheBytes) {
  SKIP_WITHOUT_GPU();
  auto rt = MakeCudaRuntime("memory_limit: 1MiB");
  ASSERT_TRUE(rt.ok()) << rt.status();
  Device* gpu = (*rt)->FindDevice("GPU:0").value();
  NodeDef fill = MakeNode("Fill", 2, {{"T", AttrValue::Type(DT_FLOAT)}});
  auto out = RunKernelOnce(**rt, gpu, fill, {MakeVector<int32_t>({1 << 20}), MakeScalar(1.0f)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kResourceExhausted) << out.status();
  EXPECT_NE(out.status().message().find("4194304 bytes"), std::string::npos) << out.status();
  // Within the limit the same kernel works.
  auto small = RunKernelOnce(**rt, gpu, fill, {MakeVector<int32_t>({1000}), MakeScalar(2.5f)});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(Values<float>((*small)[0]), std::vector<float>(1000, 2.5f));
}

// x [4,3] fed; w [3,2] and b [2] consts. h = relu(bias_add(x w, b)) on GPU, then per-column sums
// on the CPU, and the GPU's exp of h fetched as well.
GraphDef Mixed(bool pinned) {
  const char* gpu = pinned ? "/device:GPU:0" : "";
  AttrValue f = AttrValue::Type(DT_FLOAT);
  GraphBuilder g;
  g.Placeholder("x", DT_FLOAT, PartialTensorShape({4, 3}));
  g.Const("w", MakeTensor<float>(TensorShape({3, 2}), {0.5f, -1, 2, 0.25f, -0.75f, 1}), gpu);
  g.Const("b", MakeVector<float>({0.1f, -0.2f}), gpu);
  g.Const("axis", MakeVector<int32_t>({0}));
  g.Op("xw", "MatMul", {"x", "w"}, {{"T", f}}, gpu);
  g.Op("z", "BiasAdd", {"xw", "b"}, {{"T", f}}, gpu);
  g.Op("h", "Relu", {"z"}, {{"T", f}}, gpu);
  g.Op("e", "Exp", {"h"}, {{"T", f}}, gpu);
  g.Op("s", "Sum", {"h", "axis"}, {{"T", f}, {"Tidx", AttrValue::Type(DT_INT32)}},
       pinned ? "/device:CPU:0" : "");
  return g.graph();
}

TEST(GpuSession, MixedGraphMatchesCpuOnly) {
  SKIP_WITHOUT_GPU();
  Tensor x = MakeTensor<float>(TensorShape({4, 3}), {1, -2, 0.5f, 3, 0, -1, 0.25f, 2, 2, -1, 1, 4});
  const std::vector<std::string> fetches = {"h", "e", "s"};
  auto cpu = Session::Create(&TestRuntime(), Mixed(false));
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  std::vector<Tensor> expected;
  ASSERT_OK((*cpu)->Run({{"x", x}}, fetches, {}, &expected));
  auto mixed = Session::Create(&CudaRuntime(), Mixed(true));
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  for (int step = 0; step < 3; ++step) {  // later steps reuse executors and the uploaded consts
    std::vector<Tensor> got;
    ASSERT_OK((*mixed)->Run({{"x", x}}, fetches, {}, &got));
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(fetches[i]);
      ExpectTensorNear(expected[i], got[i], 1e-5, 1e-5);
    }
  }
}

}  // namespace
}  // namespace cfx
