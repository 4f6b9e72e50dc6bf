// Optimizer steps on one large variable (3.2M floats, the size of a small CNN's weights):
//
//   Session/ApplyAdam, Session/ResourceApplyAdam, Session/ResourceApplyMomentum,
//   Session/ResourceApplyGradientDescent: one Session::Run of the op per iteration (gradient and
//   hyperparameters are constants; executors built before the timing);
//   Reference/AdamLoop: the same Adam update as a plain single-threaded loop over the same
//   arrays, compiled here: the ratio to it shows what the kernel's fused, parallel pass gains.
//
// Counters: GB/s of variable, slot and gradient traffic (each array read once, each variable
// written once), wall time.
//
//   optimizer_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"
#include "conflux/session.h"

namespace {

constexpr int64_t kElements = 3200000;

cfx::Runtime& TheRuntime() {
  static std::unique_ptr<cfx::Runtime> rt = [] {
    cfx::Config config = cfx::Config::Default();
    config.plugin_paths = {CONFLUX_BUILD_PLUGIN_DIR};
    auto created = cfx::Runtime::Create(config);
    if (!created.ok()) {
      fprintf(stderr, "cannot create the runtime: %s\n", created.status().ToString().c_str());
      std::exit(1);
    }
    return std::move(created).value();
  }();
  return *rt;
}

cfx::Tensor Filled(int64_t n, float value) {
  cfx::Tensor t(cfx::DT_FLOAT, cfx::TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = value;
  return t;
}

cfx::NodeDef Node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                  std::vector<std::pair<std::string, cfx::AttrValue>> attrs) {
  cfx::NodeDef n;
  n.name = name;
  n.op = op;
  n.input = std::move(inputs);
  for (auto& [k, v] : attrs) n.attr[k] = v;
  return n;
}

cfx::NodeDef Const(const std::string& name, const cfx::Tensor& value) {
  return Node(name, "Const", {},
              {{"dtype", cfx::AttrValue::Type(value.dtype())},
               {"value", cfx::AttrValue::TensorValue(value)}});
}

// Variables `names` (resource or reference) initialized by "init", and "step" = op(variables,
// scalars..., grad) with `scalars` in the op's order and the gradient at `grad_position` among
// the non-variable inputs.
cfx::GraphDef StepGraph(const std::string& op, bool resource, const std::vector<std::string>& vars,
                        const std::vector<float>& scalars, size_t grad_position) {
  cfx::GraphDef g;
  const auto f = cfx::AttrValue::Type(cfx::DT_FLOAT);
  std::vector<std::string> inputs, inits;
  for (const std::string& v : vars) {
    g.node.push_back(Node(v, resource ? "VarHandleOp" : "VariableV2", {},
                          {{"dtype", f},
                           {"shape", cfx::AttrValue::Shape(cfx::PartialTensorShape({kElements}))},
                           {"shared_name", cfx::AttrValue::String("bench_" + op + v)}}));
    g.node.push_back(Const(v + "_value", Filled(kElements, 0.5f)));
    g.node.push_back(resource
                         ? Node("init_" + v, "AssignVariableOp", {v, v + "_value"}, {{"dtype", f}})
                         : Node("init_" + v, "Assign", {v, v + "_value"}, {{"T", f}}));
    inputs.push_back(v);
    inits.push_back("^init_" + v);
  }
  std::vector<std::string> rest;
  for (size_t k = 0; k < scalars.size(); ++k) {
    const std::string name = "s" + std::to_string(k);
    g.node.push_back(Const(name, cfx::Tensor::Scalar(cfx::DT_FLOAT, scalars[k])));
    rest.push_back(name);
  }
  g.node.push_back(Const("grad", Filled(kElements, 0.01f)));
  rest.insert(rest.begin() + static_cast<std::ptrdiff_t>(grad_position), "grad");
  inputs.insert(inputs.end(), rest.begin(), rest.end());
  g.node.push_back(Node("init", "NoOp", inits, {}));
  g.node.push_back(Node("step", op, inputs, {{"T", f}}));
  return g;
}

void RunSteps(benchmark::State& state, const std::string& op, bool resource,
              const std::vector<std::string>& vars, const std::vector<float>& scalars,
              size_t grad_position) {
  auto session =
      cfx::Session::Create(&TheRuntime(), StepGraph(op, resource, vars, scalars, grad_position));
  if (!session.ok()) return state.SkipWithError(session.status().ToString().c_str());
  cfx::Status s = (*session)->Run({}, {}, {"init"}, nullptr);
  if (s.ok()) s = (*session)->Run({}, {}, {"step"}, nullptr);  // builds the executors
  if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  for (auto _ : state) {
    s = (*session)->Run({}, {}, {"step"}, nullptr);
    if (!s.ok()) return state.SkipWithError(s.ToString().c_str());
  }
  // Every variable read and written, the gradient read.
  const double bytes = static_cast<double>(kElements) * sizeof(float) * (2 * vars.size() + 1);
  state.counters["GB/s"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

const std::vector<float> kAdamScalars = {0.9f, 0.999f, 0.001f, 0.9f, 0.999f, 1e-7f};

void BM_ApplyAdam(benchmark::State& state) {
  RunSteps(state, "ApplyAdam", false, {"var", "m", "v"}, kAdamScalars, 6);
}
void BM_ResourceApplyAdam(benchmark::State& state) {
  RunSteps(state, "ResourceApplyAdam", true, {"var", "m", "v"}, kAdamScalars, 6);
}
void BM_ResourceApplyMomentum(benchmark::State& state) {
  RunSteps(state, "ResourceApplyMomentum", true, {"var", "accum"}, {0.01f, 0.9f}, 1);
}
void BM_ResourceApplyGradientDescent(benchmark::State& state) {
  RunSteps(state, "ResourceApplyGradientDescent", true, {"var"}, {0.01f}, 1);
}

// The reference: Adam as a plain loop on one thread.
void BM_AdamLoop(benchmark::State& state) {
  std::vector<float> var(kElements, 0.5f), m(kElements, 0.5f), v(kElements, 0.5f),
      grad(kElements, 0.01f);
  const float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
  const float lr_t = 0.001f * std::sqrt(1 - 0.999f) / (1 - 0.9f);
  for (auto _ : state) {
    for (int64_t i = 0; i < kElements; ++i) {
      m[i] += (grad[i] - m[i]) * (1 - beta1);
      v[i] += (grad[i] * grad[i] - v[i]) * (1 - beta2);
      var[i] -= m[i] * lr_t / (std::sqrt(v[i]) + epsilon);
    }
    benchmark::DoNotOptimize(var.data());
    benchmark::ClobberMemory();
  }
  const double bytes = static_cast<double>(kElements) * sizeof(float) * 7;
  state.counters["GB/s"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
}

BENCHMARK(BM_ApplyAdam)->Name("Session/ApplyAdam")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ResourceApplyAdam)
    ->Name("Session/ResourceApplyAdam")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ResourceApplyMomentum)
    ->Name("Session/ResourceApplyMomentum")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ResourceApplyGradientDescent)
    ->Name("Session/ResourceApplyGradientDescent")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_AdamLoop)->Name("Reference/AdamLoop")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
