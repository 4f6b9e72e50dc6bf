// DistributedOptimizer over a group of 2^k tasks seeds each replica's backward pass with 2^-k
// instead of 1 and only sums the gradients (core/src/cc/distributed.cc): that the gradients
// come out divided by 2^k to the bit, through the layers a model is made of (convolutions,
// batch normalization, pooling, dense layers, ReLU, softmax cross-entropy and a mean), is what
// keeps its means the same bits as the sums divided after the reduction.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "conflux/cc/client_session.h"
#include "conflux/cc/gradients.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/variables.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;

TEST(MeanSeed, GradientsOfASeedOfTwoToTheMinusKAreTheGradientsScaledToTheBit) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  layers::SetGraphSeed(root, 7);
  auto images = ops::Placeholder(root, DT_FLOAT, ops::PlaceholderAttrs().Shape({8, 12, 12, 3}));
  auto labels = ops::Placeholder(root, DT_INT32, ops::PlaceholderAttrs().Shape({8}));
  Output h = layers::Conv2D(root, images, 8, 3, 1, "SAME", layers::Activation::kRelu);
  h = layers::BatchNorm(root, h, /*training=*/true);
  h = layers::MaxPool(root, h, 2, 2);
  h = layers::Conv2D(root, h, 4, 3, 2, "VALID", layers::Activation::kRelu);
  h = layers::Dense(root, layers::Flatten(root, h), 16, layers::Activation::kRelu);
  Output logits = layers::Dense(root, h, 5);
  Output loss =
      ops::Mean(root, ops::SparseSoftmaxCrossEntropyWithLogits(root, logits, labels).loss, 0);
  const std::vector<Output> vars = root.GetCollection(kTrainableVariables);
  ASSERT_GE(vars.size(), 8u);
  std::vector<Output> plain;
  ASSERT_TRUE(AddSymbolicGradients(root, {loss}, vars, &plain).ok()) << root.status();
  const std::vector<float> scales = {0.5f, 0.25f, 0.125f, 1.0f / 1024};
  std::vector<std::vector<Output>> scaled(scales.size());
  for (size_t k = 0; k < scales.size(); ++k) {
    Output seed = ops::Fill(root, ops::Shape(root, loss), scales[k]);
    ASSERT_TRUE(AddSymbolicGradients(root, {loss}, vars, {seed}, &scaled[k]).ok()) << root.status();
  }
  Operation init = GlobalVariablesInitializer(root);
  ASSERT_TRUE(root.ok()) << root.status();

  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor x(DT_FLOAT, TensorShape({8, 12, 12, 3})), y(DT_INT32, TensorShape({8}));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = normal(rng);
  for (int i = 0; i < 8; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(rng() % 5);
  ClientSession session(root, &TestRuntime());
  ASSERT_TRUE(session.Run({}, {}, {init}, nullptr).ok());
  std::vector<Output> fetches = plain;
  for (const auto& g : scaled) fetches.insert(fetches.end(), g.begin(), g.end());
  std::vector<Tensor> out;
  Status s = session.Run({{images, x}, {labels, y}}, fetches, &out);
  ASSERT_TRUE(s.ok()) << s;
  const size_t n = vars.size();
  for (size_t k = 0; k < scales.size(); ++k) {
    for (size_t v = 0; v < n; ++v) {
      const Tensor& want = out[v];
      const Tensor& got = out[(k + 1) * n + v];
      ASSERT_EQ(want.num_elements(), got.num_elements());
      int64_t nonzero = 0, differ = 0;
      for (int64_t i = 0; i < want.num_elements(); ++i) {
        const float w = want.data<float>()[i] * scales[k];
        nonzero += w != 0;
        differ += std::memcmp(&w, &got.data<float>()[i], sizeof(float)) != 0;
      }
      EXPECT_GT(nonzero, 0) << vars[v].node()->name();
      EXPECT_EQ(differ, 0) << "gradient of " << vars[v].node()->name() << " with a seed of "
                           << scales[k] << ": " << differ << " of " << want.num_elements()
                           << " elements are not the plain gradient's times the seed";
    }
  }
}

}  // namespace
}  // namespace cfx
