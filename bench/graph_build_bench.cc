// The cost of building a graph with the C++ client API, at 1k to 50k nodes: whether building n
// nodes costs O(n) or O(n^2). The graph is a chain of blocks of 28 nodes; each block mixes plain
// ops (Reshape by a constant shape, a broadcasting Add, MatMul, Identity) with the builders that
// ask for static shapes while building (layers::Flatten, layers::Dense, TensorArray::Write, each
// through Scope::StaticShape):
//
//   x [8, 16] -> Reshape [4, 32] -> Reshape [8, 16] -> Add(bias [16]) -> MatMul(w [16, 16])
//     -> Identity -> layers::Flatten -> layers::Dense(16) -> TensorArray::Write -> next block
//
// A timed iteration builds a fresh graph of at least `nodes` nodes (destroying it is not timed).
// Counters: us_per_node (build time / nodes, wall clock) and nodes (the graph's size).
//
//   graph_build_bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>

#include "bench_util.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/tensor_array.h"
#include "conflux/runtime.h"

namespace {

using cfx::Output;
using cfx::Scope;
namespace ops = cfx::ops;

cfx::Runtime& BenchRuntime() {
  static std::unique_ptr<cfx::Runtime> runtime =
      cfx::bench::BuildTreeRuntime(CONFLUX_BUILD_PLUGIN_DIR);
  if (runtime == nullptr) std::exit(1);
  return *runtime;
}

cfx::Tensor Filled(cfx::TensorShape shape, float value) {
  cfx::Tensor t(cfx::DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.at<float>(i) = value;
  return t;
}

// Appends blocks to the graph of `root` until it holds at least `nodes` nodes.
void BuildChain(const Scope& root, int nodes) {
  Output x = ops::Placeholder(root, cfx::DT_FLOAT, ops::PlaceholderAttrs().Shape({8, 16}));
  cfx::TensorArrayOptions grows;
  grows.dynamic_size = true;
  cfx::TensorArray ta(root, cfx::DT_FLOAT, ops::Const(root, 1), grows);
  int block = 0;
  while (root.graph()->num_nodes() < nodes && root.ok()) {
    const Scope s = root.NewSubScope("block");
    Output h = ops::Reshape(s, x, {4, 32});
    h = ops::Reshape(s, h, {8, 16});
    h = ops::Add(s, h, ops::Const(s, Filled({16}, 0.5f)));
    h = ops::MatMul(s, h, ops::Const(s, Filled({16, 16}, 0.25f)));
    h = ops::Identity(s, h);
    h = cfx::layers::Flatten(s, h);
    h = cfx::layers::Dense(s, h, 16);
    ta = ta.Write(s, ops::Const(s, block++), h);
    x = h;
  }
}

void BM_BuildChain(benchmark::State& state) {
  cfx::Runtime& runtime = BenchRuntime();
  const int nodes = static_cast<int>(state.range(0));
  int built = 0;
  double seconds = 0;  // building only, as the wall clock sees it
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    std::optional<Scope> root(Scope::NewRootScope(&runtime));
    BuildChain(*root, nodes);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.PauseTiming();
    if (!root->ok()) {
      state.SkipWithError(root->status().ToString().c_str());
      break;
    }
    built = root->graph()->num_nodes();
    root.reset();
    state.ResumeTiming();
  }
  state.counters["nodes"] = built;
  state.counters["us_per_node"] =
      seconds * 1e6 / (static_cast<double>(state.iterations()) * static_cast<double>(built));
}

BENCHMARK(BM_BuildChain)
    ->ArgName("nodes")
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(10000)
    ->Arg(50000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
