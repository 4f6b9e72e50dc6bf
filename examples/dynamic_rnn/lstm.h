// An LSTM built from ops with the C++ client API, run over variable-length sequences two ways
// (EuroSys 2018 §6): as TensorFlow's dynamic_rnn — one WhileLoop whose trip count is the longest
// sequence of the batch, inputs read from and outputs written to TensorArrays — and as a
// statically unrolled graph (static_rnn), one copy of the cell per time step. Both mask
// finished examples the same way, so for the same weights they compute the same values and,
// through AddSymbolicGradients, the same gradients. Also: the adding problem (Hochreiter &
// Schmidhuber 1997) as data and as a model trained with Adam, shared by the example's main and
// bench/lstm_bench.cc.
//
// Layout is time-major: inputs [time, batch, input_size], sequence lengths int32 [batch].
// Builders put their errors in the scope (and return them where they return a Status), like the
// client library. Not thread-safe, like the Scope.
#ifndef CONFLUX_EXAMPLES_DYNAMIC_RNN_LSTM_H_
#define CONFLUX_EXAMPLES_DYNAMIC_RNN_LSTM_H_

#include <cstdint>
#include <string>

#include "conflux/cc/gradients.h"
#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"
#include "conflux/status.h"
#include "conflux/tensor.h"

namespace rnn {

// The weights of one LSTM layer (TensorFlow's BasicLSTMCell): gates = [x, h] kernel + bias,
// split into i, g (TensorFlow's j), f, o along dimension 1.
struct LstmWeights {
  cfx::Output kernel;  // [input_size + units, 4 * units]
  cfx::Output bias;    // [4 * units]
  int64_t units = 0;
  float forget_bias = 1.0f;  // added to f before its sigmoid
};

struct LstmState {
  cfx::Output c, h;  // [batch, units] each
};

// Trainable variables "kernel" (Glorot-uniform from `seed`) and "bias" (zeros) of an LSTM layer,
// under `scope`.
LstmWeights LstmVariables(const cfx::Scope& scope, int64_t input_size, int64_t units,
                          cfx::DataType dtype, int64_t seed);

// One step of the cell: the state after input x [batch, input_size] (new h is also the output).
LstmState LstmCell(const cfx::Scope& scope, const LstmWeights& weights, const cfx::Output& x,
                   const LstmState& state);

struct RnnOutputs {
  // [steps, batch, units]: the output of every step the graph ran, zeros where t >= the
  // example's length. steps is the longest sequence of the batch (capped at the inputs' time
  // dimension) for DynamicRnn and the inputs' time dimension for StaticRnn; TensorFlow's
  // dynamic_rnn pads to the latter, with rows that would be zeros here.
  cfx::Output outputs;
  // The state after each example's last valid step.
  LstmState final_state;
};

struct DynamicRnnOptions {
  int parallel_iterations = 32;  // tf.nn.dynamic_rnn's default
  // The loop's gradient stacks may move to host memory (WhileLoopOptions::swap_memory).
  bool swap_memory = false;
  std::string name = "rnn";
};

// tf.nn.dynamic_rnn with an LSTM cell and a zero initial state: one WhileLoop over
// min(time, max(sequence_length)) steps. Step t reads inputs[t] from a TensorArray, runs the
// cell, keeps the old state and emits zeros for the examples with t >= sequence_length, and
// writes its output to a TensorArray that is stacked after the loop. On failure *result is
// unchanged and the error is also in the scope.
cfx::Status DynamicRnn(const cfx::Scope& scope, const LstmWeights& weights,
                       const cfx::Output& inputs, const cfx::Output& sequence_length,
                       RnnOutputs* result, const DynamicRnnOptions& options = {});

// The same computation unrolled: one cell per step of the inputs' time dimension, which must be
// statically known. Errors as DynamicRnn's.
cfx::Status StaticRnn(const cfx::Scope& scope, const LstmWeights& weights,
                      const cfx::Output& inputs, const cfx::Output& sequence_length,
                      RnnOutputs* result, const std::string& name = "rnn");

// outputs[sequence_length[b] - 1, b, :] for every b: the last valid output of each example
// ([batch, units]). Lengths must be at least 1.
cfx::Output LastValidOutput(const cfx::Scope& scope, const cfx::Output& outputs,
                            const cfx::Output& sequence_length);

// --- The adding problem ---------------------------------------------------------------------

// A batch of the adding problem: per example a length L in [min_len, max_len]; for t < L a value
// uniform in [0, 1] (channel 0) and a marker (channel 1) that is 1 at exactly two steps, one in
// each half of [0, L); zeros for t >= L. The target is the sum of the two marked values.
struct AddingBatch {
  cfx::Tensor inputs;   // float [time_steps, batch, 2]
  cfx::Tensor lengths;  // int32 [batch]
  cfx::Tensor targets;  // float [batch]
};

// The same `seed` gives the same batch. Requires 2 <= min_len <= max_len <= time_steps.
AddingBatch MakeAddingBatch(int64_t batch, int64_t min_len, int64_t max_len, int64_t time_steps,
                            uint64_t seed);

struct AddingModelOptions {
  int64_t units = 64;
  bool dynamic = true;  // DynamicRnn, else StaticRnn (needs time_steps)
  // The inputs' time dimension in the graph; -1: unknown (only with dynamic).
  int64_t time_steps = -1;
  float learning_rate = 1e-3f;
  int64_t seed = 1;  // of the initial weights
  bool swap_memory = false;  // DynamicRnnOptions::swap_memory
};

// An LSTM over the adding problem's inputs, a Dense layer on each example's last valid output,
// the mean squared error, and an Adam step on every trainable variable.
struct AddingModel {
  cfx::Output inputs;      // float [time, batch, 2] placeholder
  cfx::Output lengths;     // int32 [batch] placeholder
  cfx::Output targets;     // float [batch] placeholder
  cfx::Output prediction;  // float [batch]
  cfx::Output loss;        // mean squared error
  cfx::Output accuracy;    // fraction of |prediction - target| < kAccuracyTolerance
  cfx::Operation train;    // one Adam step (adds 1 to the global step)
};
inline constexpr float kAccuracyTolerance = 0.04f;

// Builds the model in `scope`; the error (also in the scope) on failure.
cfx::StatusOr<AddingModel> BuildAddingModel(const cfx::Scope& scope,
                                            const AddingModelOptions& options);

// The same model without its training step (`train` is left empty; options.learning_rate is
// not used): a replica for data-parallel training, whose optimizer averages the replicas'
// gradients (conflux/cc/distributed.h).
cfx::StatusOr<AddingModel> BuildAddingReplica(const cfx::Scope& scope,
                                              const AddingModelOptions& options);

}  // namespace rnn

#endif  // CONFLUX_EXAMPLES_DYNAMIC_RNN_LSTM_H_
