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

constexpr double kFunctionAtol = 1e-6;
constexpr double kFunctionRtol = 1e-5;

std::string FunctionFixtureDir() {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/functions";
}

const std::vector<FixtureCase>& AllCases() {
  static const std::vector<FixtureCase> cases = ReadFixtureManifest(FunctionFixtureDir());
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
  // 24 cases when written (README.md); fewer means the manifest is missing or truncated.
  EXPECT_GE(Runnable().size(), 24u) << FunctionFixtureDir() << "/manifest.txt";
}

class TfFunctionFixture : public ::testing::TestWithParam<size_t> {};

TEST_P(TfFunctionFixture, MatchesTensorFlow) {
  RunFixtureCase(FunctionFixtureDir(), Runnable()[GetParam()], kFunctionAtol, kFunctionRtol);
}

// What ran is v1 control flow and plain nodes: no functional op reaches the executors.
TEST_P(TfFunctionFixture, RunsLowered) {
  const FixtureCase& c = Runnable()[GetParam()];
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(FunctionFixtureDir(), c, &loaded));
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

// Runs `loaded` through a Session; the error must name one of `missing`.
void ExpectRefusedNaming(const LoadedCase& loaded, const std::vector<std::string>& missing) {
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&TestRuntime(), loaded.graph);
  Status status = session.status();
  if (status.ok()) {
    std::vector<Tensor> outputs;
    status = (*session)->Run(loaded.feeds, loaded.fetches, {}, &outputs);
  }
  ASSERT_FALSE(status.ok()) << "it ran";
  EXPECT_TRUE(std::any_of(missing.begin(), missing.end(), [&](const std::string& op) {
    return status.message().find(op) != std::string::npos;
  })) << status;
}

// A graph needing an op Conflux lacks is lowered and then refused with an error naming the op,
// not a crash: the cases the manifest marks #needs, and the functional while's gradient with
// its TensorListPopBack (inside a loop body in the function library) renamed to an op nobody
// registers (a name of the same length keeps the serialized library valid).
TEST(TfFunctionFixtures, MissingOpsAreNamed) {
  for (const FixtureCase& c : Unsupported()) {
    SCOPED_TRACE(c.name);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(FunctionFixtureDir(), c, &loaded));
    ExpectRefusedNaming(loaded, c.needs);
  }
  auto grad = std::find_if(Runnable().begin(), Runnable().end(),
                           [](const FixtureCase& c) { return c.name == "while_grad"; });
  ASSERT_NE(grad, Runnable().end()) << "the manifest has no while_grad case";
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(LoadFixtureCase(FunctionFixtureDir(), *grad, &loaded));
  const std::string op = "TensorListPopBack", missing = "TensorListPopNone";
  std::string& library = loaded.graph.library;
  int renamed = 0;
  for (size_t at = library.find(op); at != std::string::npos; at = library.find(op, at)) {
    library.replace(at, op.size(), missing);
    ++renamed;
  }
  ASSERT_GT(renamed, 0) << "while_grad's library has no " << op;
  ExpectRefusedNaming(loaded, {missing});
}

}  // namespace
}  // namespace cfx
