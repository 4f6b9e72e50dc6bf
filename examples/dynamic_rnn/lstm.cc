// The LSTM, the two RNNs and the adding problem (see lstm.h).
#include "lstm.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "conflux/cc/const_op.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/nn_ops.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/tensor_array.h"
#include "conflux/cc/variables.h"

namespace rnn {
namespace {

using cfx::Output;
using cfx::Scope;
using cfx::Status;
namespace ops = cfx::ops;

// Dimension `d` of `x` as an int32 scalar: a Const when the static shape knows it.
Output Dim(const Scope& s, const Output& x, int d) {
  const cfx::PartialTensorShape shape = s.StaticShape(x);
  if (!shape.unknown_rank() && shape.rank() > d && shape.dim(d) >= 0)
    return ops::Const(s, static_cast<int>(shape.dim(d)));
  return ops::StridedSlice(s, ops::Shape(s, x), {d}, {d + 1}, {1},
                           ops::StridedSliceAttrs().ShrinkAxisMask(1));
}

// Zeros [batch, units] (the initial state and the output of finished examples), batch from the
// inputs' dimension 1.
Output Zeros(const Scope& s, const Output& inputs, int64_t units) {
  Output dims = ops::Pack(s, {Dim(s, inputs, 1), ops::Const(s, static_cast<int>(units))});
  return ops::Fill(s, dims, ops::Const(s, 0, cfx::BaseType(inputs.type())));
}

struct Step {
  LstmState state;
  Output output;
};

// The cell at step t, masked as tf.nn.dynamic_rnn masks it: an example with t >= its length
// keeps its state and emits `zeros` ([batch, units], built once outside the loop as TensorFlow's
// zero_output is: the gradient of the Select then needs no per-step copy of it).
Step MaskedStep(const Scope& s, const LstmWeights& weights, const Output& x, const cfx::Input& t,
                const Output& sequence_length, const LstmState& state, const Output& zeros) {
  const LstmState next = LstmCell(s, weights, x, state);
  const Output valid = ops::ExpandDims(s, ops::Less(s, t, sequence_length), 1);  // [batch, 1]
  return {{ops::SelectV2(s, valid, next.c, state.c), ops::SelectV2(s, valid, next.h, state.h)},
          ops::SelectV2(s, valid, next.h, zeros)};
}

Status Recorded(const Scope& scope, const Status& s) {
  if (!s.ok()) scope.UpdateStatus(s);
  return s;
}

}  // namespace

LstmWeights LstmVariables(const Scope& scope, int64_t input_size, int64_t units,
                          cfx::DataType dtype, int64_t seed) {
  const std::vector<int64_t> kernel_shape = {input_size + units, 4 * units};
  LstmWeights w;
  w.units = units;
  w.kernel = cfx::Variable(scope.WithOpName("kernel"), cfx::PartialTensorShape(kernel_shape), dtype,
                           cfx::GlorotUniform(scope, kernel_shape, dtype, seed))
                 .var;
  w.bias =
      cfx::Variable(scope.WithOpName("bias"), cfx::PartialTensorShape({4 * units}), dtype,
                    ops::Fill(scope, {static_cast<int>(4 * units)}, ops::Const(scope, 0, dtype)))
          .var;
  return w;
}

LstmState LstmCell(const Scope& scope, const LstmWeights& weights, const Output& x,
                   const LstmState& state) {
  const Scope s = scope.NewSubScope("lstm_cell");
  Output gates = ops::BiasAdd(s, ops::MatMul(s, ops::ConcatV2(s, {x, state.h}, 1), weights.kernel),
                              weights.bias);
  const cfx::OutputList split = ops::Split(s, 1, gates, 4).output;
  if (split.size() != 4) return {};
  const Output& i = split[0];
  const Output& g = split[1];
  const Output& f = split[2];
  const Output& o = split[3];
  Output c =
      ops::AddV2(s, ops::Mul(s, state.c, ops::Sigmoid(s, ops::AddV2(s, f, weights.forget_bias))),
                 ops::Mul(s, ops::Sigmoid(s, i), ops::Tanh(s, g)));
  return {c, ops::Mul(s, ops::Tanh(s, c), ops::Sigmoid(s, o))};
}

Status DynamicRnn(const Scope& scope, const LstmWeights& weights, const Output& inputs,
                  const Output& sequence_length, RnnOutputs* result,
                  const DynamicRnnOptions& options) {
  CFX_RETURN_IF_ERROR(scope.status());
  const Scope s = scope.NewSubScope(options.name);
  const cfx::DataType dtype = cfx::BaseType(inputs.type());
  const Output time_steps = Dim(s, inputs, 0);
  // The trip count depends on the data: the longest sequence of the batch.
  const Output steps = ops::Minimum(s, time_steps, ops::Max(s, sequence_length, 0));
  cfx::TensorArrayOptions input_options;
  input_options.name = "inputs";
  const cfx::TensorArray input_array =
      cfx::TensorArray(s, dtype, time_steps, input_options).Unstack(s, inputs);
  cfx::TensorArrayOptions output_options;
  output_options.name = "outputs";
  const cfx::TensorArray output_array(s, dtype, steps, output_options);
  const Output zeros = Zeros(s, inputs, weights.units);
  CFX_RETURN_IF_ERROR(s.status());

  // Loop variables: time, c, h, the outputs' flow.
  std::vector<Output> final_vars;
  CFX_RETURN_IF_ERROR(cfx::WhileLoop(
      s, {ops::Const(s, 0), zeros, zeros, output_array.flow()},
      [&](const Scope& c, const std::vector<Output>& v, Output* pred) {
        *pred = ops::Less(c, v[0], steps);
        return c.status();
      },
      [&](const Scope& b, const std::vector<Output>& v, std::vector<Output>* next) {
        const Output x = input_array.Read(b, v[0]);
        const Step step = MaskedStep(b, weights, x, v[0], sequence_length, {v[1], v[2]}, zeros);
        *next = {ops::AddV2(b, v[0], 1), step.state.c, step.state.h,
                 output_array.WithFlow(v[3]).Write(b, v[0], step.output).flow()};
        return b.status();
      },
      &final_vars,
      {.parallel_iterations = options.parallel_iterations,
       .name = "while",
       .swap_memory = options.swap_memory}));
  Output outputs = output_array.WithFlow(final_vars[3]).Stack(s);
  CFX_RETURN_IF_ERROR(s.status());
  *result = {outputs, {final_vars[1], final_vars[2]}};
  return Status();
}

Status StaticRnn(const Scope& scope, const LstmWeights& weights, const Output& inputs,
                 const Output& sequence_length, RnnOutputs* result, const std::string& name) {
  CFX_RETURN_IF_ERROR(scope.status());
  const Scope s = scope.NewSubScope(name);
  const cfx::PartialTensorShape shape = s.StaticShape(inputs);
  if (shape.unknown_rank() || shape.rank() != 3 || shape.dim(0) < 1)
    return Recorded(s, cfx::errors::InvalidArgument(
                           "StaticRnn: the inputs (", inputs.name(),
                           ") must be [time, batch, input_size] with time known and at least 1, "
                           "got ",
                           shape.ToString()));
  const int64_t time_steps = shape.dim(0);
  const cfx::OutputList xs = ops::Unpack(s, inputs, time_steps).output;
  const Output zeros = Zeros(s, inputs, weights.units);
  LstmState state = {zeros, zeros};
  cfx::InputList outputs;
  for (int64_t t = 0; t < time_steps && s.ok(); ++t) {
    const Step step =
        MaskedStep(s, weights, xs[t], static_cast<int>(t), sequence_length, state, zeros);
    outputs.push_back(step.output);
    state = step.state;
  }
  Output stacked = ops::Pack(s, outputs);
  CFX_RETURN_IF_ERROR(s.status());
  *result = {stacked, state};
  return Status();
}

Output LastValidOutput(const Scope& scope, const Output& outputs, const Output& sequence_length) {
  if (!scope.ok()) return Output();
  const Scope s = scope.NewSubScope("last_valid_output");
  // Row (length - 1) * batch + b of the outputs seen as [steps * batch, units]; a literal shape
  // when units is static, so that the result's static shape knows it.
  const cfx::PartialTensorShape shape = s.StaticShape(outputs);
  const bool static_units = !shape.unknown_rank() && shape.rank() == 3 && shape.dim(2) >= 0;
  const cfx::Input rows_shape =
      static_units ? cfx::Input({-1, static_cast<int>(shape.dim(2))})
                   : cfx::Input(ops::Pack(s, {ops::Const(s, -1), Dim(s, outputs, 2)}));
  const Output batch = ops::Size(s, sequence_length);
  const Output last = ops::Maximum(s, ops::Sub(s, sequence_length, 1), 0);
  const Output rows = ops::AddV2(s, ops::Mul(s, last, batch), ops::Range(s, 0, batch, 1));
  return ops::GatherV2(s, ops::Reshape(s, outputs, rows_shape), rows, 0);
}

AddingBatch MakeAddingBatch(int64_t batch, int64_t min_len, int64_t max_len, int64_t time_steps,
                            uint64_t seed) {
  AddingBatch b{cfx::Tensor(cfx::DT_FLOAT, cfx::TensorShape({time_steps, batch, 2})),
                cfx::Tensor(cfx::DT_INT32, cfx::TensorShape({batch})),
                cfx::Tensor(cfx::DT_FLOAT, cfx::TensorShape({batch}))};
  float* x = b.inputs.data<float>();
  std::fill_n(x, b.inputs.num_elements(), 0.f);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> value(0.f, 1.f);
  for (int64_t e = 0; e < batch; ++e) {
    const int64_t length = std::uniform_int_distribution<int64_t>(min_len, max_len)(gen);
    for (int64_t t = 0; t < length; ++t) x[(t * batch + e) * 2] = value(gen);
    const int64_t half = length / 2;
    const int64_t first = std::uniform_int_distribution<int64_t>(0, half - 1)(gen);
    const int64_t second = std::uniform_int_distribution<int64_t>(half, length - 1)(gen);
    x[(first * batch + e) * 2 + 1] = 1.f;
    x[(second * batch + e) * 2 + 1] = 1.f;
    b.lengths.data<int32_t>()[e] = static_cast<int32_t>(length);
    b.targets.data<float>()[e] = x[(first * batch + e) * 2] + x[(second * batch + e) * 2];
  }
  return b;
}

cfx::StatusOr<AddingModel> BuildAddingReplica(const Scope& scope,
                                              const AddingModelOptions& options) {
  CFX_RETURN_IF_ERROR(scope.status());
  AddingModel m;
  m.inputs = ops::Placeholder(
      scope.WithOpName("inputs"), cfx::DT_FLOAT,
      ops::PlaceholderAttrs().Shape(cfx::PartialTensorShape({options.time_steps, -1, 2})));
  m.lengths = ops::Placeholder(scope.WithOpName("lengths"), cfx::DT_INT32,
                               ops::PlaceholderAttrs().Shape(cfx::PartialTensorShape({-1})));
  m.targets = ops::Placeholder(scope.WithOpName("targets"), cfx::DT_FLOAT,
                               ops::PlaceholderAttrs().Shape(cfx::PartialTensorShape({-1})));
  const LstmWeights weights =
      LstmVariables(scope.NewSubScope("lstm"), 2, options.units, cfx::DT_FLOAT, options.seed);
  RnnOutputs rnn;
  DynamicRnnOptions rnn_options;
  rnn_options.swap_memory = options.swap_memory;
  CFX_RETURN_IF_ERROR(options.dynamic
                          ? DynamicRnn(scope, weights, m.inputs, m.lengths, &rnn, rnn_options)
                          : StaticRnn(scope, weights, m.inputs, m.lengths, &rnn));
  const Output last = LastValidOutput(scope, rnn.outputs, m.lengths);
  m.prediction = ops::Reshape(scope, cfx::layers::Dense(scope.NewSubScope("head"), last, 1), {-1});
  m.loss = ops::Mean(scope, ops::SquaredDifference(scope, m.prediction, m.targets), 0);
  const Output hit = ops::Less(scope, ops::Abs(scope, ops::Sub(scope, m.prediction, m.targets)),
                               kAccuracyTolerance);
  m.accuracy = ops::Mean(scope, ops::Cast(scope, hit, cfx::DT_FLOAT), 0);
  CFX_RETURN_IF_ERROR(scope.status());
  return m;
}

cfx::StatusOr<AddingModel> BuildAddingModel(const Scope& scope, const AddingModelOptions& options) {
  CFX_ASSIGN_OR_RETURN(AddingModel m, BuildAddingReplica(scope, options));
  // The gradient runs backwards through the loop: a backward WhileLoop with stacks.
  cfx::AdamOptimizer adam(options.learning_rate);
  m.train = adam.Minimize(scope, m.loss, {}, cfx::GlobalStep(scope));
  CFX_RETURN_IF_ERROR(scope.status());
  return m;
}

}  // namespace rnn
