// Random programs of nested while loops and conditionals, emitted as GraphDefs of Switch, Merge,
// Enter, Exit, NextIteration and LoopCond and checked against the same program run directly in
// C++: on one device with one and four inter-op threads, and with their arithmetic scattered over
// two devices (loops and conditionals split across partitions, EuroSys 2018 §4.4).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <tuple>

#include "conflux/config.h"
#include "conflux/session.h"
#include "kernel_test_util.h"
#include "random_program.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

struct Variant {
  int inter_op;
  int cpus;
};

class RandomLoops : public ::testing::TestWithParam<Variant> {};

TEST_P(RandomLoops, MatchDirectEvaluation) {
  const Variant v = GetParam();
  for (uint32_t seed = 0; seed < 40; ++seed) {
    std::mt19937 rng(seed);
    const std::vector<Stmt> program = RandomProgram(rng, 0);
    Emitter emitter(&rng, v.cpus > 1 ? std::vector<std::string>{"/device:CPU:0", "/device:CPU:1"}
                                     : std::vector<std::string>{"/device:CPU:0"});
    emitter.builder().Placeholder("x", DT_FLOAT);
    const std::string y = emitter.Emit(program, "x", "");
    auto session = Session::Create(&TestRuntimeWith(v.inter_op, v.cpus), emitter.builder().graph());
    ASSERT_TRUE(session.ok()) << session.status();
    RunOptions options;
    options.timeout_ms = 60000;  // a lost dead signal would hang the step: fail instead
    for (float x : {-0.7f, 0.1f, 0.9f}) {
      std::vector<Tensor> out;
      Status s =
          (*session)->Run(options, {{"x:0", MakeScalar<float>(x)}}, {y + ":0"}, {}, &out, nullptr);
      ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s;
      EXPECT_NEAR(Values<float>(out[0])[0], Evaluate(program, x), 1e-4)
          << "seed " << seed << ", x " << x;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Executor, RandomLoops,
                         ::testing::Values(Variant{1, 1}, Variant{4, 1}, Variant{2, 2}),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return "inter_op" + std::to_string(info.param.inter_op) + "_cpus" +
                                  std::to_string(info.param.cpus);
                         });

}  // namespace
}  // namespace cfx
