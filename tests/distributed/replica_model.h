// The small model that the data-parallel tests train (collectives_test in graph,
// between_graph_test between graphs), its batches, and the same model trained in one process on
// every replica's batches at once: what data-parallel training must match.
#ifndef CONFLUX_TESTS_DISTRIBUTED_REPLICA_MODEL_H_
#define CONFLUX_TESTS_DISTRIBUTED_REPLICA_MODEL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "conflux/cc/client_session.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/variables.h"
#include "kernel_test_util.h"

namespace cfx::test {

// y = relu(x W1 + b1) W2 + b2, a mean squared error; initial values drawn from `seed`.
struct Replica {
  Output x, y, loss;
};

inline Replica BuildReplica(const Scope& s, uint64_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto init = [&](std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(n);
    for (float& e : v) e = u(rng);
    return MakeTensor<float>(TensorShape(dims), v);
  };
  Replica r;
  r.x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  r.y = ops::Placeholder(s.WithOpName("y"), DT_FLOAT);
  auto w1 = Variable(s.WithOpName("w1"), PartialTensorShape({4, 3}), DT_FLOAT,
                     ops::Const(s, init({4, 3})));
  auto b1 =
      Variable(s.WithOpName("b1"), PartialTensorShape({3}), DT_FLOAT, ops::Const(s, init({3})));
  auto w2 = Variable(s.WithOpName("w2"), PartialTensorShape({3, 2}), DT_FLOAT,
                     ops::Const(s, init({3, 2})));
  auto b2 =
      Variable(s.WithOpName("b2"), PartialTensorShape({2}), DT_FLOAT, ops::Const(s, init({2})));
  Output h = ops::Relu(s, ops::Add(s, ops::MatMul(s, r.x, w1.var), b1.var));
  Output out = ops::Add(s, ops::MatMul(s, h, w2.var), b2.var);
  r.loss = ops::Mean(s, ops::Square(s, ops::Sub(s, out, r.y)), {0, 1});
  return r;
}

// Replica r's inputs (x: 5 x 4) and targets (y: 5 x 2) at `step` of `replicas`.
inline Tensor Batch(int rows, int cols, int seed) {
  std::vector<float> v(rows * cols);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7f * i + 1.3f * seed);
  return MakeTensor<float>({rows, cols}, v);
}
inline Tensor ReplicaX(int step, int replicas, int r) { return Batch(5, 4, step * replicas + r); }
inline Tensor ReplicaY(int step, int replicas, int r) {
  return Batch(5, 2, 50 + step * replicas + r);
}

inline Tensor Rows(const std::vector<Tensor>& parts) {
  std::vector<float> all;
  int64_t rows = 0;
  for (const Tensor& p : parts) {
    for (float f : Values<float>(p)) all.push_back(f);
    rows += p.shape().dim(0);
  }
  return MakeTensor<float>({rows, parts[0].shape().dim(1)}, all);
}

// Momentum(0.05, 0.9) on replica 0's initial values (seed 100) for `steps` steps, each on every
// replica's batch at once, in one process; the trainable variables at the end.
inline std::vector<Tensor> TrainOneProcess(int replicas, int steps) {
  Scope one = Scope::NewRootScope(&TestRuntime());
  Replica single = BuildReplica(one, 100);
  MomentumOptimizer plain(0.05f, 0.9f);
  Operation train = plain.Minimize(one, single.loss);
  Operation init = GlobalVariablesInitializer(one);
  EXPECT_TRUE(one.ok()) << one.status();
  ClientSession local(one, &TestRuntime());
  EXPECT_TRUE(local.Run({}, {}, {init}, nullptr).ok());
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> xs, ys;
    for (int r = 0; r < replicas; ++r) {
      xs.push_back(ReplicaX(step, replicas, r));
      ys.push_back(ReplicaY(step, replicas, r));
    }
    EXPECT_TRUE(local.Run({{single.x, Rows(xs)}, {single.y, Rows(ys)}}, {}, {train}, nullptr).ok());
  }
  std::vector<Tensor> want;
  EXPECT_TRUE(local.Run({}, one.GetCollection(kTrainableVariables), &want).ok());
  return want;
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_DISTRIBUTED_REPLICA_MODEL_H_
