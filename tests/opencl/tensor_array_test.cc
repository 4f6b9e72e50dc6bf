// TensorArrays read and written on OPENCL:0 inside a loop (a dynamic RNN's pattern): the inputs
// are unstacked on the CPU, each iteration reads its input and writes its output on the device,
// the outputs are stacked on the CPU, and the gradients flow back through gradient arrays on the
// device. Values and gradients match the same graph on the CPU alone.
#include "conflux/cc/tensor_array.h"

#include <gtest/gtest.h>

#include "conflux/cc/client_session.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/gradients.h"
#include "conflux/cc/ops/standard_ops.h"
#include "opencl_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr int64_t kSteps = 6, kBatch = 3, kIn = 5, kUnits = 4;

Tensor Values(TensorShape shape, float scale) {
  Tensor t(DT_FLOAT, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.at<float>(i) = scale * static_cast<float>((i * 29) % 23 - 11) / 11.0f;
  return t;
}

// h_t = tanh(x_t w + h_{t-1} u), outputs stacked; loss = sum(outputs^2); the loss and the
// gradients of xs, w and u. `device` ("" = unpinned) runs the reads, writes and the cell.
std::vector<Tensor> RnnStep(Runtime* rt, const std::string& device) {
  Scope root = Scope::NewRootScope(rt);
  Output xs = ops::Placeholder(root, DT_FLOAT);
  Output w = ops::Placeholder(root, DT_FLOAT);
  Output u = ops::Placeholder(root, DT_FLOAT);
  TensorArray inputs =
      TensorArray(root, DT_FLOAT, ops::Const(root, int32_t{kSteps})).Unstack(root, xs);
  TensorArray outputs(root, DT_FLOAT, ops::Const(root, int32_t{kSteps}));
  Output h0 = ops::Const(root, Values(TensorShape({kBatch, kUnits}), 0.3f));
  std::vector<Output> final_vars;
  Status s = WhileLoop(
      root, {ops::Const(root, 0), h0, outputs.flow()},
      [](const Scope& c, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(c, v[0], ops::Const(c, int32_t{kSteps}));
        return c.status();
      },
      [&](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
        Scope on = device.empty() ? b : b.WithDevice("/device:" + device);
        Output x = inputs.Read(on, v[0]);
        Output h = ops::Tanh(on, ops::AddV2(on, ops::MatMul(on, x, w), ops::MatMul(on, v[1], u)));
        *next = {ops::AddV2(b, v[0], 1), h, outputs.WithFlow(v[2]).Write(on, v[0], h).flow()};
        return b.status();
      },
      &final_vars);
  EXPECT_TRUE(s.ok()) << s;
  Output ys = outputs.WithFlow(final_vars[2]).Stack(root);
  Output loss =
      ops::Sum(root, ops::Square(root, ys), ops::Const(root, std::vector<int32_t>{0, 1, 2}));
  std::vector<Output> grads;
  s = AddSymbolicGradients(root, {loss}, {xs, w, u}, &grads);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  ClientSession session(root, rt);
  std::vector<Tensor> out;
  s = session.Run({{xs, Values(TensorShape({kSteps, kBatch, kIn}), 1.0f)},
                   {w, Values(TensorShape({kIn, kUnits}), 0.6f)},
                   {u, Values(TensorShape({kUnits, kUnits}), 0.4f)}},
                  {loss, ys, grads[0], grads[1], grads[2]}, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(OpenClTensorArray, LoopReadsAndWritesOnTheDeviceMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  std::vector<Tensor> cpu = RnnStep(&TestRuntime(), "");
  std::vector<Tensor> ocl = RnnStep(&OpenClRuntime(), "OPENCL:0");
  ASSERT_EQ(cpu.size(), 5u);
  ASSERT_EQ(ocl.size(), 5u);
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectTensorNear(cpu[i], ocl[i], 1e-5, 1e-5);
  }
}

}  // namespace
}  // namespace cfx
