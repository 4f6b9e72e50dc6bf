// FusedBatchNormV3 and FusedBatchNormGradV3 (float, training) through the ops-nn plugin's CPU
// kernels against oneDNN's batch normalization primitives, in one run, on activation shapes of
// small CNNs.
//
//   conflux  KernelRunner::RunOnDevice on the ops-nn kernel: what one step of a graph pays for the
//            node, output allocation included;
//   onednn   a dnnl::batch_normalization_{forward,backward} primitive (scale and shift, NHWC or
//            NCHW memory), its memory objects and stream built once and executed repeatedly into
//            the same buffers: the best a oneDNN user can do.
// Both use the process's OpenMP pool (the CPU plugin sets its size: threads.intra_op, default
// all cores). Each variant reports GB/s of the tensors it must touch once (forward: read x, write
// y; backward: read dy and x, write dx); a summary prints conflux / onednn per shape.
//
//   batch_norm_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_util.h"
#include "conflux/kernel_runner.h"

namespace {

struct Spec {
  const char* name;
  int64_t n, c, h, w;
  bool nhwc;
};

constexpr Spec kSpecs[] = {
    {"64x28x28x32_nhwc", 64, 32, 28, 28, true},  {"64x14x14x64_nhwc", 64, 64, 14, 14, true},
    {"32x56x56x64_nhwc", 32, 64, 56, 56, true},  {"32x7x7x512_nhwc", 32, 512, 7, 7, true},
    {"64x32x28x28_nchw", 64, 32, 28, 28, false}, {"32x64x56x56_nchw", 32, 64, 56, 56, false},
};

cfx::Runtime* g_runtime = nullptr;

int64_t Elements(const Spec& s) { return s.n * s.c * s.h * s.w; }

cfx::TensorShape XShape(const Spec& s) {
  return s.nhwc ? cfx::TensorShape({s.n, s.h, s.w, s.c}) : cfx::TensorShape({s.n, s.c, s.h, s.w});
}

cfx::Tensor Filled(const cfx::TensorShape& shape, unsigned seed, float lo, float hi) {
  cfx::Tensor t(cfx::DT_FLOAT, shape);
  unsigned x = seed;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = lo + (hi - lo) * static_cast<float>(x >> 8) / static_cast<float>(1u << 24);
  }
  return t;
}

// Inputs shared by every variant of one shape (so that they compare like for like).
struct Operands {
  cfx::Tensor x, dy, scale, offset, mean, variance;
};
const Operands& OperandsFor(const Spec& s) {
  static std::map<std::string, Operands> operands;
  auto it = operands.find(s.name);
  if (it == operands.end()) {
    const cfx::TensorShape c({s.c});
    it = operands
             .emplace(s.name, Operands{Filled(XShape(s), 1, -2, 3), Filled(XShape(s), 2, -1, 1),
                                       Filled(c, 3, 0.5, 2), Filled(c, 4, -1, 1),
                                       Filled(c, 5, -1, 1), Filled(c, 6, 0.5, 2)})
             .first;
  }
  return it->second;
}

double Bytes(const Spec& s, bool backward) { return 4.0 * Elements(s) * (backward ? 3 : 2); }

void BM_Conflux(benchmark::State& state, Spec s, bool backward) {
  auto device = g_runtime->FindDevice("CPU:0");
  if (!device.ok()) return state.SkipWithError(device.status().ToString().c_str());
  cfx::NodeDef node;
  node.name = "bn";
  node.op = backward ? "FusedBatchNormGradV3" : "FusedBatchNormV3";
  node.input = {"a", "b", "c", "d", "e"};
  if (backward) node.input.push_back("f");
  node.attr["T"] = cfx::AttrValue::Type(cfx::DT_FLOAT);
  node.attr["U"] = cfx::AttrValue::Type(cfx::DT_FLOAT);
  node.attr["epsilon"] = cfx::AttrValue::Float(1e-3f);
  node.attr["data_format"] = cfx::AttrValue::String(s.nhwc ? "NHWC" : "NCHW");
  node.attr["is_training"] = cfx::AttrValue::Bool(true);
  auto runner = cfx::KernelRunner::Create(*g_runtime, *device, node);
  if (!runner.ok()) return state.SkipWithError(runner.status().ToString().c_str());
  const Operands& in = OperandsFor(s);
  const std::vector<cfx::Tensor> inputs =
      backward
          ? std::vector<cfx::Tensor>{in.dy,       in.x,
                                     in.scale,    in.mean,
                                     in.variance, cfx::Tensor(cfx::DT_FLOAT, cfx::TensorShape())}
          : std::vector<cfx::Tensor>{in.x, in.scale, in.offset, in.mean, in.variance};
  cfx::bench::RateTimer timer(state, "GB/s", 1e9);
  for (auto _ : state) {
    timer.Start();
    auto out = (*runner)->RunOnDevice(inputs);
    timer.Stop();
    if (!out.ok()) return state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out->front().raw_data());
  }
  timer.Report(Bytes(s, backward));
}

void BM_OneDnn(benchmark::State& state, Spec s, bool backward) {
  using dnnl::memory;
  using dnnl::normalization_flags;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::desc md({s.n, s.c, s.h, s.w}, memory::data_type::f32,
                        s.nhwc ? memory::format_tag::nhwc : memory::format_tag::nchw);
  const memory::desc vd({s.c}, memory::data_type::f32, memory::format_tag::a);
  const auto flags = normalization_flags::use_scale | normalization_flags::use_shift;
  const dnnl::batch_normalization_forward::primitive_desc fwd_pd(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, md, 1e-3f, flags),
      engine);
  const Operands& in = OperandsFor(s);
  cfx::Tensor y(cfx::DT_FLOAT, XShape(s)), dx(cfx::DT_FLOAT, XShape(s));
  std::vector<float> mean(s.c), variance(s.c), dscale(s.c), dshift(s.c);
  auto mem = [&](const memory::desc& d, const void* p) {
    return memory(d, engine, const_cast<void*>(p));
  };
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem(md, in.x.raw_data())},
                                          {DNNL_ARG_DST, mem(md, y.raw_data())},
                                          {DNNL_ARG_SCALE, mem(vd, in.scale.raw_data())},
                                          {DNNL_ARG_SHIFT, mem(vd, in.offset.raw_data())},
                                          {DNNL_ARG_MEAN, mem(vd, mean.data())},
                                          {DNNL_ARG_VARIANCE, mem(vd, variance.data())},
                                          {DNNL_ARG_DIFF_DST, mem(md, in.dy.raw_data())},
                                          {DNNL_ARG_DIFF_SRC, mem(md, dx.raw_data())},
                                          {DNNL_ARG_DIFF_SCALE, mem(vd, dscale.data())},
                                          {DNNL_ARG_DIFF_SHIFT, mem(vd, dshift.data())}};
  const dnnl::batch_normalization_forward fwd(fwd_pd);
  fwd.execute(stream, args);  // the batch statistics that the backward pass reads
  stream.wait();
  dnnl::primitive prim = fwd;
  if (backward) {
    const dnnl::batch_normalization_backward::primitive_desc bwd_pd(
        dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, md, md, 1e-3f, flags),
        engine, fwd_pd);
    prim = dnnl::batch_normalization_backward(bwd_pd);
  }
  cfx::bench::RateTimer timer(state, "GB/s", 1e9);
  for (auto _ : state) {
    timer.Start();
    prim.execute(stream, args);
    stream.wait();
    timer.Stop();
    benchmark::DoNotOptimize(backward ? dx.raw_data() : y.raw_data());
  }
  timer.Report(Bytes(s, backward));
}

void PrintSummary(const cfx::bench::RateReporter& r) {
  std::printf("\nBatch normalization, training, float: GB/s (median of repetitions)\n");
  std::printf("%-20s %-9s %10s %10s %14s\n", "shape", "pass", "conflux", "onednn",
              "conflux/onednn");
  for (const Spec& s : kSpecs)
    for (const char* pass : {"forward", "backward"}) {
      const double ours = r.Get(std::string("conflux/") + pass + "/" + s.name).median;
      const double ref = r.Get(std::string("onednn/") + pass + "/" + s.name).median;
      std::printf("%-20s %-9s %10.2f %10.2f %14.3f\n", s.name, pass, ours, ref, ours / ref);
    }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::unique_ptr<cfx::Runtime> runtime = cfx::bench::BuildTreeRuntime(CONFLUX_BUILD_PLUGIN_DIR);
  if (runtime == nullptr) return 1;
  g_runtime = runtime.get();
  for (const Spec& s : kSpecs)
    for (bool backward : {false, true})
      for (auto [name, fn] : {std::pair{"conflux", &BM_Conflux}, std::pair{"onednn", &BM_OneDnn}}) {
        const std::string full =
            std::string(name) + (backward ? "/backward/" : "/forward/") + s.name;
        benchmark::RegisterBenchmark(full.c_str(), fn, s, backward)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
  cfx::bench::RateReporter reporter("GB/s");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  PrintSummary(reporter);
  benchmark::Shutdown();
  return 0;
}
