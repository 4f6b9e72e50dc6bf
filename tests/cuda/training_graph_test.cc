// Training on the GPU through sessions, against the same graphs on the CPU: the optimizer updates
// (ApplyGradientDescent, ApplyMomentum, ApplyAdam, ApplyRMSProp, with and without Nesterov, on
// VariableV2 references and on resource variables) step after step; a small MLP trained with
// Adam where every op (MatMul, BiasAdd, Relu, the sparse softmax cross entropy, its manual
// backward pass with BiasAddGrad and ReluGrad, Mean, ArgMax, Softmax) is pinned to the GPU; and
// an out-of-range sparse label, refused as the CPU refuses it. The optimizers' kernels take
// reference or resource inputs, which the conformance harness cannot compare: this is their
// comparison. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "conflux/session.h"
#include "cuda_test_util.h"
#include "graph_builder.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr const char* kGpu = "/device:GPU:0";
constexpr const char* kCpu = "/device:CPU:0";

std::unique_ptr<Session> NewSession(const GraphDef& g) {
  auto s = Session::Create(&CudaRuntime(), g);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<float> Pattern(size_t n, float scale, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(1.3f * static_cast<float>(i) + phase);
  return v;
}

// Copies of `fetched`: a CPU fetch of a reference variable shares the variable's buffer, which
// later steps update in place.
std::vector<Tensor> Copies(const std::vector<Tensor>& fetched) {
  std::vector<Tensor> copies;
  for (const Tensor& t : fetched) {
    auto copy = t.DeepCopy();
    EXPECT_TRUE(copy.ok()) << copy.status();
    copies.push_back(copy.ok() ? *copy : Tensor());
  }
  return copies;
}

// Float tensors of one shape within atol + rtol * |expected|; reports the first few differences
// and how many there are (not every element of a large tensor).
void ExpectClose(const Tensor& expected, const Tensor& actual, double atol, double rtol) {
  ASSERT_EQ(expected.dtype(), DT_FLOAT);
  ASSERT_EQ(actual.dtype(), DT_FLOAT);
  ASSERT_EQ(expected.shape(), actual.shape());
  int64_t bad = 0;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    const double e = expected.at<float>(i), a = actual.at<float>(i);
    if (e == a || std::fabs(e - a) <= atol + rtol * std::fabs(e) ||
        (std::isnan(e) && std::isnan(a)))
      continue;
    if (++bad <= 3) ADD_FAILURE() << "element " << i << ": expected " << e << ", got " << a;
  }
  EXPECT_EQ(bad, 0) << "elements out of tolerance, of " << expected.num_elements();
}

// ---- Optimizers.

struct Optimizer {
  std::string name;
  std::vector<std::string> variables;  // var first
  std::vector<std::string> inputs;     // the rest, in order ("grad" is fed, the others consts)
  bool has_nesterov;
};

const Optimizer kOptimizers[] = {
    {"GradientDescent", {"var"}, {"alpha", "delta"}, false},
    {"Momentum", {"var", "accum"}, {"lr", "grad", "momentum"}, true},
    {"Adam",
     {"var", "m", "v"},
     {"beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"},
     true},
    {"RMSProp", {"var", "ms", "mom"}, {"lr", "rho", "momentum", "epsilon", "grad"}, false},
};

float HyperParameter(const std::string& name) {
  if (name == "alpha" || name == "lr") return 0.05f;
  if (name == "momentum") return 0.9f;
  if (name == "beta1") return 0.9f;
  if (name == "beta2") return 0.999f;
  if (name == "epsilon") return 1e-6f;
  if (name == "rho") return 0.9f;
  return 0.5f;
}

bool IsGradient(const std::string& name) { return name == "grad" || name == "delta"; }

// Per variable x on `device`: the variable, x_init and init_x, read_x. Hyper-parameters are
// consts on `device` except Adam's beta powers, fed each step like the gradient; "step" is the
// update on `device`.
GraphDef OptimizerGraph(const Optimizer& op, bool resource, bool nesterov, const char* device,
                        const std::string& prefix, int64_t n) {
  GraphBuilder b;
  std::vector<std::string> inputs;
  for (const std::string& x : op.variables) {
    b.Op(x, resource ? "VarHandleOp" : "VariableV2", {},
         {{"dtype", F()},
          {"shape", AttrValue::Shape(PartialTensorShape({n}))},
          {"shared_name", AttrValue::String(prefix + x)}},
         device);
    b.Placeholder(x + "_init", DT_FLOAT);
    if (resource) {
      b.Op("init_" + x, "AssignVariableOp", {x, x + "_init"}, {{"dtype", F()}}, device);
      b.Op("read_" + x, "ReadVariableOp", {x}, {{"dtype", F()}}, device);
    } else {
      b.Op("init_" + x, "Assign", {x, x + "_init"}, {{"T", F()}}, device);
      b.Op("read_" + x, "Identity", {x}, {{"T", F()}}, device);
    }
    inputs.push_back(x);
  }
  for (const std::string& in : op.inputs) {
    if (IsGradient(in) || in == "beta1_power" || in == "beta2_power")
      b.Placeholder(in, DT_FLOAT);
    else
      b.Const(in, MakeScalar<float>(HyperParameter(in)), device);
    inputs.push_back(in);
  }
  std::vector<std::pair<std::string, AttrValue>> attrs = {{"T", F()},
                                                          {"use_locking", AttrValue::Bool(true)}};
  if (op.has_nesterov) attrs.push_back({"use_nesterov", AttrValue::Bool(nesterov)});
  b.Op("step", (resource ? "ResourceApply" : "Apply") + op.name, inputs, attrs, device);
  return b.graph();
}

// Runs init and `steps` updates; the variables' values after each step, in order.
std::vector<std::vector<Tensor>> RunOptimizer(const Optimizer& op, bool resource, bool nesterov,
                                              const char* device, const std::string& prefix) {
  constexpr int64_t kN = 1000;  // several blocks
  std::vector<std::vector<Tensor>> history;
  auto session = NewSession(OptimizerGraph(op, resource, nesterov, device, prefix, kN));
  if (session == nullptr) return history;
  std::vector<std::pair<std::string, Tensor>> init;
  std::vector<std::string> initializers, reads;
  for (size_t k = 0; k < op.variables.size(); ++k) {
    const std::string& x = op.variables[k];
    std::vector<float> v = Pattern(kN, 1.0f, static_cast<float>(k));
    if (k > 0)
      for (float& e : v) e = std::fabs(e) * 0.1f;  // slots of squares (v, ms) must be >= 0
    init.push_back({x + "_init", MakeVector<float>(v)});
    initializers.push_back("init_" + x);
    reads.push_back("read_" + x);
  }
  Status s = session->Run(init, {}, initializers, nullptr);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return history;
  for (int step = 1; step <= 4; ++step) {
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (const std::string& in : op.inputs) {
      if (IsGradient(in))
        feeds.push_back({in, MakeVector<float>(Pattern(kN, 0.5f * step, 0.3f * step))});
      if (in == "beta1_power")
        feeds.push_back({in, MakeScalar<float>(std::pow(0.9f, static_cast<float>(step)))});
      if (in == "beta2_power")
        feeds.push_back({in, MakeScalar<float>(std::pow(0.999f, static_cast<float>(step)))});
    }
    std::vector<Tensor> out;
    s = session->Run(feeds, {}, {"step"}, nullptr);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return history;
    s = session->Run({}, reads, {}, &out);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return history;
    history.push_back(Copies(out));
  }
  return history;
}

TEST(GpuTraining, OptimizersMatchTheCpuStepByStep) {
  SKIP_WITHOUT_GPU();
  for (const Optimizer& op : kOptimizers) {
    for (bool resource : {false, true}) {
      for (bool nesterov : {false, true}) {
        if (nesterov && !op.has_nesterov) continue;
        const std::string name =
            op.name + (resource ? "_resource" : "_ref") + (nesterov ? "_nesterov" : "");
        SCOPED_TRACE(name);
        auto cpu = RunOptimizer(op, resource, nesterov, kCpu, "cpu_" + name + "_");
        auto gpu = RunOptimizer(op, resource, nesterov, kGpu, "gpu_" + name + "_");
        ASSERT_EQ(cpu.size(), 4u);
        ASSERT_EQ(gpu.size(), cpu.size());
        for (size_t step = 0; step < cpu.size(); ++step) {
          SCOPED_TRACE("step " + std::to_string(step + 1));
          for (size_t k = 0; k < op.variables.size(); ++k) {
            SCOPED_TRACE(op.variables[k]);
            ExpectClose(cpu[step][k], gpu[step][k], 1e-5, 1e-5);
          }
        }
      }
    }
  }
}

// ---- A small MLP: x [8,5] -> relu(x W1 + b1) [8,6] -> logits = h W2 + b2 [8,4], sparse softmax
// cross entropy with int32 labels, its gradients written out, Adam on every parameter. The
// updates wait (control inputs) for every gradient, so that no update races a read.

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  std::string grad;
};

const std::vector<Param>& MlpParams() {
  static const std::vector<Param> params = {
      {"W1", {5, 6}, "dW1"}, {"b1", {6}, "db1"}, {"W2", {6, 4}, "dW2"}, {"b2", {4}, "db2"}};
  return params;
}

GraphDef MlpGraph(const char* device, const std::string& prefix) {
  GraphBuilder b;
  auto on = [&](const std::string& name, const std::string& op, std::vector<std::string> in,
                std::vector<std::pair<std::string, AttrValue>> attrs) {
    b.Op(name, op, std::move(in), std::move(attrs), device);
  };
  b.Placeholder("x", DT_FLOAT, PartialTensorShape({8, 5}));
  b.Placeholder("labels", DT_INT32, PartialTensorShape({8}));
  b.Placeholder("beta1_power", DT_FLOAT);
  b.Placeholder("beta2_power", DT_FLOAT);
  b.Const("lr", MakeScalar<float>(0.01f), device);
  b.Const("beta1", MakeScalar<float>(0.9f), device);
  b.Const("beta2", MakeScalar<float>(0.999f), device);
  b.Const("epsilon", MakeScalar<float>(1e-7f), device);
  b.Const("batch_axis", MakeVector<int32_t>({0}));
  b.Const("class_axis", MakeScalar<int32_t>(1));
  for (const Param& p : MlpParams())
    for (const std::string& x : {p.name, p.name + "_m", p.name + "_v"}) {
      on(x, "VariableV2", {},
         {{"dtype", F()},
          {"shape", AttrValue::Shape(PartialTensorShape(p.shape))},
          {"shared_name", AttrValue::String(prefix + x)}});
      b.Placeholder(x + "_init", DT_FLOAT);
      on("init_" + x, "Assign", {x, x + "_init"}, {{"T", F()}});
      on("read_" + x, "Identity", {x}, {{"T", F()}});
    }
  const AttrValue no = AttrValue::Bool(false), yes = AttrValue::Bool(true);
  on("xw1", "MatMul", {"x", "W1"}, {{"T", F()}, {"transpose_a", no}, {"transpose_b", no}});
  on("z1", "BiasAdd", {"xw1", "b1"}, {{"T", F()}});
  on("h", "Relu", {"z1"}, {{"T", F()}});
  on("hw2", "MatMul", {"h", "W2"}, {{"T", F()}, {"transpose_a", no}, {"transpose_b", no}});
  on("logits", "BiasAdd", {"hw2", "b2"}, {{"T", F()}});
  on("xent", "SparseSoftmaxCrossEntropyWithLogits", {"logits", "labels"},
     {{"T", F()}, {"Tlabels", AttrValue::Type(DT_INT32)}});
  on("loss", "Mean", {"xent:0", "batch_axis"},
     {{"T", F()}, {"Tidx", AttrValue::Type(DT_INT32)}, {"keep_dims", no}});
  on("predictions", "ArgMax", {"logits", "class_axis"},
     {{"T", F()}, {"Tidx", AttrValue::Type(DT_INT32)}, {"output_type", AttrValue::Type(DT_INT64)}});
  on("probabilities", "Softmax", {"logits"}, {{"T", F()}});
  on("log_probabilities", "LogSoftmax", {"logits"}, {{"T", F()}});
  // Gradients of the summed loss.
  on("dW2", "MatMul", {"h", "xent:1"}, {{"T", F()}, {"transpose_a", yes}, {"transpose_b", no}});
  on("db2", "BiasAddGrad", {"xent:1"}, {{"T", F()}});
  on("dh", "MatMul", {"xent:1", "W2"}, {{"T", F()}, {"transpose_a", no}, {"transpose_b", yes}});
  on("dz1", "ReluGrad", {"dh", "z1"}, {{"T", F()}});
  on("dW1", "MatMul", {"x", "dz1"}, {{"T", F()}, {"transpose_a", yes}, {"transpose_b", no}});
  on("db1", "BiasAddGrad", {"dz1"}, {{"T", F()}});
  std::vector<std::string> after_gradients;
  for (const Param& p : MlpParams()) after_gradients.push_back("^" + p.grad);
  after_gradients.push_back("^loss");
  after_gradients.push_back("^predictions");
  after_gradients.push_back("^probabilities");
  after_gradients.push_back("^log_probabilities");
  for (const Param& p : MlpParams()) {
    std::vector<std::string> in = {p.name,        p.name + "_m", p.name + "_v", "beta1_power",
                                   "beta2_power", "lr",          "beta1",       "beta2",
                                   "epsilon",     p.grad};
    in.insert(in.end(), after_gradients.begin(), after_gradients.end());
    on("adam_" + p.name, "ApplyAdam", in, {{"T", F()}, {"use_locking", no}, {"use_nesterov", no}});
  }
  return b.graph();
}

struct MlpStep {
  std::vector<Tensor> fetched;    // loss, predictions, probabilities, log_probabilities
  std::vector<Tensor> variables;  // after the update
};

std::vector<MlpStep> TrainMlp(const char* device, const std::string& prefix) {
  std::vector<MlpStep> steps;
  auto session = NewSession(MlpGraph(device, prefix));
  if (session == nullptr) return steps;
  std::vector<std::pair<std::string, Tensor>> init;
  std::vector<std::string> initializers, reads, updates;
  float phase = 0;
  for (const Param& p : MlpParams()) {
    const int64_t n = TensorShape(p.shape).num_elements();
    init.push_back(
        {p.name + "_init", MakeTensor<float>(TensorShape(p.shape), Pattern(n, 0.5f, phase += 1))});
    for (const char* slot : {"_m", "_v"})
      init.push_back({p.name + slot + "_init",
                      MakeTensor<float>(TensorShape(p.shape), std::vector<float>(n, 0.0f))});
    for (const std::string& x : {p.name, p.name + "_m", p.name + "_v"}) {
      initializers.push_back("init_" + x);
      reads.push_back("read_" + x);
    }
    updates.push_back("adam_" + p.name);
  }
  Status s = session->Run(init, {}, initializers, nullptr);
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return steps;
  const Tensor x = MakeTensor<float>(TensorShape({8, 5}), Pattern(40, 2.0f, 0.7f));
  const Tensor labels = MakeVector<int32_t>({0, 3, 1, 2, 2, 0, 3, 1});
  for (int step = 1; step <= 5; ++step) {
    MlpStep r;
    s = session->Run(
        {{"x", x},
         {"labels", labels},
         {"beta1_power", MakeScalar<float>(std::pow(0.9f, static_cast<float>(step)))},
         {"beta2_power", MakeScalar<float>(std::pow(0.999f, static_cast<float>(step)))}},
        {"loss", "predictions", "probabilities", "log_probabilities"}, updates, &r.fetched);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return steps;
    s = session->Run({}, reads, {}, &r.variables);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return steps;
    r.fetched = Copies(r.fetched);
    r.variables = Copies(r.variables);
    steps.push_back(std::move(r));
  }
  return steps;
}

TEST(GpuTraining, MlpWithAdamMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  const auto cpu = TrainMlp(kCpu, "mlp_cpu_");
  const auto gpu = TrainMlp(kGpu, "mlp_gpu_");
  ASSERT_EQ(cpu.size(), 5u);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t step = 0; step < cpu.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step + 1));
    ExpectClose(cpu[step].fetched[0], gpu[step].fetched[0], 1e-5, 1e-4);  // loss
    ExpectTensorEqual(cpu[step].fetched[1], gpu[step].fetched[1]);        // predictions
    ExpectClose(cpu[step].fetched[2], gpu[step].fetched[2], 1e-5, 1e-4);
    ExpectClose(cpu[step].fetched[3], gpu[step].fetched[3], 1e-5, 1e-4);
    for (size_t k = 0; k < cpu[step].variables.size(); ++k) {
      SCOPED_TRACE("variable " + std::to_string(k));
      ExpectClose(cpu[step].variables[k], gpu[step].variables[k], 1e-5, 1e-4);
    }
  }
  // It trains: the loss went down.
  EXPECT_LT(gpu.back().fetched[0].at<float>(0), gpu.front().fetched[0].at<float>(0));
}

// The graphs above, on the CPU alone (also without a GPU): they build, run and train.
TEST(GpuTrainingGraphs, RunOnTheCpu) {
  for (const Optimizer& op : kOptimizers)
    for (bool resource : {false, true}) {
      const std::string name = op.name + (resource ? "_resource" : "_ref");
      SCOPED_TRACE(name);
      EXPECT_EQ(RunOptimizer(op, resource, op.has_nesterov, kCpu, "cpu_only_" + name).size(), 4u);
    }
  const auto cpu = TrainMlp(kCpu, "mlp_cpu_only_");
  ASSERT_EQ(cpu.size(), 5u);
  EXPECT_LT(cpu.back().fetched[0].at<float>(0), cpu.front().fetched[0].at<float>(0));
}

TEST(GpuTraining, OutOfRangeSparseLabelNamesTheNodeTheIndexAndTheRange) {
  SKIP_WITHOUT_GPU();
  GraphBuilder b;
  b.Placeholder("logits", DT_FLOAT, PartialTensorShape({3, 4}));
  b.Placeholder("labels", DT_INT64, PartialTensorShape({3}));
  b.Op("xent", "SparseSoftmaxCrossEntropyWithLogits", {"logits", "labels"},
       {{"T", F()}, {"Tlabels", AttrValue::Type(DT_INT64)}}, kGpu);
  auto session = NewSession(b.graph());
  ASSERT_NE(session, nullptr);
  const Tensor logits = MakeTensor<float>(TensorShape({3, 4}), Pattern(12, 1.0f, 0.0f));
  std::vector<Tensor> out;
  Status s = session->Run({{"logits", logits}, {"labels", MakeVector<int64_t>({1, 4, 0})}},
                          {"xent:0"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  for (const char* part : {"xent", "labels[1] = 4", "[0, 4)"})
    EXPECT_NE(s.message().find(part), std::string::npos) << part << " not in " << s;
  // In range, the same session computes.
  ASSERT_OK(session->Run({{"logits", logits}, {"labels", MakeVector<int64_t>({1, 3, 0})}},
                         {"xent:0", "xent:1"}, {}, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].shape(), TensorShape({3, 4}));
}

}  // namespace
}  // namespace cfx
