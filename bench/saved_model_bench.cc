// The per-call cost of serving a SavedModel: a prepared call (SavedModel::Callable, TensorFlow's
// MakeCallable) and the by-key Run, each against a bare Session::Run of the model's session with
// the same feeds and fetches, in one run. The models are the test fixtures that TensorFlow
// exported (tests/fixtures/savedmodel/): a tf.Module's `scale` signature (a product and a sum,
// a step of a few microseconds, where the overhead shows) and a Keras MLP's `serve`.
//
//   build/bin/saved_model_bench --benchmark_repetitions=5
//
// Ends with the median time per call of each and the difference from Session::Run; BM_Paired
// alternates the two in one loop and reports their difference as overhead_us, the steadier
// figure.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "conflux/saved_model.h"
#include "conflux/session.h"

namespace {

struct Case {
  const char* dir;
  const char* signature;
  const char* input;
  cfx::TensorShape shape;
};

const Case kCases[] = {
    {"module_two_sigs", "scale", "x", cfx::TensorShape({2, 3})},
    {"keras_mlp", "serve", "x", cfx::TensorShape({4, 8})},
};

struct Loaded {
  std::unique_ptr<cfx::SavedModel> model;
  cfx::SavedModel::Callable call;
  cfx::Tensor x;
  std::vector<std::pair<std::string, cfx::Tensor>> feeds;
  std::vector<std::string> fetches;
};

cfx::Runtime& BenchRuntime() {
  static std::unique_ptr<cfx::Runtime> rt = [] {
    auto r = cfx::bench::BuildTreeRuntime(CONFLUX_BUILD_PLUGIN_DIR);
    if (r == nullptr) std::exit(1);
    return r;
  }();
  return *rt;
}

Loaded& Model(int i) {
  static std::map<int, Loaded> models;
  auto it = models.find(i);
  if (it != models.end()) return it->second;
  const Case& c = kCases[i];
  const std::string dir = std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/savedmodel/" + c.dir;
  auto model = cfx::SavedModel::Load(&BenchRuntime(), dir);
  if (!model.ok()) {
    std::fprintf(stderr, "%s: %s\n", dir.c_str(), model.status().ToString().c_str());
    std::exit(1);
  }
  Loaded l;
  l.model = std::move(*model);
  auto call = l.model->Prepare(c.signature, {c.input});
  if (!call.ok()) {
    std::fprintf(stderr, "%s\n", call.status().ToString().c_str());
    std::exit(1);
  }
  l.call = *call;
  l.x = cfx::Tensor(cfx::DT_FLOAT, c.shape);
  for (int64_t k = 0; k < l.x.num_elements(); ++k) l.x.at<float>(k) = 0.25f * static_cast<float>(k % 7);
  const cfx::Signature& sig = l.model->signatures().at(c.signature);
  l.feeds = {{sig.inputs.at(c.input).tensor_name, l.x}};
  for (const std::string& key : l.call.output_keys()) l.fetches.push_back(sig.outputs.at(key).tensor_name);
  return models.emplace(i, std::move(l)).first->second;
}

void BM_SessionRun(benchmark::State& state) {
  Loaded& m = Model(static_cast<int>(state.range(0)));
  std::vector<cfx::Tensor> out;
  for (auto _ : state) {
    out.clear();
    cfx::Status s = m.model->session()->Run(cfx::RunOptions(), m.feeds, m.fetches, {}, &out, nullptr);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_CallableRun(benchmark::State& state) {
  Loaded& m = Model(static_cast<int>(state.range(0)));
  const std::vector<cfx::Tensor> inputs{m.x};
  for (auto _ : state) {
    auto out = m.call.Run(inputs);
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
}

void BM_SignatureRun(benchmark::State& state) {
  Loaded& m = Model(static_cast<int>(state.range(0)));
  const Case& c = kCases[state.range(0)];
  const std::map<std::string, cfx::Tensor> inputs{{c.input, m.x}};
  for (auto _ : state) {
    auto out = m.model->Run(c.signature, inputs);
    if (!out.ok()) state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
}

// Session::Run and the prepared call alternating in one loop, each timed on its own: drift in
// the machine's speed (frequency, other load) falls on both alike. Reports the mean time of each
// and their difference (overhead_us) as counters.
void BM_Paired(benchmark::State& state) {
  Loaded& m = Model(static_cast<int>(state.range(0)));
  const std::vector<cfx::Tensor> inputs{m.x};
  std::vector<cfx::Tensor> out;
  double session_s = 0, call_s = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    out.clear();
    cfx::Status s = m.model->session()->Run(cfx::RunOptions(), m.feeds, m.fetches, {}, &out, nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    auto y = m.call.Run(inputs);
    const auto t2 = std::chrono::steady_clock::now();
    if (!s.ok() || !y.ok()) state.SkipWithError("a call failed");
    benchmark::DoNotOptimize(y);
    session_s += std::chrono::duration<double>(t1 - t0).count();
    call_s += std::chrono::duration<double>(t2 - t1).count();
    ++n;
  }
  state.counters["session_us"] = session_s / static_cast<double>(n) * 1e6;
  state.counters["callable_us"] = call_s / static_cast<double>(n) * 1e6;
  state.counters["overhead_us"] = (call_s - session_s) / static_cast<double>(n) * 1e6;
}

// Medians of the repetitions, by benchmark name with its argument.
class MedianReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs)
      if (run.run_type == Run::RT_Aggregate && run.aggregate_name == "median")
        ns_[run.run_name.function_name + "/" + run.run_name.args] =
            run.GetAdjustedRealTime() * 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
  }
  double Ns(const std::string& name) const {
    auto it = ns_.find(name);
    return it == ns_.end() ? -1 : it->second;
  }

 private:
  std::map<std::string, double> ns_;
};

}  // namespace

BENCHMARK(BM_SessionRun)->ArgName("model")->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CallableRun)->ArgName("model")->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SignatureRun)->ArgName("model")->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Paired)->ArgName("model")->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  MedianReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nper call, medians (needs --benchmark_repetitions):\n");
  for (int i = 0; i < 2; ++i) {
    const std::string arg = "model:" + std::to_string(i);
    const double session = reporter.Ns("BM_SessionRun/" + arg);
    const double callable = reporter.Ns("BM_CallableRun/" + arg);
    const double by_key = reporter.Ns("BM_SignatureRun/" + arg);
    if (session < 0 || callable < 0) continue;
    std::printf("  %-16s %-6s Session::Run %.2f us  Callable %.2f us (%+.3f us)  Run by key %.2f us (%+.3f us)\n",
                kCases[i].dir, kCases[i].signature, session / 1e3, callable / 1e3,
                (callable - session) / 1e3, by_key / 1e3, (by_key - session) / 1e3);
  }
  benchmark::Shutdown();
  return 0;
}
