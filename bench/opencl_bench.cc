// The OpenCL device against the CPU plugin, in one run (numbers only: PoCL runs OpenCL on the
// same CPU cores, so there is no target).
//
//   BM_MatMul/<device>/<n>   float n x n MatMul kernel (KernelRunner::RunOnDevice on operands
//                            already on the device), GFLOP/s; device 0 = CPU (oneDNN sgemm),
//                            1 = OPENCL (the plugin's tiled kernel)
//   BM_CopyToDevice/<bytes>, BM_CopyToHost/<bytes>   host<->device copy bandwidth, GB/s
//   BM_Launch/<device>       a one-element Neg: the fixed cost of one kernel, µs
//   BM_Chain/<device>        a Session step running a chain of 64 one-element Negs and
//                            fetching the last: µs per kernel, the executor's launch overhead
//                            (on OPENCL, how soon a kernel's successor is enqueued)
//
// Skips everything (and says so) when no OpenCL device is present. Run:
//   opencl_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>

#include "conflux/config.h"
#include "conflux/kernel_runner.h"
#include "conflux/runtime.h"
#include "conflux/session.h"

namespace {

cfx::Runtime* g_runtime = nullptr;
cfx::Device* g_devices[2] = {nullptr, nullptr};  // CPU:0, OPENCL:0

cfx::Tensor HostMatrix(int64_t rows, int64_t cols, unsigned seed) {
  cfx::Tensor t(cfx::DT_FLOAT, cfx::TensorShape({rows, cols}));
  unsigned x = seed;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return t;
}

std::unique_ptr<cfx::KernelRunner> Runner(cfx::Device* device, const std::string& op) {
  cfx::NodeDef node;
  node.name = "bench_" + op;
  node.op = op;
  node.input = op == "MatMul" ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"};
  node.attr["T"] = cfx::AttrValue::Type(cfx::DT_FLOAT);
  auto r = cfx::KernelRunner::Create(*g_runtime, device, node);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::abort();
  }
  return std::move(r).value();
}

void BM_MatMul(benchmark::State& state) {
  cfx::Device* device = g_devices[state.range(0)];
  const int64_t n = state.range(1);
  auto runner = Runner(device, "MatMul");
  cfx::Tensor a = device->FromHost(HostMatrix(n, n, 1)).value();
  cfx::Tensor b = device->FromHost(HostMatrix(n, n, 2)).value();
  for (auto _ : state) {
    auto out = runner->RunOnDevice({a, b});
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
  }
  state.counters["GFLOPs"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(device->type());
}

void Copy(benchmark::State& state, bool to_device) {
  cfx::Device* device = g_devices[1];
  const int64_t bytes = state.range(0);
  cfx::Tensor host = HostMatrix(1, bytes / 4, 3);
  cfx::Tensor dev = cfx::Tensor::Allocate(device->allocator(), cfx::DT_FLOAT, host.shape()).value();
  for (auto _ : state) {
    cfx::Status s =
        to_device ? device->CopyHostToDevice(host, &dev) : device->CopyDeviceToHost(dev, &host);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.counters["GBps"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
}
void BM_CopyToDevice(benchmark::State& state) { Copy(state, true); }
void BM_CopyToHost(benchmark::State& state) { Copy(state, false); }

void BM_Launch(benchmark::State& state) {
  cfx::Device* device = g_devices[state.range(0)];
  auto runner = Runner(device, "Neg");
  cfx::Tensor x = device->FromHost(HostMatrix(1, 1, 4)).value();
  for (auto _ : state) {
    auto out = runner->RunOnDevice({x});
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
  }
  // kIsRate | kInvert: seconds per iteration; scaled to microseconds.
  state.counters["us_per_launch"] =
      benchmark::Counter(static_cast<double>(state.iterations()) / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(device->type());
}

void BM_Chain(benchmark::State& state) {
  cfx::Device* device = g_devices[state.range(0)];
  constexpr int kChain = 64;
  cfx::GraphDef g;
  cfx::NodeDef x;
  x.name = "x";
  x.op = "Placeholder";
  x.attr["dtype"] = cfx::AttrValue::Type(cfx::DT_FLOAT);
  g.node.push_back(x);
  std::string prev = "x";
  for (int i = 0; i < kChain; ++i) {
    cfx::NodeDef n;
    n.name = "neg" + std::to_string(i);
    n.op = "Neg";
    n.input = {prev};
    n.device = device->full_name();
    n.attr["T"] = cfx::AttrValue::Type(cfx::DT_FLOAT);
    g.node.push_back(n);
    prev = n.name;
  }
  auto session = cfx::Session::Create(g_runtime, g);
  if (!session.ok()) return state.SkipWithError(session.status().ToString().c_str());
  const cfx::Tensor input = HostMatrix(1, 1, 5);
  std::vector<cfx::Tensor> out;
  for (auto _ : state) {
    cfx::Status s = (*session)->Run({{"x:0", input}}, {prev + ":0"}, {}, &out);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.counters["us_per_kernel"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChain / 1e6,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel(device->type());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  auto config = cfx::Config::FromString(
      "plugins:\n  - {name: cpu}\n  - {name: opencl, required: false}\n"
      "devices:\n  CPU: {count: 1}\n  OPENCL: {count: 1}\n",
      "opencl_bench");
  if (!config.ok()) return std::fprintf(stderr, "%s\n", config.status().ToString().c_str()), 1;
  config->plugin_paths.insert(config->plugin_paths.begin(), CONFLUX_BUILD_PLUGIN_DIR);
  auto runtime = cfx::Runtime::Create(*config);
  if (!runtime.ok()) return std::fprintf(stderr, "%s\n", runtime.status().ToString().c_str()), 1;
  g_runtime = runtime->get();
  g_devices[0] = g_runtime->FindDevice("CPU:0").value();
  auto opencl = g_runtime->FindDevice("OPENCL:0");
  if (!opencl.ok()) {
    std::printf("opencl_bench: no OpenCL device here (%s); nothing to measure\n",
                opencl.status().message().c_str());
    return 0;
  }
  g_devices[1] = *opencl;
  std::printf("OpenCL device: %s\n", g_devices[1]->description().c_str());
  for (int d = 0; d < 2; ++d)
    for (int n : {256, 512, 1024, 2048})
      benchmark::RegisterBenchmark("BM_MatMul", BM_MatMul)
          ->Args({d, n})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  for (int64_t bytes : {int64_t{4} << 10, int64_t{1} << 20, int64_t{64} << 20}) {
    benchmark::RegisterBenchmark("BM_CopyToDevice", BM_CopyToDevice)->Arg(bytes)->UseRealTime();
    benchmark::RegisterBenchmark("BM_CopyToHost", BM_CopyToHost)->Arg(bytes)->UseRealTime();
  }
  for (int d = 0; d < 2; ++d)
    benchmark::RegisterBenchmark("BM_Launch", BM_Launch)->Arg(d)->UseRealTime();
  for (int d = 0; d < 2; ++d)
    benchmark::RegisterBenchmark("BM_Chain", BM_Chain)->Arg(d)->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
