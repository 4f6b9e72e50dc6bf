// TensorFlow 2 graphs whose control flow and calls stay functional (If, StatelessIf,
// StatelessCase, StatelessWhile, PartitionedCall, StatefulPartitionedCall, with their bodies in
// the function library) run through a Session, which inlines and lowers them, and are compared
// with TensorFlow's own results. Fixtures: tests/fixtures/functions (made by
// make_function_fixtures.py; manifest.txt lists the cases, one test per case).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tf_fixture_manifest.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

constexpr double kAtol = 1e-6;
constexpr double kRtol = 1e-5;

std::string FixtureDir() { return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/functions"; }

const std::vector<FixtureCase>& AllCases() {
  static const std::vector<FixtureCase> cases = ReadFixtureManifest(FixtureDir());
  return cases;
}

// The cases Conflux runs, or those that need ops it lacks.
std::vector<FixtureCase> Cases(bool runnable) {
  std::vector<FixtureCase> out;
  for (const FixtureCase& c : AllCases())
    if (c.needs.empty() == runnable) out.push_back(c);
  return out;
}

const std::vector<FixtureCase>& Runnable() {
  static const std::vector<FixtureCase> cases = Cases(true);
  return cases;
}

const std::vector<FixtureCase>& Unsupported() {
  static const std::vector<FixtureCase> cases = Cases(false);
  return cases;
}

TEST(TfFunctionFixtures, ManifestListsEveryCase) {
  // 17 + 1 cases when written (README.md); fewer means the manifest is missing or truncated.
  EXPECT_GE(Runnable().size(), 17u) << FixtureDir() << "/manifest.txt";
  EXPECT_GE(Unsupported().size(), 1u) << FixtureDir() << "/manifest.txt";
}

class TfFunctionFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(TfFunctionFixture, MatchesTensorFlow) {
  RunFixtureCase(FixtureDir(), Runnable()[GetParam()], kAtol, kRtol);
}

// What ran is v1 control flow and plain nodes: no functional op reaches the executors.
TEST_P(TfFunctionFixture, RunsLowered) {
  const FixtureCase& c = Runnable()[GetParam()];
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(FixtureDir(), c, &loaded));
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&TestRuntime(), loaded.graph);
  ASSERT_TRUE(session.ok()) << session.status();
  RunMetadata metadata;
  std::vector<Tensor> outputs;
  ASSERT_OK((*session)->Run(RunOptions(), loaded.feeds, loaded.fetches, {}, &outputs, &metadata));
  const std::set<std::string> functional = {
      "If",   "StatelessIf",   "While",           "StatelessWhile",
      "Case", "StatelessCase", "PartitionedCall", "StatefulPartitionedCall"};
  std::set<std::string> ops;
  for (const auto& [device, part] : metadata.partition_graphs)
    for (const NodeDef& n : part.node) {
      EXPECT_FALSE(functional.count(n.op)) << n.name << " (" << n.op << ") was not lowered";
      ops.insert(n.op);
    }
  EXPECT_TRUE(ops.count("Switch") && ops.count("Merge")) << c.name << " has no lowered branch";
}

INSTANTIATE_TEST_SUITE_P(TfFixtures, TfFunctionFixture,
                         ::testing::Range<size_t>(0, Runnable().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return Runnable()[info.param].name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TfFunctionFixture);

// A graph needing ops Conflux lacks (TensorList ops of a functional while's gradient) is lowered
// and then refused with an error naming such an op, not a crash.
TEST(TfFunctionFixtures, MissingOpsAreNamed) {
  for (const FixtureCase& c : Unsupported()) {
    SCOPED_TRACE(c.name);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(FixtureDir(), c, &loaded));
    StatusOr<std::unique_ptr<Session>> session = Session::Create(&TestRuntime(), loaded.graph);
    Status status = session.status();
    if (status.ok()) {
      std::vector<Tensor> outputs;
      status = (*session)->Run(loaded.feeds, loaded.fetches, {}, &outputs);
    }
    ASSERT_FALSE(status.ok()) << "it ran; update the manifest's #needs line";
    EXPECT_TRUE(std::any_of(c.needs.begin(), c.needs.end(), [&](const std::string& op) {
      return status.message().find(op) != std::string::npos;
    })) << status;
  }
}

}  // namespace
}  // namespace cfx
