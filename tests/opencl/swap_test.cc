// Swapping of a loop's gradient stacks (EuroSys 2018 §5.3) on a device with memory of its own:
// a WhileLoop on OPENCL:0 with swap_memory pushes its forward values to host memory and brings
// them back for the backward loop. The gradients are the same bits as without swapping, and the
// device's peak memory is lower, because the forward values no longer stay on the device until
// the backward loop pops them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "conflux/cc/client_session.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/gradients.h"
#include "conflux/cc/ops/standard_ops.h"
#include "opencl_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr int64_t kSide = 192;  // each pushed value: a kSide x kSide float matrix (144 KiB)
constexpr int kIterations = 40;

struct StepResult {
  std::vector<Tensor> values;  // loss, dloss/dx, dloss/dw
  int64_t peak_bytes = 0;      // OPENCL:0's peak memory in use during the step
  std::vector<std::string> push_devices;
};

Tensor Filled(float scale, float offset) {
  Tensor t(DT_FLOAT, TensorShape({kSide, kSide}));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.at<float>(i) = scale * static_cast<float>((i * 37) % 101 - 50) / 50.0f + offset;
  return t;
}

// h = x; kIterations times h = tanh(h w) on OPENCL:0; loss = sum(h); gradients of x and w.
StepResult TrainStep(Runtime* rt, bool swap_memory) {
  StepResult run;
  Scope root = Scope::NewRootScope(rt);
  Output x = ops::Placeholder(root, DT_FLOAT);
  Output w = ops::Placeholder(root, DT_FLOAT);
  WhileLoopOptions options;
  options.swap_memory = swap_memory;
  std::vector<Output> out;
  Status s = WhileLoop(
      root, {ops::Const(root, 0), x},
      [](const Scope& s, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(s, v[0], ops::Const(s, kIterations));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& v, std::vector<Output>* next) {
        Scope ocl = s.WithDevice("/device:OPENCL:0");
        *next = {ops::AddV2(s, v[0], ops::Const(s, 1)), ops::Tanh(ocl, ops::MatMul(ocl, v[1], w))};
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
    if (n.op != "StackPushV2") continue;
    EXPECT_EQ(n.attr.at("swap_memory").b, swap_memory) << n.name;
  }

  ClientSession session(root, rt);
  auto* device = *rt->FindDevice("OPENCL:0");
  // A first run builds the kernels; the second is measured.
  for (int k = 0; k < 2; ++k) {
    device->allocator()->ResetPeak();
    run.values.clear();
    s = session.Run({{x, Filled(0.5f, 0.1f)}, {w, Filled(0.08f, 0.0f)}}, {loss, grads[0], grads[1]},
                    &run.values);
    EXPECT_TRUE(s.ok()) << s;
    run.peak_bytes = device->allocator()->stats().peak_bytes_in_use;
  }
  return run;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data<float>(), b.data<float>(), a.TotalBytes()) == 0;
}

TEST(OpenClSwap, SwappedStacksGiveTheSameGradientsWithLessDeviceMemory) {
  SKIP_WITHOUT_OPENCL();
  // swap_threshold 0: every push with swap_memory moves its value to host memory.
  auto rt = MakeOpenClRuntime("swap_threshold: 0");
  ASSERT_TRUE(rt.ok()) << rt.status();
  StepResult kept = TrainStep(rt->get(), /*swap_memory=*/false);
  StepResult swapped = TrainStep(rt->get(), /*swap_memory=*/true);
  ASSERT_EQ(kept.values.size(), 3u);
  ASSERT_EQ(swapped.values.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(SameBits(kept.values[i], swapped.values[i]));
  }
  // The gradients are not trivial (tanh saturating everything would hide a lost value).
  double dw = 0;
  for (int64_t i = 0; i < swapped.values[2].num_elements(); ++i)
    dw += std::abs(swapped.values[2].at<float>(i));
  EXPECT_GT(dw, 1.0);
  // Without swapping the stacks keep every iteration's value on the device (tanh's output, which
  // is also the next iteration's MatMul input: one buffer per iteration).
  const int64_t pushed = int64_t{kIterations} * kSide * kSide * 4;
  EXPECT_GT(kept.peak_bytes, pushed);
  EXPECT_LT(swapped.peak_bytes, kept.peak_bytes - pushed / 2)
      << "kept " << kept.peak_bytes << " swapped " << swapped.peak_bytes;
}

TEST(OpenClSwap, AboveTheThresholdOnlyNothingIsSwapped) {
  SKIP_WITHOUT_OPENCL();
  // A threshold of the whole limit is never passed: swap_memory changes nothing.
  auto rt = MakeOpenClRuntime("swap_threshold: 1\n    memory_limit: 1GiB");
  ASSERT_TRUE(rt.ok()) << rt.status();
  StepResult kept = TrainStep(rt->get(), /*swap_memory=*/false);
  StepResult asked = TrainStep(rt->get(), /*swap_memory=*/true);
  const int64_t pushed = int64_t{kIterations} * kSide * kSide * 4;
  EXPECT_GT(asked.peak_bytes, pushed);
  EXPECT_GT(asked.peak_bytes, kept.peak_bytes - pushed / 4);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(SameBits(kept.values[i], asked.values[i]));
}

}  // namespace
}  // namespace cfx
