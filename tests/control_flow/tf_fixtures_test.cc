// TensorFlow-made graphs with v1 control flow (Switch/Merge/Enter/Exit/NextIteration/LoopCond,
// StackV2, TensorArrayV3, and the gradients of loops and conds) run through a Session and
// compared with TensorFlow's own results. The graphs, feeds and expected fetches are in
// tests/fixtures/control_flow (made by make_control_flow_fixtures.py; manifest.txt lists the
// cases, one test per case, named after it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tf_fixture_manifest.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// Float results: |actual - expected| <= kAtol + kRtol * |expected|; integers and bools exact.
constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-5;

std::string FixtureDir() {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/control_flow";
}

const std::vector<FixtureCase>& Cases() {
  static const std::vector<FixtureCase> cases = ReadFixtureManifest(FixtureDir());
  return cases;
}

TEST(TfControlFlowFixtures, ManifestListsEveryCase) {
  // 15 cases when written (README.md); fewer means the manifest is missing or truncated.
  EXPECT_GE(Cases().size(), 15u) << FixtureDir() << "/manifest.txt";
}

class TfControlFlowFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(TfControlFlowFixture, MatchesTensorFlow) {
  RunFixtureCase(FixtureDir(), Cases()[GetParam()], kAtol, kRtol);
}

INSTANTIATE_TEST_SUITE_P(TfFixtures, TfControlFlowFixture,
                         ::testing::Range<size_t>(0, Cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Cases()[info.param].name;
                         });
// Without a manifest there are no cases; ManifestListsEveryCase reports that.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TfControlFlowFixture);

}  // namespace
}  // namespace cfx
