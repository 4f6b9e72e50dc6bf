// The tutorial CNN (see model.h).
#include "model.h"

#include "conflux/cc/layers.h"
#include "conflux/cc/ops/nn_ops.h"
#include "conflux/cc/ops/standard_ops.h"

namespace fashion {

using cfx::Output;
namespace ops = cfx::ops;
namespace layers = cfx::layers;

Model BuildModel(const cfx::Scope& scope, const Output& images, const Output& labels,
                 const Output& training, float dropout_rate) {
  cfx::Scope s = scope.NewSubScope("model");
  Model m;
  m.images = images;
  m.labels = labels;
  m.training = training;
  Output h = layers::Conv2D(s, images, 32, 5, 1, "SAME", layers::Activation::kRelu);
  h = layers::MaxPool(s, h, 2, 2);
  h = layers::Conv2D(s, h, 64, 5, 1, "SAME", layers::Activation::kRelu);
  h = layers::MaxPool(s, h, 2, 2);
  h = layers::Dense(s, layers::Flatten(s, h), 1024, layers::Activation::kRelu);
  h = layers::Dropout(s, h, dropout_rate, training);
  m.logits = layers::Dense(s, h, 10);
  cfx::Scope l = scope.NewSubScope("loss");
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(l, m.logits, labels);
  m.loss = ops::Mean(l, xent.loss, 0);
  cfx::Scope a = scope.NewSubScope("accuracy");
  Output predicted = ops::ArgMax(a, m.logits, 1, ops::ArgMaxAttrs().OutputType(cfx::DT_INT32));
  Output right = ops::Cast(a, ops::Equal(a, predicted, labels), cfx::DT_INT32);
  m.correct = ops::Sum(a, right, 0);
  m.accuracy = ops::Mean(a, ops::Cast(a, right, cfx::DT_FLOAT), 0);
  return m;
}

}  // namespace fashion
