// The OPENCL device: enumeration, copies with offsets, allocator statistics, out of memory, the
// program cache (build failures carry the build log), broadcasting plans, and start-up without
// an OpenCL platform.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "conflux/kernel_runner.h"
#include "opencl_runtime.h"
#include "opencl_test_util.h"
#include "plugin/abi_types.h"
#include "plugin/plugin_device.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

TEST(OpenClDevice, EnumeratedWithOwnMemory) {
  SKIP_WITHOUT_OPENCL();
  Device* dev = OpenClDevice();
  EXPECT_EQ(dev->full_name(), "/job:localhost/replica:0/task:0/device:OPENCL:0");
  EXPECT_EQ(dev->plugin(), "opencl");
  EXPECT_FALSE(dev->host_addressable());
  EXPECT_FALSE(dev->allocator()->host_addressable());
  EXPECT_TRUE(dev->host_allocator()->host_addressable());
  // The description names the device, the platform and its memory.
  EXPECT_NE(dev->description().find("MiB global memory"), std::string::npos) << dev->description();
  char why[256] = {0};
  EXPECT_GE(internal::PluginDevice::Of(*dev).desc()->count(
                internal::PluginDevice::Of(*dev).desc()->type_state, why, sizeof(why)),
            1);
}

TEST(OpenClDevice, OptionsSelectThePlatformDeviceAndType) {
  SKIP_WITHOUT_OPENCL();
  // The device found by default, picked again by index, by name substrings and by its type.
  const std::string description = OpenClDevice()->description();
  const bool is_cpu = description.find("pthread") != std::string::npos ||
                      description.find("Portable Computing Language") != std::string::npos;
  std::vector<std::string> selections = {"options: {platform: \"0\", device: \"0\"}",
                                         "options: {type: all}"};
  if (is_cpu) selections.push_back("options: {platform: PORTABLE, type: cpu}");
  for (const std::string& options : selections) {
    auto rt = MakeOpenClRuntime(options);
    ASSERT_TRUE(rt.ok()) << options << ": " << rt.status();
    auto dev = (*rt)->FindDevice("OPENCL:0");
    ASSERT_TRUE(dev.ok()) << options;
    EXPECT_EQ((*dev)->description(), description) << options;
  }
  // Options that match nothing, or that do not exist, fail start-up naming what was found.
  auto none = MakeOpenClRuntime("options: {platform: no-such-platform}");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no OpenCL device matches platform='no-such-platform'"),
            std::string::npos)
      << none.status();
  EXPECT_NE(none.status().message().find("found"), std::string::npos) << none.status();
  auto unknown = MakeOpenClRuntime("options: {vendor: x}");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'vendor'"), std::string::npos)
      << unknown.status();
  auto bad_type = MakeOpenClRuntime("options: {type: fpga}");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_NE(bad_type.status().message().find("expected all, cpu, gpu or accelerator"),
            std::string::npos)
      << bad_type.status();
}

TEST(OpenClDevice, CopiesWithOffsetsRoundTrip) {
  SKIP_WITHOUT_OPENCL();
  Device* dev = OpenClDevice();
  const cfx_device_funcs* f = internal::PluginDevice::Of(*dev).desc()->funcs;
  const size_t n = 1000;
  std::vector<int32_t> src(n);
  std::iota(src.begin(), src.end(), 7);
  cfx_status s;
  void* a =
      f->allocate(internal::PluginDevice::Of(*dev).handle(), CFX_MEMORY_DEVICE, n * 4, 64, &s);
  void* b =
      f->allocate(internal::PluginDevice::Of(*dev).handle(), CFX_MEMORY_DEVICE, n * 4, 64, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  // a[0, n) = src; b[100, 400) = a[200, 500); b[0, 100) = src[0, 100) written at offset 0.
  f->copy_host_to_device(internal::PluginDevice::Of(*dev).handle(), nullptr, a, 0, src.data(),
                         n * 4, &s);
  f->copy_device_to_device(internal::PluginDevice::Of(*dev).handle(), nullptr, b, 100 * 4, a,
                           200 * 4, 300 * 4, &s);
  f->copy_host_to_device(internal::PluginDevice::Of(*dev).handle(), nullptr, b, 0, src.data(),
                         100 * 4, &s);
  f->stream_synchronize(internal::PluginDevice::Of(*dev).handle(), nullptr, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  std::vector<int32_t> back(300, -1);
  f->copy_device_to_host(internal::PluginDevice::Of(*dev).handle(), nullptr, back.data(), b,
                         100 * 4, 300 * 4, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ(back[i], src[200 + i]) << i;
  std::vector<int32_t> head(100, -1);
  f->copy_device_to_host(internal::PluginDevice::Of(*dev).handle(), nullptr, head.data(), b, 0,
                         100 * 4, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(head[i], src[i]) << i;
  // A copy past the end of a buffer is an error naming the device, not a crash.
  f->copy_device_to_host(internal::PluginDevice::Of(*dev).handle(), nullptr, back.data(), b,
                         (n - 10) * 4, 300 * 4, &s);
  EXPECT_FALSE(s.status.ok());
  EXPECT_NE(s.status.message().find("OPENCL:0"), std::string::npos) << s.status;
  f->deallocate(internal::PluginDevice::Of(*dev).handle(), CFX_MEMORY_DEVICE, a, n * 4);
  f->deallocate(internal::PluginDevice::Of(*dev).handle(), CFX_MEMORY_DEVICE, b, n * 4);
}

TEST(OpenClDevice, TensorsMoveThroughTheDeviceApi) {
  SKIP_WITHOUT_OPENCL();
  Device* dev = OpenClDevice();
  Tensor host = MakeTensor<float>(TensorShape({2, 3}), {1, 2, 3, 4, 5, 6});
  auto on_dev = dev->FromHost(host);
  ASSERT_TRUE(on_dev.ok()) << on_dev.status();
  EXPECT_FALSE(on_dev->buffer()->allocator()->host_addressable());
  auto back = dev->ToHost(*on_dev);
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectTensorEqual(host, *back);
  // Streams and events: a marker recorded after the copy completes.
  const cfx_device_funcs* f = internal::PluginDevice::Of(*dev).desc()->funcs;
  cfx_status s;
  cfx_event* e = f->event_create(internal::PluginDevice::Of(*dev).handle(), &s);
  f->event_record(internal::PluginDevice::Of(*dev).handle(), e, nullptr, &s);
  f->event_synchronize(internal::PluginDevice::Of(*dev).handle(), e, &s);
  ASSERT_TRUE(s.status.ok()) << s.status;
  EXPECT_EQ(f->event_query(internal::PluginDevice::Of(*dev).handle(), e), 1);
  f->event_destroy(internal::PluginDevice::Of(*dev).handle(), e);
  // stream_then runs its callback once the stream drained (on the dispatcher thread).
  std::atomic<int> called{0};
  f->stream_then(
      internal::PluginDevice::Of(*dev).handle(), nullptr,
      [](void* arg, const cfx_status* st) {
        static_cast<std::atomic<int>*>(arg)->fetch_add(st == nullptr ? 1 : 100);
      },
      &called);
  f->stream_synchronize(internal::PluginDevice::Of(*dev).handle(), nullptr, &s);
  for (int i = 0; i < 2000 && called.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(called.load(), 1);
}

TEST(OpenClDevice, AllocatorStatistics) {
  SKIP_WITHOUT_OPENCL();
  Allocator* a = OpenClDevice()->allocator();
  const int64_t before = a->stats().bytes_in_use;
  a->ResetPeak();
  {
    auto t1 = Tensor::Allocate(a, DT_FLOAT, TensorShape({1000}));
    auto t2 = Tensor::Allocate(a, DT_INT32, TensorShape({250}));
    ASSERT_TRUE(t1.ok() && t2.ok());
    EXPECT_EQ(a->stats().bytes_in_use, before + 5000);
    EXPECT_GE(a->stats().peak_bytes_in_use, before + 5000);
  }
  EXPECT_EQ(a->stats().bytes_in_use, before);
  EXPECT_GE(a->stats().peak_bytes_in_use, before + 5000);
}

TEST(OpenClDevice, OutOfMemoryIsAClearError) {
  SKIP_WITHOUT_OPENCL();
  auto rt = MakeOpenClRuntime("memory_limit: 64KiB");
  ASSERT_TRUE(rt.ok()) << rt.status();
  Device* dev = (*rt)->FindDevice("OPENCL:0").value();
  EXPECT_EQ(dev->allocator()->stats().bytes_limit, 65536);
  // Fill needs 40000 floats = 160000 bytes: more than the limit.
  NodeDef fill = MakeNode("Fill", 2, {{"T", AttrValue::Type(DT_FLOAT)}});
  auto out = RunKernelOnce(**rt, dev, fill, {MakeVector<int32_t>({200, 200}), MakeScalar(1.5f)});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kResourceExhausted) << out.status();
  EXPECT_NE(out.status().message().find("160000 bytes"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("OPENCL:0"), std::string::npos) << out.status();
  // A request the device itself cannot serve (beyond its largest buffer) fails cleanly too.
  cfx_status s;
  void* p = internal::PluginDevice::Of(*dev).desc()->funcs->allocate(
      internal::PluginDevice::Of(*dev).handle(), CFX_MEMORY_DEVICE, size_t{1} << 62, 64, &s);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(s.status.code(), Code::kResourceExhausted) << s.status;
  EXPECT_NE(s.status.message().find("OPENCL:0"), std::string::npos) << s.status;
  // Within the limit, the same runtime still works.
  auto small = RunKernelOnce(**rt, dev, fill, {MakeVector<int32_t>({2, 3}), MakeScalar(1.5f)});
  ASSERT_TRUE(small.ok()) << small.status();
  ExpectTensorEqual(MakeTensor<float>(TensorShape({2, 3}), std::vector<float>(6, 1.5f)),
                    (*small)[0]);
}

// The program cache on its own context: the plugin's runtime code compiled into this test.
class ProgramCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_OPENCL();
    sdk::internal::HostSlot() = sdk::internal::TablesOf(internal::HostApi());
    dev_ = cfx::internal::PluginDevice::Of(*OpenClDevice()).handle();
  }
  cfx_device* dev_ = nullptr;
};

TEST_F(ProgramCacheTest, BuildFailureCarriesTheBuildLog) {
  ocl::ProgramCache cache(dev_->context, dev_->id, "OPENCL:test");
  const char* bad = "__kernel void broken(__global float* x) { x[0] = undeclared_name; }";
  auto k = cache.Get("broken", bad, "", "broken");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), CFX_INTERNAL);
  const std::string msg = k.status().message();
  EXPECT_NE(msg.find("building OpenCL program 'broken'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("build log"), std::string::npos) << msg;
  EXPECT_NE(msg.find("undeclared_name"), std::string::npos) << msg;  // from the compiler
  // The failure is remembered: asking again gives the same error without a rebuild.
  auto again = cache.Get("broken", bad, "", "broken");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message(), msg);
  EXPECT_EQ(cache.num_programs(), 1);
}

TEST_F(ProgramCacheTest, BuiltOncePerSourceAndOptions) {
  ocl::ProgramCache cache(dev_->context, dev_->id, "OPENCL:test");
  const char* src =
      "__kernel void k1(__global int* x) { x[get_global_id(0)] = VALUE; }\n"
      "__kernel void k2(__global int* x) { x[get_global_id(0)] += 1; }";
  auto a = cache.Get("tiny", src, "-DVALUE=1", "k1");
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto b = cache.Get("tiny", src, "-DVALUE=1", "k2");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(cache.num_programs(), 1);
  auto c = cache.Get("tiny", src, "-DVALUE=2", "k1");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(cache.num_programs(), 2);
  EXPECT_NE(*a, *c);
  auto a_again = cache.Get("tiny", src, "-DVALUE=1", "k1");
  ASSERT_TRUE(a_again.ok());
  EXPECT_EQ(*a_again, *a);
  auto missing = cache.Get("tiny", src, "-DVALUE=1", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);
  std::printf("[ timing   ] PoCL build of a 2-kernel program: %.0f ms for 2 builds\n",
              cache.build_ms());
}

TEST(OpenClBroadcast, CollapsesDimsAndNamesIncompatibleOperands) {
  sdk::internal::HostSlot() = sdk::internal::TablesOf(internal::HostApi());
  auto b = ocl::MakeBroadcast({{"x", {8, 1, 16, 16}}, {"y", {8, 1, 1, 1}}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->output_shape, (sdk::Shape{8, 1, 16, 16}));
  ASSERT_EQ(b->index.rank, 2);
  EXPECT_EQ(b->index.dims[0], 8);
  EXPECT_EQ(b->index.dims[1], 256);
  EXPECT_EQ(b->index.strides[0][0], 256);
  EXPECT_EQ(b->index.strides[0][1], 1);
  EXPECT_EQ(b->index.strides[1][0], 1);
  EXPECT_EQ(b->index.strides[1][1], 0);
  auto empty = ocl::MakeBroadcast({{"x", {0, 3}}, {"y", {3}}});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->num_elements, 0);
  auto bad = ocl::MakeBroadcast({{"x", {2, 3}}, {"y", {4}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "Incompatible shapes: x [2,3] vs. y [4]");
}

// Start-up without an OpenCL platform: OCL_ICD_VENDORS names an empty directory, so the ICD
// loader finds no vendor. The loader reads it once per process, so these tests re-run this binary
// for themselves with that environment (the ctest opencl.no_platform runs them that way too).
bool NoPlatformEnvironment() {
  const char* v = std::getenv("OCL_ICD_VENDORS");
  return v != nullptr && std::filesystem::is_directory(v) && std::filesystem::is_empty(v);
}

void RunInChildWithoutPlatforms(const std::string& test) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("conflux_no_opencl_vendors_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string cmd = "OCL_ICD_VENDORS='" + dir.string() + "' '" + self.string() +
                          "' --gtest_filter=" + test + " 2>&1";
  std::string output;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) output.append(buf, n);
  const int rc = pclose(pipe);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test."), std::string::npos) << output;
  EXPECT_EQ(output.find("SKIPPED"), std::string::npos) << output;
}

TEST(OpenClNoPlatform, LoadsWithZeroDevicesAndAReason) {
  if (!NoPlatformEnvironment())
    return RunInChildWithoutPlatforms("OpenClNoPlatform.LoadsWithZeroDevicesAndAReason");
  auto rt = MakeOpenClRuntime();
  ASSERT_TRUE(rt.ok()) << rt.status();
  bool loaded = false;
  for (const auto& p : (*rt)->plugins()) loaded |= p.name == "opencl";
  EXPECT_TRUE(loaded);
  EXPECT_FALSE((*rt)->FindDevice("OPENCL:0").ok());
  std::string reason;
  for (const auto& [type, why] : (*rt)->device_type_notes())
    if (type == "OPENCL") reason = why;
  EXPECT_NE(reason.find("no OpenCL platform"), std::string::npos) << reason;
  // CPU work goes on.
  EXPECT_TRUE((*rt)->FindDevice("CPU:0").ok());
}

TEST(OpenClNoPlatform, RequiredDeviceFailsStartUpWithTheReason) {
  if (!NoPlatformEnvironment())
    return RunInChildWithoutPlatforms("OpenClNoPlatform.RequiredDeviceFailsStartUpWithTheReason");
  auto rt = MakeOpenClRuntime("", /*required=*/true);
  ASSERT_FALSE(rt.ok());
  EXPECT_EQ(rt.status().code(), Code::kFailedPrecondition) << rt.status();
  EXPECT_NE(rt.status().message().find("requires 1 OPENCL device"), std::string::npos)
      << rt.status();
  EXPECT_NE(rt.status().message().find("no OpenCL platform"), std::string::npos) << rt.status();
}

}  // namespace
}  // namespace cfx
