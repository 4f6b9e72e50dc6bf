// MatMul (float, square n x n) through Conflux's CPU kernel against raw oneDNN, in one run.
//
//   conflux       KernelRunner::RunOnDevice on the CPU plugin's MatMul kernel (dnnl_sgemm): what
//                 one step of a graph pays for the node, output allocation included;
//   onednn        a dnnl::matmul primitive, its memory objects and stream built once and executed
//                 repeatedly into one output buffer: the best a oneDNN user can do;
//   onednn_sgemm  dnnl_sgemm, oneDNN's BLAS-style entry point: which of the two the kernel should
//                 use (the sizes below 256 show the fixed cost per call).
// Every variant reports GFLOP/s (2 n^3 per product, over wall time); a summary at the end prints
// ours/oneDNN per size (median and best over repetitions). Both sides use the same OpenMP pool:
// the CPU plugin sets its thread count (config threads.intra_op, default all cores) process-wide.
//
// Run with repetitions and interleaving so that load from other processes hits all variants:
//   matmul_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_util.h"
#include "conflux/kernel_runner.h"

namespace {

constexpr int kSizes[] = {32, 64, 128, 256, 512, 1024, 2048};

cfx::Runtime* g_runtime = nullptr;

double Flops(int n) { return 2.0 * n * n * n; }

// An n x n host matrix of pseudo-random values in [-0.5, 0.5).
cfx::Tensor HostMatrix(int n, unsigned seed) {
  cfx::Tensor t(cfx::DT_FLOAT, cfx::TensorShape({n, n}));
  unsigned x = seed;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(x >> 8) / static_cast<float>(1u << 24) - 0.5f;
  }
  return t;
}

// The operands for size n, made once and shared by every variant: with separate buffers, oneDNN's
// speed at n = 512 varied by up to 30% from run to run with where the buffers happened to sit,
// whichever API called it; with the same buffers the variants compare like for like.
struct Operands {
  cfx::Tensor a, b;
};
const Operands& OperandsFor(int n) {
  static std::map<int, Operands> operands;
  auto it = operands.find(n);
  if (it == operands.end())
    it = operands.emplace(n, Operands{HostMatrix(n, 1), HostMatrix(n, 2)}).first;
  return it->second;
}

void BM_Conflux(benchmark::State& state, int n) {
  auto device = g_runtime->FindDevice("CPU:0");
  if (!device.ok()) return state.SkipWithError(device.status().ToString().c_str());
  cfx::NodeDef node;
  node.name = "matmul";
  node.op = "MatMul";
  node.input = {"a", "b"};
  node.attr["T"] = cfx::AttrValue::Type(cfx::DT_FLOAT);
  auto runner = cfx::KernelRunner::Create(*g_runtime, *device, node);
  if (!runner.ok()) return state.SkipWithError(runner.status().ToString().c_str());
  auto a = (*device)->FromHost(OperandsFor(n).a);
  auto b = (*device)->FromHost(OperandsFor(n).b);
  if (!a.ok() || !b.ok()) return state.SkipWithError("cannot place the inputs on CPU:0");
  const std::vector<cfx::Tensor> inputs = {*a, *b};
  cfx::bench::RateTimer timer(state, "GFLOP/s", 1e9);
  for (auto _ : state) {
    timer.Start();
    auto out = (*runner)->RunOnDevice(inputs);
    timer.Stop();
    if (!out.ok()) return state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out->front().raw_data());
  }
  timer.Report(Flops(n));
}

void BM_OneDnnPrimitive(benchmark::State& state, int n) {
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), engine));
  const Operands& in = OperandsFor(n);
  cfx::Tensor c(cfx::DT_FLOAT, cfx::TensorShape({n, n}));
  memory a_mem(md, engine, in.a.raw_data()), b_mem(md, engine, in.b.raw_data());
  memory c_mem(md, engine, c.raw_data());
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  cfx::bench::RateTimer timer(state, "GFLOP/s", 1e9);
  for (auto _ : state) {
    timer.Start();
    matmul.execute(stream, args);
    stream.wait();
    timer.Stop();
    benchmark::DoNotOptimize(c.raw_data());
  }
  timer.Report(Flops(n));
}

void BM_OneDnnSgemm(benchmark::State& state, int n) {
  const Operands& in = OperandsFor(n);
  cfx::Tensor c(cfx::DT_FLOAT, cfx::TensorShape({n, n}));
  cfx::bench::RateTimer timer(state, "GFLOP/s", 1e9);
  for (auto _ : state) {
    timer.Start();
    dnnl_status_t status = dnnl_sgemm('N', 'N', n, n, n, 1.0f, in.a.data<float>(), n,
                                      in.b.data<float>(), n, 0.0f, c.data<float>(), n);
    timer.Stop();
    if (status != dnnl_success) return state.SkipWithError("dnnl_sgemm failed");
    benchmark::DoNotOptimize(c.raw_data());
  }
  timer.Report(Flops(n));
}

void PrintSummary(const cfx::bench::RateReporter& r) {
  std::printf("\nMatMul float n x n, GFLOP/s (median / best of repetitions)\n");
  std::printf("%6s  %17s  %17s  %17s  %15s\n", "n", "conflux", "onednn", "onednn_sgemm",
              "ours/onednn");
  for (int n : kSizes) {
    const std::string size = "/" + std::to_string(n);
    const auto ours = r.Get("conflux" + size), ref = r.Get("onednn" + size),
               sgemm = r.Get("onednn_sgemm" + size);
    std::printf("%6d  %8.1f / %6.1f  %8.1f / %6.1f  %8.1f / %6.1f  %6.3f / %6.3f\n", n, ours.median,
                ours.best, ref.median, ref.best, sgemm.median, sgemm.best, ours.median / ref.median,
                ours.best / ref.best);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::unique_ptr<cfx::Runtime> runtime = cfx::bench::BuildTreeRuntime(CONFLUX_BUILD_PLUGIN_DIR);
  if (runtime == nullptr) return 1;
  g_runtime = runtime.get();
  for (int n : kSizes) {
    const std::string size = "/" + std::to_string(n);
    for (auto [name, fn] :
         {std::pair{"conflux", &BM_Conflux}, std::pair{"onednn", &BM_OneDnnPrimitive},
          std::pair{"onednn_sgemm", &BM_OneDnnSgemm}}) {
      benchmark::RegisterBenchmark((name + size).c_str(), fn, n)
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  cfx::bench::RateReporter reporter("GFLOP/s");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  PrintSummary(reporter);
  benchmark::Shutdown();
  return 0;
}
