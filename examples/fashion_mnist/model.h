// The Fashion-MNIST CNN of TensorFlow's "Deep MNIST" tutorial, built with the C++ client API:
// conv 5x5x32 + ReLU, max-pool 2x2, conv 5x5x64 + ReLU, max-pool 2x2, dense 1024 + ReLU,
// dropout, dense 10; softmax cross-entropy loss; Adam.
#ifndef CONFLUX_EXAMPLES_FASHION_MNIST_MODEL_H_
#define CONFLUX_EXAMPLES_FASHION_MNIST_MODEL_H_

#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"

namespace fashion {

struct Model {
  cfx::Output images;    // float [batch, 28, 28, 1] in [0, 1] (fed, or from the input queue)
  cfx::Output labels;    // int32 [batch]
  cfx::Output training;  // bool scalar: dropout on (defaults to true through the input graph)
  cfx::Output logits, loss, accuracy, correct;  // correct: int32 count of right answers
};

// Builds the network over `images` / `labels` (and a `training` flag).
Model BuildModel(const cfx::Scope& scope, const cfx::Output& images, const cfx::Output& labels,
                 const cfx::Output& training, float dropout_rate);

}  // namespace fashion

#endif  // CONFLUX_EXAMPLES_FASHION_MNIST_MODEL_H_
