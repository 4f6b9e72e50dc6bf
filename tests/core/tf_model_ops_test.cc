// The ops that models built from Keras layers, Keras activations and tf.* functions contain
// (tests/fixtures/tf/model_ops.txt, written by make_model_ops.py with TensorFlow 2.21) are
// registered, with TensorFlow's OpDef (tf_op_defs_test compares every registered op with
// op_registry.pbtxt), or are the functional ops that the lowering passes rewrite, or are on the
// work list model_ops_missing.txt, which this test keeps exact: an op registered since must leave
// the list, and the list holds only ops of model_ops.txt.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace cfx {
namespace {

std::string ModelOpsDir() { return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/tf/"; }

// The first word of each line that is not a comment.
std::vector<std::string> OpsListed(const std::string& file) {
  std::ifstream in(ModelOpsDir() + file);
  EXPECT_TRUE(in.good()) << ModelOpsDir() + file;
  std::vector<std::string> ops;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string op;
    if (words >> op) ops.push_back(op);
  }
  return ops;
}


// Rewritten into the graph's own nodes before placement (passes/lower_functions.cc).
const std::set<std::string> kLoweredOps = {"If",   "StatelessIf",   "While",
                                           "StatelessWhile", "Case", "StatelessCase",
                                           "PartitionedCall", "StatefulPartitionedCall"};

TEST(TensorFlowModelOps, EveryOpModelsUseIsRegisteredLoweredOrOnTheWorkList) {
  const std::vector<std::string> ops = OpsListed("model_ops.txt");
  ASSERT_GT(ops.size(), 300u) << "model_ops.txt is missing or truncated";
  const std::vector<std::string> missing = OpsListed("model_ops_missing.txt");
  const std::set<std::string> work_list(missing.begin(), missing.end());
  int supported = 0;
  for (const std::string& op : ops) {
    const bool registered = test::DefaultConfigRuntime().ops().LookUp(op) != nullptr;
    const bool lowered = kLoweredOps.count(op) > 0;
    if (work_list.count(op)) {
      EXPECT_FALSE(registered) << op << " is registered now: remove it from "
                               << ModelOpsDir() << "model_ops_missing.txt";
      continue;
    }
    EXPECT_TRUE(registered || lowered)
        << op << " (model_ops.txt) is not registered: register it, or add it to "
        << ModelOpsDir() << "model_ops_missing.txt";
    supported += registered || lowered;
  }
  RecordProperty("model_ops", static_cast<int>(ops.size()));
  RecordProperty("supported", supported);
  std::printf("%d of %zu ops models use are registered or lowered\n", supported, ops.size());
}

TEST(TensorFlowModelOps, TheWorkListHoldsOnlyOpsModelsUse) {
  const std::vector<std::string> ops = OpsListed("model_ops.txt");
  const std::set<std::string> used(ops.begin(), ops.end());
  for (const std::string& op : OpsListed("model_ops_missing.txt"))
    EXPECT_TRUE(used.count(op)) << op << " is on model_ops_missing.txt but not in model_ops.txt";
}

}  // namespace
}  // namespace cfx
