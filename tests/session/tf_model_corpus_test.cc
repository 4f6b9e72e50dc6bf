// Small models of common Keras model families (ResNet, MobileNetV2, EfficientNet, DenseNet,
// Inception, VGG, ConvNeXt, transformer encoders, LSTM and GRU), frozen by TensorFlow, run
// through a Session and compared with TensorFlow's own outputs. Fixtures: tests/fixtures/models
// (made by make_models.py; manifest.txt lists the cases, one test per case).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "tf_fixture_manifest.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// The models are float32 end to end, each output a few hundred to a few thousand multiply-adds
// deep, and TensorFlow and Conflux sum in different orders (other convolution and GEMM
// blockings; XLA for the grouped convolution): their outputs differed by at most 1e-6 absolute
// and 8e-6 relative when the fixtures were made. 1e-4 absolute + 1e-4 relative leaves room for
// other blockings (thread counts, instruction sets), while a wrong op (a missed epsilon, an
// off-by-one window, a swapped gate) moves a probability or logit by far more: the logits have
// standard deviation 2 (README.md).
constexpr double kAtol = 1e-4;
constexpr double kRtol = 1e-4;

std::string FixtureDir() { return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/models"; }

const std::vector<FixtureCase>& AllCases() {
  static const std::vector<FixtureCase> cases = ReadFixtureManifest(FixtureDir());
  return cases;
}

TEST(TfModelCorpus, ManifestListsEveryModel) {
  // 13 cases when written (README.md); fewer means the manifest is missing or truncated.
  EXPECT_EQ(AllCases().size(), 13u) << FixtureDir() << "/manifest.txt";
  for (const FixtureCase& c : AllCases()) {
    EXPECT_TRUE(c.error.empty()) << c.name << ": " << c.error;
    EXPECT_TRUE(c.needs.empty()) << c.name << " is marked as needing ops: every model runs";
  }
}

class TfModelCorpus : public ::testing::TestWithParam<size_t> {};

TEST_P(TfModelCorpus, MatchesTensorFlow) {
  RunFixtureCase(FixtureDir(), AllCases()[GetParam()], kAtol, kRtol);
}

INSTANTIATE_TEST_SUITE_P(Models, TfModelCorpus, ::testing::Range<size_t>(0, AllCases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return AllCases()[info.param].name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TfModelCorpus);

// The session's remapper fuses both ways TensorFlow models write the tanh GELU into their dense
// layers (MatchesTensorFlow checks the values): no Pow or Tanh is left to run.
TEST(TfModelCorpus, TanhGeluJoinsTheDenseLayers) {
  const auto it = std::find_if(AllCases().begin(), AllCases().end(),
                               [](const FixtureCase& c) { return c.name == "transformer_tanh"; });
  ASSERT_NE(it, AllCases().end());
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(FixtureDir(), *it, &loaded));
  std::unique_ptr<Session> session = NewTestSession(loaded.graph);
  ASSERT_NE(session, nullptr);
  std::vector<Tensor> outputs;
  RunMetadata metadata;
  ASSERT_OK(session->Run(RunOptions(), loaded.feeds, loaded.fetches, {}, &outputs, &metadata));
  std::map<std::string, int> ops;
  for (const auto& [device, part] : metadata.partition_graphs)
    for (const NodeDef& n : part.node) ++ops[n.op];
  EXPECT_EQ(ops["Pow"] + ops["Tanh"], 0);
  EXPECT_GE(ops["_FusedMatMul"], 2);
}

}  // namespace
}  // namespace cfx
