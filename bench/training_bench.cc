// Training-step time of two models built with the C++ client API, on the default config:
//   cnn: the Fashion-MNIST tutorial CNN of examples/fashion_mnist (batch 64, dropout 0.5, Adam)
//   mlp: an MLP 784-512-512-10 with ReLU (batch 128, Adam)
// Each step feeds a fixed random batch and runs loss + train op, as a training loop does. After
// warm-up steps, `--reps` repetitions of `--steps` steps are timed; one JSON line per model gives
// the milliseconds per step of each repetition, and the allocator's peak bytes during one step
// on GPU:0 where the runtime has one, else on CPU:0 (what is live before the step, variables and
// Adam slots included, plus what the step allocates). bench/training_vs_torch.py runs this
// next to the same models in PyTorch.
//
// With `--resident 1` the batch is a constant of the graph, kept on the device that uses it, and
// a step runs the train op alone; the last step of each repetition also fetches the loss, which
// waits for everything before it. That is how a GPU is measured (PyTorch's batch sits on the GPU
// and its steps do not synchronize).
//
//   build/bin/training_bench [--model cnn|mlp|all] [--steps 20] [--reps 5] [--warmup 5]
//                            [--config FILE] [--profile 1] [--batch N] [--resident 1]
#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "conflux/allocator.h"
#include "conflux/cc/client_session.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/nn_ops.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/variables.h"
#include "conflux/config.h"
#include "conflux/runtime.h"
#include "../examples/fashion_mnist/model.h"

namespace {

using cfx::Output;
using cfx::Status;
namespace ops = cfx::ops;
namespace layers = cfx::layers;

struct Options {
  std::string model = "all";
  std::string config;  // empty: the default config
  bool profile = false;  // print the time per op type of one traced step (to stderr)
  bool resident = false;  // the batch is a graph constant; steps fetch nothing but the last
  int steps = 20, reps = 5, warmup = 5;
  int batch = 0;  // 0: each model's default (CNN 64, MLP 128)
};

// The model's inputs: placeholders fed every step, or (resident) the batch as constants.
struct Inputs {
  Output images, labels, training;
};

Inputs MakeInputs(const cfx::Scope& root, bool resident, const cfx::Tensor& images,
                  const cfx::Tensor& labels) {
  if (resident)
    return {ops::Const(root, images), ops::Const(root, labels), ops::Const(root, true)};
  return {ops::Placeholder(root, cfx::DT_FLOAT), ops::Placeholder(root, cfx::DT_INT32),
          ops::Placeholder(root, cfx::DT_BOOL)};
}

struct Net {
  Output images, labels, training, loss;
  cfx::Operation train;
};

Net BuildCnn(const cfx::Scope& root, const Inputs& in) {
  Net n;
  n.images = in.images;
  n.labels = in.labels;
  n.training = in.training;
  Output images = ops::Reshape(root, n.images, {-1, 28, 28, 1});
  fashion::Model m = fashion::BuildModel(root, images, n.labels, n.training, 0.5f);
  n.loss = m.loss;
  n.train = cfx::AdamOptimizer(1e-3f).Minimize(root, m.loss, {}, cfx::GlobalStep(root));
  return n;
}

Net BuildMlp(const cfx::Scope& root, const Inputs& in) {
  Net n;
  n.images = in.images;
  n.labels = in.labels;
  Output x = ops::Reshape(root, n.images, {-1, 784});
  cfx::Scope s = root.NewSubScope("mlp");
  Output h = layers::Dense(s, x, 512, layers::Activation::kRelu);
  h = layers::Dense(s, h, 512, layers::Activation::kRelu);
  Output logits = layers::Dense(s, h, 10);
  n.loss = ops::Mean(root, ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, n.labels).loss, 0);
  n.train = cfx::AdamOptimizer(1e-3f).Minimize(root, n.loss, {}, cfx::GlobalStep(root));
  return n;
}

int Bench(cfx::Runtime* rt, const std::string& name, int batch, const Options& o) {
  cfx::Tensor images(cfx::DT_FLOAT, cfx::TensorShape({batch, 28, 28, 1}));
  cfx::Tensor labels(cfx::DT_INT32, cfx::TensorShape({batch}));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  for (int64_t i = 0; i < images.num_elements(); ++i) images.data<float>()[i] = pixel(gen);
  for (int i = 0; i < batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(gen() % 10);
  cfx::Scope root = cfx::Scope::NewRootScope(rt);
  const Inputs in = MakeInputs(root, o.resident, images, labels);
  Net net = name == "cnn" ? BuildCnn(root, in) : BuildMlp(root, in);
  cfx::Operation init = cfx::GlobalVariablesInitializer(root);
  if (!root.ok()) {
    std::fprintf(stderr, "training_bench: %s\n", root.status().ToString().c_str());
    return 1;
  }
  cfx::ClientSession session(root, rt);
  cfx::ClientSession::FeedType feeds;
  if (!o.resident) {
    feeds = {{net.images, images}, {net.labels, labels}};
    if (name == "cnn") feeds.emplace_back(net.training, cfx::Input(true));
  }
  std::vector<cfx::Tensor> out;
  Status s = session.Run({}, {}, {init}, nullptr);
  // A step; `fetch` (always, unless resident) also brings the loss back.
  auto run = [&](bool fetch) {
    if (!s.ok()) return;
    if (fetch || !o.resident) {
      s = session.Run(feeds, {net.loss}, {net.train}, &out);
    } else {
      s = session.Run(feeds, {}, {net.train}, nullptr);
    }
  };
  auto step = [&] { run(false); };
  for (int i = 0; i < o.warmup; ++i) step();
  run(true);
  // Peak allocator bytes of one step, on GPU:0 where the runtime has one, else on CPU:0.
  cfx::Allocator* alloc = (*rt->FindDevice("CPU:0"))->allocator();
  if (auto gpu = rt->FindDevice("GPU:0"); gpu.ok()) alloc = (*gpu)->allocator();
  const int64_t live_before = alloc->stats().bytes_in_use;
  alloc->ResetPeak();
  run(true);
  const int64_t peak = alloc->stats().peak_bytes_in_use;
  if (o.profile && s.ok()) {
    cfx::RunOptions options;
    options.trace = true;
    cfx::RunMetadata metadata;
    s = session.Run(options, feeds, {net.loss}, {net.train}, &out, &metadata);
    std::map<std::string, std::pair<int64_t, int>> by_op;  // op -> (microseconds, nodes)
    for (const auto& device : metadata.step_stats.devices)
      for (const auto& n : device.nodes) {
        by_op[n.op].first += n.end_us - n.start_us;
        by_op[n.op].second += 1;
      }
    std::vector<std::pair<int64_t, std::string>> sorted;
    for (const auto& [op, t] : by_op) sorted.emplace_back(t.first, op);
    std::sort(sorted.rbegin(), sorted.rend());
    std::fprintf(stderr, "%s: one traced step, time per op type\n", name.c_str());
    for (const auto& [us, op] : sorted)
      std::fprintf(stderr, "  %-36s %8.3f ms  %3d nodes\n", op.c_str(), us / 1e3,
                   by_op[op].second);
  }
  std::vector<double> ms;
  for (int r = 0; r < o.reps && s.ok(); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < o.steps; ++i) run(i + 1 == o.steps);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count() / o.steps);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "training_bench: %s: %s\n", name.c_str(), s.ToString().c_str());
    return 1;
  }
  std::printf("{\"model\": \"%s\", \"batch\": %d, \"loss\": %.4f, \"ms_per_step\": [", name.c_str(),
              batch, out[0].at<float>(0));
  for (size_t i = 0; i < ms.size(); ++i) std::printf("%s%.3f", i ? ", " : "", ms[i]);
  std::printf("], \"live_bytes_before_step\": %lld, \"peak_bytes_in_step\": %lld}\n",
              static_cast<long long>(live_before), static_cast<long long>(peak));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--model") o.model = v;
    else if (a == "--steps") o.steps = std::stoi(v);
    else if (a == "--reps") o.reps = std::stoi(v);
    else if (a == "--warmup") o.warmup = std::stoi(v);
    else if (a == "--config") o.config = v;
    else if (a == "--profile") o.profile = v == "1" || v == "true";
    else if (a == "--resident") o.resident = v == "1" || v == "true";
    else if (a == "--batch") o.batch = std::stoi(v);
    else {
      std::fprintf(stderr,
                   "training_bench: unknown flag %s (--model, --steps, --reps, --warmup, "
                   "--config, --profile, --batch, --resident)\n",
                   a.c_str());
      return 2;
    }
  }
  if (o.model != "cnn" && o.model != "mlp" && o.model != "all") {
    std::fprintf(stderr, "training_bench: --model must be cnn, mlp or all, got %s\n",
                 o.model.c_str());
    return 2;
  }
  auto config = o.config.empty() ? cfx::StatusOr<cfx::Config>(cfx::Config::Default())
                                 : cfx::Config::FromFile(o.config);
  if (!config.ok()) {
    std::fprintf(stderr, "training_bench: %s\n", config.status().ToString().c_str());
    return 2;
  }
  auto rt = cfx::Runtime::Create(*config);
  if (!rt.ok()) {
    std::fprintf(stderr, "training_bench: %s\n", rt.status().ToString().c_str());
    return 1;
  }
  int rc = 0;
  if (o.model != "mlp") rc |= Bench(rt->get(), "cnn", o.batch > 0 ? o.batch : 64, o);
  if (o.model != "cnn") rc |= Bench(rt->get(), "mlp", o.batch > 0 ? o.batch : 128, o);
  return rc;
}
