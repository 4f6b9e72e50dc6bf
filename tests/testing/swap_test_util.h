// A recurrent loop whose gradient keeps one matrix per iteration on its stacks, run on a device
// with memory of its own with and without swap_memory (EuroSys 2018 §5.3): the swapping tests of
// the OpenCL and CUDA devices (tests/opencl/swap_test.cc, tests/cuda/swap_test.cc).
#ifndef CONFLUX_TESTS_TESTING_SWAP_TEST_UTIL_H_
#define CONFLUX_TESTS_TESTING_SWAP_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "conflux/cc/client_session.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/gradients.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/runtime.h"

namespace cfx::test {

struct SwapStepResult {
  std::vector<Tensor> values;  // loss, dloss/dx, dloss/dw
  int64_t peak_bytes = 0;      // the device's peak memory in use during the measured step
};

// A side x side float matrix of varied values.
inline Tensor SwapTestMatrix(int64_t side, float scale, float offset) {
  Tensor t(DT_FLOAT, TensorShape({side, side}));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.at<float>(i) = scale * static_cast<float>((i * 37) % 101 - 50) / 50.0f + offset;
  return t;
}

// h = x; `iterations` times h = tanh(h w) on `device` ("OPENCL:0"); loss = sum(h); the
// gradients of x and w, from a loop built with `swap_memory`. Runs the step twice (the first
// builds the kernels) and measures the second.
inline SwapStepResult RecurrentStep(Runtime* rt, const std::string& device, int64_t side,
                                    int iterations, bool swap_memory) {
  SwapStepResult run;
  Scope root = Scope::NewRootScope(rt);
  Output x = ops::Placeholder(root, DT_FLOAT);
  Output w = ops::Placeholder(root, DT_FLOAT);
  WhileLoopOptions options;
  options.swap_memory = swap_memory;
  std::vector<Output> out;
  Status s = WhileLoop(
      root, {ops::Const(root, 0), x},
      [&](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(s, v[0], ops::Const(s, iterations));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v, std::vector<Output>* next) {
        Scope on = s.WithDevice("/device:" + device);
        *next = {ops::AddV2(s, v[0], ops::Const(s, 1)), ops::Tanh(on, ops::MatMul(on, v[1], w))};
        return s.status();
      },
      &out, options);
  EXPECT_TRUE(s.ok()) << s;
  Output loss = ops::Sum(root, out[1], ops::Const(root, std::vector<int32_t>{0, 1}));
  std::vector<Output> grads;
  s = AddSymbolicGradients(root, {loss}, {x, w}, &grads);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return run;
  GraphDef def;
  EXPECT_TRUE(root.ToGraphDef(&def).ok());
  for (const NodeDef& n : def.node) {
    if (n.op == "StackPushV2") {
      EXPECT_EQ(n.attr.at("swap_memory").b, swap_memory) << n.name;
    }
  }
  ClientSession session(root, rt);
  Device* dev = *rt->FindDevice(device);
  for (int k = 0; k < 2; ++k) {
    dev->allocator()->ResetPeak();
    run.values.clear();
    s = session.Run({{x, SwapTestMatrix(side, 0.5f, 0.1f)}, {w, SwapTestMatrix(side, 0.08f, 0.0f)}},
                    {loss, grads[0], grads[1]}, &run.values);
    EXPECT_TRUE(s.ok()) << s;
    run.peak_bytes = dev->allocator()->stats().peak_bytes_in_use;
  }
  return run;
}

inline bool SameFloatBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data<float>(), b.data<float>(), a.TotalBytes()) == 0;
}

// The checks of a device whose swap_threshold is 0: the same bits with and without swapping, a
// gradient that is not trivial, and a peak lower by at least half of what the stacks hold.
inline void ExpectSwappingSavesMemory(Runtime* rt, const std::string& device, int64_t side,
                                      int iterations) {
  SwapStepResult kept = RecurrentStep(rt, device, side, iterations, /*swap_memory=*/false);
  SwapStepResult swapped = RecurrentStep(rt, device, side, iterations, /*swap_memory=*/true);
  ASSERT_EQ(kept.values.size(), 3u);
  ASSERT_EQ(swapped.values.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(SameFloatBits(kept.values[i], swapped.values[i]));
  }
  // Not trivial: tanh saturating everything would hide a lost or misplaced value.
  double dw = 0;
  for (int64_t i = 0; i < swapped.values[2].num_elements(); ++i)
    dw += std::abs(swapped.values[2].at<float>(i));
  EXPECT_GT(dw, 1.0);
  // Without swapping the stacks keep every iteration's value on the device (tanh's output, which
  // is also the next iteration's MatMul input: one buffer per iteration).
  const int64_t pushed = int64_t{iterations} * side * side * 4;
  EXPECT_GT(kept.peak_bytes, pushed);
  EXPECT_LT(swapped.peak_bytes, kept.peak_bytes - pushed / 2);
  std::printf("%s, %d iterations of %lldx%lld: peak device memory %lld bytes kept, %lld swapped\n",
              device.c_str(), iterations, static_cast<long long>(side),
              static_cast<long long>(side), static_cast<long long>(kept.peak_bytes),
              static_cast<long long>(swapped.peak_bytes));
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_SWAP_TEST_UTIL_H_
