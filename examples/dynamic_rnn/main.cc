// Trains an LSTM run by a dynamic RNN (a WhileLoop over TensorArrays, EuroSys 2018 §6) on the
// adding problem, with gradients through the loop and Adam, and reports the mean squared error
// and accuracy (|prediction - target| < 0.04) on a held-out batch.
//
//   build/bin/dynamic_rnn [--steps 3000] [--hidden 64] [--batch 64] [--min-len 10]
//                         [--max-len 60] [--lr 0.003] [--seed 1] [--eval-batch 1000]
//                         [--config FILE] [--expect-accuracy F] [--expect-loss-drop F]
//                         [--swap-memory 1]
//
// Every step draws a fresh batch from the step's own seed (--seed and the step number), padded
// to --max-len steps; the loop runs as many iterations as the batch's longest sequence. The
// held-out batch has a seed no training step uses. --expect-accuracy F exits with 3 unless the
// held-out accuracy reaches F; --expect-loss-drop F exits with 3 unless the mean loss of the last
// 10 steps is below (1 - F) times that of the first 10 (for ctest). With a cluster config
// (mpirun -n 2 ... --config config/examples/cluster-2.yaml) it trains data-parallel, one replica
// per worker task on its share of --batch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/console.h"
#include "conflux/cc/client_session.h"
#include "conflux/cc/distributed.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/variables.h"
#include "conflux/config.h"
#include "conflux/runtime.h"
#include "lstm.h"

namespace rnn {
namespace {

struct Flags {
  int64_t steps = 3000;
  int64_t hidden = 64;
  int64_t batch = 64;
  int64_t min_len = 10, max_len = 60;
  float lr = 3e-3f;
  uint64_t seed = 1;
  int64_t eval_batch = 1000;
  std::string config;
  double expect_accuracy = -1;   // >= 0: fail unless the held-out accuracy reaches it
  double expect_loss_drop = -1;  // > 0: fail unless the loss fell by this fraction
  bool swap_memory = false;      // the loop's gradient stacks may move to host memory
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "dynamic_rnn: %s needs a value\n", a.c_str());
      return false;
    }
    const char* v = argv[++i];
    if (a == "--steps")
      f->steps = std::atoll(v);
    else if (a == "--hidden")
      f->hidden = std::atoll(v);
    else if (a == "--batch")
      f->batch = std::atoll(v);
    else if (a == "--min-len")
      f->min_len = std::atoll(v);
    else if (a == "--max-len")
      f->max_len = std::atoll(v);
    else if (a == "--lr")
      f->lr = static_cast<float>(std::atof(v));
    else if (a == "--seed")
      f->seed = std::strtoull(v, nullptr, 10);
    else if (a == "--eval-batch")
      f->eval_batch = std::atoll(v);
    else if (a == "--config")
      f->config = v;
    else if (a == "--expect-accuracy")
      f->expect_accuracy = std::atof(v);
    else if (a == "--expect-loss-drop")
      f->expect_loss_drop = std::atof(v);
    else if (a == "--swap-memory")
      f->swap_memory = std::atoi(v) != 0;
    else {
      std::fprintf(stderr, "dynamic_rnn: unknown flag %s\n", a.c_str());
      return false;
    }
  }
  if (f->steps <= 0 || f->hidden <= 0 || f->batch <= 0 || f->eval_batch <= 0 || !(f->lr > 0)) {
    std::fprintf(stderr,
                 "dynamic_rnn: --steps, --hidden, --batch, --eval-batch and --lr must be "
                 "positive\n");
    return false;
  }
  if (f->min_len < 2 || f->max_len < f->min_len) {
    std::fprintf(stderr, "dynamic_rnn: need 2 <= --min-len <= --max-len\n");
    return false;
  }
  return true;
}

// The seed of training step `step`'s batch; kHeldOut is no step's.
uint64_t BatchSeed(uint64_t seed, uint64_t step) { return seed << 32 | step; }
constexpr uint64_t kHeldOut = 0xffffffffu;

using examples::Bar;
using examples::Duration;
namespace ops = cfx::ops;

int Fail(const cfx::Status& s) {
  std::fprintf(stderr, "\ndynamic_rnn: %s\n", s.ToString().c_str());
  return 1;
}

int Run(const Flags& flags) {
  auto runtime = examples::RuntimeFromConfig(flags.config);
  if (!runtime.ok()) return Fail(runtime.status());
  cfx::Runtime* rt = runtime->get();

  cfx::Scope root = cfx::Scope::NewRootScope(rt);
  AddingModelOptions options;
  options.units = flags.hidden;
  options.time_steps = flags.max_len;
  options.seed = static_cast<int64_t>(flags.seed);
  options.swap_memory = flags.swap_memory;
  // One replica per worker task of a cluster (one without; between graphs, this task's), each
  // on its share of the batch; their gradients, which come out of the loop's backward loop, are
  // averaged by all-reduce.
  cfx::DataParallel dp(root);
  const int replicas = dp.num_replicas(), members = dp.group_size();
  const int first_member = replicas < members ? examples::TaskIndex(*rt) : 0;
  if (flags.batch % members != 0)
    return Fail(cfx::errors::InvalidArgument("--batch ", flags.batch, " is not a multiple of the ",
                                             members, " replicas"));
  std::vector<AddingModel> models;
  std::vector<cfx::Output> losses;
  cfx::InputList accuracies;
  for (int r = 0; r < replicas; ++r) {
    auto model = BuildAddingReplica(dp.ReplicaScope(r), options);
    if (!model.ok()) return Fail(model.status());
    models.push_back(*model);
    losses.push_back(model->loss);
    accuracies.push_back(model->accuracy);
  }
  cfx::AdamOptimizer adam(flags.lr);
  cfx::DistributedOptimizer optimizer(&adam, dp);
  cfx::Operation train = optimizer.Minimize(root, losses, cfx::GlobalStep(root));
  // The step's loss and accuracy: means over this process's replicas.
  cfx::Output loss =
      ops::Mean(root, ops::Pack(root, cfx::InputList(losses.begin(), losses.end())), 0);
  cfx::Output accuracy = ops::Mean(root, ops::Pack(root, accuracies), 0);
  cfx::Operation init = cfx::GlobalVariablesInitializer(root);
  cfx::Operation sync = dp.BroadcastVariables(root);
  if (!root.ok()) return Fail(root.status());

  cfx::ClientSession session(root, rt);
  cfx::Status s = session.Run({}, {}, {init}, nullptr);
  if (s.ok()) s = session.Run({}, {}, {sync}, nullptr);  // every replica starts from replica 0's
  if (!s.ok()) return Fail(s);
  const bool report = dp.is_chief();
  if (report) {
    std::printf("adding problem: lengths %lld..%lld, LSTM %lld units, batch %lld, Adam %g\n",
                static_cast<long long>(flags.min_len), static_cast<long long>(flags.max_len),
                static_cast<long long>(flags.hidden), static_cast<long long>(flags.batch),
                flags.lr);
    if (members > 1)
      std::printf("data-parallel over %d tasks, %lld examples each per step\n", members,
                  static_cast<long long>(flags.batch / members));
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> step_losses;
  double loss_avg = 0, acc_avg = 0;
  std::vector<cfx::Tensor> out;
  for (int64_t step = 0; step < flags.steps; ++step) {
    // Member m's share of the step's batch; one process alone draws the whole batch from
    // BatchSeed(--seed, step).
    cfx::ClientSession::FeedType feeds;
    for (int r = 0; r < replicas; ++r) {
      const uint64_t member = static_cast<uint64_t>(first_member + r);
      const AddingBatch b =
          MakeAddingBatch(flags.batch / members, flags.min_len, flags.max_len, flags.max_len,
                          BatchSeed(flags.seed + (member << 16), step));
      feeds.emplace_back(models[r].inputs, b.inputs);
      feeds.emplace_back(models[r].lengths, b.lengths);
      feeds.emplace_back(models[r].targets, b.targets);
    }
    s = session.Run(feeds, {loss, accuracy}, {train}, &out);
    if (!s.ok()) return Fail(s);
    const double step_loss = out[0].at<float>(0), acc = out[1].at<float>(0);
    step_losses.push_back(step_loss);
    const double a = step == 0 ? 0 : 0.95;
    loss_avg = a * loss_avg + (1 - a) * step_loss;
    acc_avg = a * acc_avg + (1 - a) * acc;
    if (report && ((step + 1) % 10 == 0 || step + 1 == flags.steps)) {
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double rate = (step + 1) * flags.batch / std::max(secs, 1e-9);
      const double eta = (flags.steps - step - 1) * flags.batch / std::max(rate, 1e-9);
      std::fprintf(stderr, "\r[%s] step %lld/%lld loss %.5f acc %.3f %.0f ex/s ETA %s ",
                   Bar(static_cast<double>(step + 1) / flags.steps, 24).c_str(),
                   static_cast<long long>(step + 1), static_cast<long long>(flags.steps), loss_avg,
                   acc_avg, rate, Duration(eta).c_str());
    }
  }
  const double train_secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (report) {
    std::fprintf(stderr, "\n");
    std::printf("trained %lld steps in %s (%.1f ms/step)\n", static_cast<long long>(flags.steps),
                Duration(train_secs).c_str(), 1e3 * train_secs / flags.steps);
  }

  // Every replica holds the same variables: replica 0 evaluates.
  const AddingBatch held_out = MakeAddingBatch(flags.eval_batch, flags.min_len, flags.max_len,
                                               flags.max_len, BatchSeed(flags.seed, kHeldOut));
  s = session.Run({{models[0].inputs, held_out.inputs},
                   {models[0].lengths, held_out.lengths},
                   {models[0].targets, held_out.targets}},
                  {models[0].loss, models[0].accuracy}, &out);
  if (!s.ok()) return Fail(s);
  const double held_out_accuracy = out[1].at<float>(0);
  if (report)
    std::printf("held-out (%lld examples): mse %.6f accuracy %.4f (|prediction - target| < %.2f)\n",
                static_cast<long long>(flags.eval_batch), out[0].at<float>(0), held_out_accuracy,
                kAccuracyTolerance);

  int rc = 0;
  if (flags.expect_loss_drop > 0) {
    const size_t k = std::min<size_t>(10, step_losses.size() / 2);
    double first = 0, last = 0;
    for (size_t i = 0; i < k; ++i) {
      first += step_losses[i] / k;
      last += step_losses[step_losses.size() - 1 - i] / k;
    }
    if (report)
      std::printf("mean loss: first %zu steps %.5f, last %zu steps %.5f\n", k, first, k, last);
    if (k == 0 || !(last < (1 - flags.expect_loss_drop) * first)) {
      std::fprintf(stderr, "dynamic_rnn: the loss did not fall by %.0f%%\n",
                   100 * flags.expect_loss_drop);
      rc = 3;
    }
  }
  if (flags.expect_accuracy >= 0 && !(held_out_accuracy >= flags.expect_accuracy)) {
    std::fprintf(stderr, "dynamic_rnn: held-out accuracy %.4f is below %.4f\n", held_out_accuracy,
                 flags.expect_accuracy);
    rc = 3;
  }
  return rc;
}

}  // namespace
}  // namespace rnn

int main(int argc, char** argv) {
  rnn::Flags flags;
  if (!rnn::ParseFlags(argc, argv, &flags)) return 2;
  return rnn::Run(flags);
}
