// Asynchronous execution on a device with streams (the ASYNC fixture: kernels and copies only
// enqueue work, which a stream thread runs later): kernels are pipelined (the executor enqueues
// ahead of the device), results read on the host or by another device wait for the compute
// stream, device buffers freed while queued work still reads them are reused only after it ran
// (the fixture fills freed buffers with NaN), and concurrent steps share the device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/session.h"
#include "kernel_test_util.h"
#include "runtime/copy_tensor.h"

namespace cfx {
namespace {

std::string FixturePath() { return test::FixturePluginDir() + "/libconflux_async_device.so"; }

std::unique_ptr<Runtime> AsyncRuntime() {
  Config config = Config::Default();
  config.plugin_paths.insert(config.plugin_paths.begin(), test::BuildPluginDir());
  PluginSpec spec;
  spec.path = FixturePath();
  config.plugins.push_back(spec);
  auto rt = Runtime::Create(config);
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

struct FixtureStats {
  int64_t max_queue_depth = 0, ops_run = 0, live_buffers = 0;
};
FixtureStats Stats() {
  FixtureStats s;
  void* lib = dlopen(FixturePath().c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(lib, nullptr) << "the fixture is not loaded";
  if (lib == nullptr) return s;
  using StatsFn = void (*)(int64_t*, int64_t*, int64_t*);
  auto fn = reinterpret_cast<StatsFn>(dlsym(lib, "cfx_async_fixture_stats"));
  EXPECT_NE(fn, nullptr);
  if (fn != nullptr) fn(&s.max_queue_depth, &s.ops_run, &s.live_buffers);
  dlclose(lib);
  return s;
}

NodeDef Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
             const std::string& device) {
  NodeDef n;
  n.name = name;
  n.op = op;
  n.input = std::move(inputs);
  n.device = device;
  n.attr["T"] = AttrValue::Type(DT_FLOAT);
  return n;
}

NodeDef Placeholder(const std::string& name) {
  NodeDef n;
  n.name = name;
  n.op = "Placeholder";
  n.attr["dtype"] = AttrValue::Type(DT_FLOAT);
  return n;
}

std::vector<float> Input(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i) - 3.0f;
  return v;
}

// A chain of Negs: each kernel's input is freed by the executor as soon as the next kernel is
// enqueued, long before the stream runs it. Correct values (no NaN) need stream-ordered frees;
// a queue deeper than one shows the executor ran ahead of the device.
TEST(AsyncDevice, PipelinedChainWithStreamOrderedFrees) {
  const int64_t live_before = [] {
    auto rt = AsyncRuntime();  // loads the fixture
    return Stats().live_buffers;
  }();
  {
    auto rt = AsyncRuntime();
    ASSERT_NE(rt, nullptr);
    GraphDef g;
    g.node.push_back(Placeholder("x"));
    std::string prev = "x";
    constexpr int kChain = 41;
    for (int i = 0; i < kChain; ++i) {
      std::string name = "neg" + std::to_string(i);
      g.node.push_back(Node(name, "Neg", {prev}, "/device:ASYNC:0"));
      prev = name;
    }
    auto session = Session::Create(rt.get(), g);
    ASSERT_OK(session.status());
    const std::vector<float> x = Input(4096);
    for (int step = 0; step < 3; ++step) {
      std::vector<Tensor> out;
      ASSERT_OK((*session)->Run({{"x:0", test::MakeVector<float>(x)}}, {prev + ":0"}, {}, &out));
      ASSERT_EQ(out.size(), 1u);
      std::vector<float> got = test::Values<float>(out[0]);
      ASSERT_EQ(got.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], -x[i]) << "element " << i;
    }
    EXPECT_GT(Stats().max_queue_depth, 1);
  }
  // Every buffer freed in stream order reached the plugin once the device went away.
  EXPECT_EQ(Stats().live_buffers, live_before);
}

// Values cross between the ASYNC device and the CPU both ways, in concurrent steps:
// out = (-(x) + x * x) * (-(x) + x * x) with Neg and the final Mul on ASYNC, AddV2 and the
// first Mul on the CPU.
TEST(AsyncDevice, MixedDevicesAndConcurrentSteps) {
  auto rt = AsyncRuntime();
  ASSERT_NE(rt, nullptr);
  GraphDef g;
  g.node.push_back(Placeholder("x"));
  g.node.push_back(Node("neg", "Neg", {"x"}, "/device:ASYNC:0"));
  g.node.push_back(Node("sq", "Mul", {"x", "x"}, "/device:CPU:0"));
  g.node.push_back(Node("sum", "AddV2", {"neg", "sq"}, "/device:CPU:0"));
  g.node.push_back(Node("out", "Mul", {"sum", "sum"}, "/device:ASYNC:0"));
  auto session = Session::Create(rt.get(), g);
  ASSERT_OK(session.status());
  auto run = [&](int seed) {
    std::vector<float> x = Input(1000);
    for (float& v : x) v += static_cast<float>(seed);
    std::vector<Tensor> out;
    Status s = (*session)->Run({{"x:0", test::MakeVector<float>(x)}}, {"out:0", "neg:0"}, {}, &out);
    EXPECT_OK(s);
    if (!s.ok()) return;
    std::vector<float> got = test::Values<float>(out[0]);
    std::vector<float> neg = test::Values<float>(out[1]);
    for (size_t i = 0; i < x.size(); ++i) {
      const float sum = -x[i] + x[i] * x[i];
      ASSERT_EQ(got[i], sum * sum) << "seed " << seed << " element " << i;
      ASSERT_EQ(neg[i], -x[i]);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) run(t * 10 + i);
    });
  for (std::thread& t : threads) t.join();
}

// CopyTensor from device memory completes on the device's own thread once the compute stream
// has produced the value; the blocking form gives the same bytes.
TEST(AsyncDevice, CopyTensorWaitsForTheComputeStream) {
  auto rt = AsyncRuntime();
  ASSERT_NE(rt, nullptr);
  Device* dev = rt->FindDevice("ASYNC:0").value();
  ASSERT_NE(dev->compute_stream(), nullptr);
  const Tensor host = test::MakeVector<float>(Input(2048));
  auto on_dev = CopyTensorSync(nullptr, dev, host);
  ASSERT_OK(on_dev.status());
  EXPECT_EQ(DeviceOf(*on_dev), dev);
  // A second device copy queued behind the first, then both read back.
  auto copy = CopyTensorSync(dev, dev, *on_dev, {.new_buffer = true});
  ASSERT_OK(copy.status());
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status status;
  Tensor back;
  std::thread::id caller = std::this_thread::get_id(), completer;
  CopyTensor(dev, nullptr, *copy, {}, [&](const Status& s, Tensor t) {
    std::lock_guard<std::mutex> lock(mu);
    status = s;
    back = std::move(t);
    completer = std::this_thread::get_id();
    done = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
  }
  ASSERT_OK(status);
  EXPECT_NE(completer, caller);
  EXPECT_EQ(test::Values<float>(back), test::Values<float>(host));
  auto blocking = CopyTensorSync(nullptr, nullptr, *copy);
  ASSERT_OK(blocking.status());
  EXPECT_EQ(test::Values<float>(*blocking), test::Values<float>(host));
}

}  // namespace
}  // namespace cfx
