// Training utilities of the client API: variables and their initializer, each optimizer
// minimizing a least-squares problem, the global step and learning-rate decay, layers, and the
// Saver (keep-last-K, the checkpoint state file, and a resumed run reproducing the loss curve of
// an uninterrupted one).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include <gtest/gtest.h>

#include "conflux/cc/client_session.h"
#include "conflux/cc/layers.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/optimizers.h"
#include "conflux/cc/saver.h"
#include "conflux/cc/variables.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::TestRuntime;
namespace fs = std::filesystem;

// A root scope whose nodes are prefixed with the test's name: variables live in the process-wide
// default container, so each test gets its own.
Scope TestRoot() {
  std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::replace(name.begin(), name.end(), '/', '_');
  return Scope::NewRootScope(&TestRuntime()).NewSubScope(name);
}

// A least-squares model: loss = mean((x w + b - y)^2) over fixed data with an exact solution
// w = [2, -3], b = 0.5.
struct Model {
  Scope root = TestRoot();
  Output w, b, loss, step;
  Operation init;

  Model() {
    w = Variable(root.WithOpName("w"), PartialTensorShape({2, 1}), DT_FLOAT,
                 Input({0.f, 0.f}, {2, 1})).var;
    b = Variable(root.WithOpName("b"), PartialTensorShape({1}), DT_FLOAT, {0.f}).var;
    Output x = ops::Const(root, Input({1, 2, -1, 0.5f, 0.3f, -2, 2, 1}, {4, 2}));
    Output y = ops::Const(root, Input({1 * 2 - 2 * 3 + 0.5f, -1 * 2 - 0.5f * 3 + 0.5f,
                                       0.3f * 2 + 2 * 3 + 0.5f, 2 * 2 - 1 * 3 + 0.5f}, {4, 1}));
    Output pred = ops::Add(root, ops::MatMul(root, x, w), b);
    loss = ops::Mean(root, ops::Square(root, ops::Sub(root, pred, y)), {0, 1});
    step = GlobalStep(root);
  }
};

double Loss(ClientSession& s, const Output& loss) {
  std::vector<Tensor> out;
  EXPECT_OK(s.Run({}, {loss}, &out));
  return out.empty() ? 1e9 : out[0].at<float>(0);
}

template <typename Opt>
void ExpectConverges(Opt* optimizer, int steps, double below) {
  Model m;
  Operation train = optimizer->Minimize(m.root, m.loss, {}, m.step);
  ASSERT_TRUE(m.root.ok()) << m.root.status();
  ClientSession session(m.root, &TestRuntime());
  ASSERT_OK(session.Run({}, {}, {GlobalVariablesInitializer(m.root)}, nullptr));
  const double start = Loss(session, m.loss);
  for (int i = 0; i < steps; ++i) ASSERT_OK(session.Run({}, {}, {train}, nullptr));
  EXPECT_LT(Loss(session, m.loss), below * start);
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {m.step}, &out));
  EXPECT_EQ(out[0].at<int64_t>(0), steps);
}

TEST(Optimizers, GradientDescentConverges) {
  GradientDescentOptimizer opt(0.1f);
  ExpectConverges(&opt, 300, 1e-4);
}
TEST(Optimizers, MomentumConverges) {
  MomentumOptimizer opt(0.05f, 0.9f);
  ExpectConverges(&opt, 300, 1e-4);
}
TEST(Optimizers, NesterovMomentumConverges) {
  MomentumOptimizer opt(0.05f, 0.9f, /*use_nesterov=*/true);
  ExpectConverges(&opt, 300, 1e-4);
}
TEST(Optimizers, AdamConverges) {
  AdamOptimizer opt(0.1f);
  ExpectConverges(&opt, 400, 1e-3);
}
TEST(Optimizers, RMSPropConverges) {
  RMSPropOptimizer opt(0.02f);
  ExpectConverges(&opt, 400, 1e-3);
}

TEST(Optimizers, AdamMatchesItsFormulaForOneStep) {
  // One Adam step from w = 0: m = (1-b1) g, v = (1-b2) g^2,
  // w = -lr sqrt(1-b2)/(1-b1) m / (sqrt(v) + eps) = -lr sign(g) (up to eps).
  Scope root = TestRoot();
  auto w = Variable(root.WithOpName("w"), PartialTensorShape({2}), DT_FLOAT, {0.f, 0.f}).var;
  Output loss = ops::Sum(root, ops::Mul(root, w, {3.f, -0.5f}), 0);
  AdamOptimizer adam(0.01f);
  Operation train = adam.Minimize(root, loss);
  ClientSession session(root, &TestRuntime());
  ASSERT_OK(session.Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr));
  ASSERT_OK(session.Run({}, {}, {train}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {w}, &out));
  EXPECT_NEAR(out[0].at<float>(0), -0.01f, 1e-6);
  EXPECT_NEAR(out[0].at<float>(1), 0.01f, 1e-6);
}

TEST(Optimizers, ExponentialDecayStaircase) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output step = GlobalStep(root);
  Output smooth = ExponentialDecay(root, 0.5f, step, 10, 0.1f);
  Output stairs = ExponentialDecay(root, 0.5f, step, 10, 0.1f, /*staircase=*/true);
  Output set = ops::Assign(root, step, ops::Const(root, int64_t{15}));
  ClientSession session(root, &TestRuntime());
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {set}, &out));
  ASSERT_OK(session.Run({}, {smooth, stairs}, &out));
  EXPECT_NEAR(out[0].at<float>(0), 0.5 * std::pow(0.1, 1.5), 1e-6);
  EXPECT_NEAR(out[1].at<float>(0), 0.5 * 0.1, 1e-7);
}

TEST(Optimizers, NoVariablesIsAnError) {
  Scope root = Scope::NewRootScope(&TestRuntime());
  Output loss = ops::Const(root, 1.f);
  GradientDescentOptimizer opt(0.1f);
  EXPECT_FALSE(opt.Minimize(root, loss).valid());
  EXPECT_NE(root.status().message().find("no variables"), std::string::npos) << root.status();
}

TEST(Layers, DenseMlpLearnsXor) {
  Scope root = TestRoot();
  Output x = ops::Const(root, Input({0, 0, 0, 1, 1, 0, 1, 1}, {4, 2}));
  Output y = ops::Const(root, Input({0, 1, 1, 0}, {4, 1}));
  Output h = layers::Dense(root, x, 8, layers::Activation::kTanh);
  Output p = layers::Dense(root, h, 1, layers::Activation::kSigmoid);
  Output loss = ops::Mean(root, ops::Square(root, ops::Sub(root, p, y)), {0, 1});
  AdamOptimizer adam(0.05f);
  Operation train = adam.Minimize(root, loss);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root.GetCollection(kTrainableVariables).size(), 4u);
  ClientSession session(root, &TestRuntime());
  ASSERT_OK(session.Run({}, {}, {GlobalVariablesInitializer(root)}, nullptr));
  for (int i = 0; i < 500; ++i) ASSERT_OK(session.Run({}, {}, {train}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(session.Run({}, {p}, &out));
  EXPECT_LT(out[0].at<float>(0), 0.2f);
  EXPECT_GT(out[0].at<float>(1), 0.8f);
  EXPECT_GT(out[0].at<float>(2), 0.8f);
  EXPECT_LT(out[0].at<float>(3), 0.2f);
}

class SaverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(CONFLUX_BINARY_DIR) / "tests" / "saver_test" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

// Trains `m` with momentum (which has slots, so a resume must restore them too) for `steps`.
std::vector<double> Train(Model& m, ClientSession& s, Operation train, int steps) {
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    EXPECT_OK(s.Run({}, {}, {train}, nullptr));
    losses.push_back(Loss(s, m.loss));
  }
  return losses;
}

TEST_F(SaverTest, ResumingReproducesTheUninterruptedLossCurve) {
  std::vector<double> straight;
  {
    Model m;
    MomentumOptimizer opt(0.02f, 0.9f);
    Operation train = opt.Minimize(m.root, m.loss, {}, m.step);
    ClientSession s(m.root, &TestRuntime());
    ASSERT_OK(s.Run({}, {}, {GlobalVariablesInitializer(m.root)}, nullptr));
    straight = Train(m, s, train, 20);
  }
  {
    Model m;
    MomentumOptimizer opt(0.02f, 0.9f);
    Operation train = opt.Minimize(m.root, m.loss, {}, m.step);
    Saver saver(m.root);
    ClientSession s(m.root, &TestRuntime());
    ASSERT_OK(s.Run({}, {}, {GlobalVariablesInitializer(m.root)}, nullptr));
    Train(m, s, train, 10);
    ASSERT_OK(saver.Save(&s, (dir_ / "model.ckpt").string(), 10).status());
  }
  Model m;  // a fresh graph and session, as in a new process
  MomentumOptimizer opt(0.02f, 0.9f);
  Operation train = opt.Minimize(m.root, m.loss, {}, m.step);
  Saver saver(m.root);
  ClientSession s(m.root, &TestRuntime());
  auto latest = LatestCheckpoint(dir_.string());
  ASSERT_OK(latest.status());
  EXPECT_EQ(*latest, (dir_ / "model.ckpt-10").string());
  ASSERT_OK(saver.Restore(&s, *latest));
  std::vector<Tensor> out;
  ASSERT_OK(s.Run({}, {m.step}, &out));
  EXPECT_EQ(out[0].at<int64_t>(0), 10);
  std::vector<double> resumed = Train(m, s, train, 10);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(resumed[i], straight[10 + i]) << "step " << 11 + i;
}

TEST_F(SaverTest, KeepsTheLastKAndRecordsThemInTheStateFile) {
  Model m;
  Saver saver(m.root, Saver::Options{{}, 2});
  ClientSession s(m.root, &TestRuntime());
  ASSERT_OK(s.Run({}, {}, {GlobalVariablesInitializer(m.root)}, nullptr));
  const std::string prefix = (dir_ / "m").string();
  for (int step : {1, 2, 3}) ASSERT_OK(saver.Save(&s, prefix, step).status());
  EXPECT_FALSE(fs::exists(prefix + "-1.index"));
  EXPECT_FALSE(fs::exists(prefix + "-1.data-00000-of-00001"));
  EXPECT_TRUE(fs::exists(prefix + "-2.index"));
  EXPECT_TRUE(fs::exists(prefix + "-3.index"));
  EXPECT_EQ(LatestCheckpoint(dir_.string()).value(), prefix + "-3");
  // As TensorFlow's Saver: names relative to the state file's folder (tf.train.latest_checkpoint).
  std::ifstream state(dir_ / "checkpoint");
  const std::string text((std::istreambuf_iterator<char>(state)), {});
  EXPECT_EQ(text, "model_checkpoint_path: \"m-3\"\nall_model_checkpoint_paths: \"m-2\"\n"
                  "all_model_checkpoint_paths: \"m-3\"\n");
  // A new saver (a resumed process) keeps managing the old files.
  Saver again(m.root, Saver::Options{{}, 2});
  ASSERT_OK(again.Save(&s, prefix, 4).status());
  EXPECT_FALSE(fs::exists(prefix + "-2.index"));
  EXPECT_TRUE(fs::exists(prefix + "-4.index"));
}

TEST_F(SaverTest, MissingStateOrFileIsNotFound) {
  EXPECT_EQ(LatestCheckpoint(dir_.string()).status().code(), Code::kNotFound);
  fs::create_directories(dir_);
  { std::ofstream(dir_ / "checkpoint") << "model_checkpoint_path: \"" << (dir_ / "gone-5").string() << "\"\n"; }
  Status s = LatestCheckpoint(dir_.string()).status();
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("does not exist"), std::string::npos) << s;
}

TEST_F(SaverTest, PeriodicSaverSavesEveryNSteps) {
  Model m;
  Saver saver(m.root);
  ClientSession s(m.root, &TestRuntime());
  ASSERT_OK(s.Run({}, {}, {GlobalVariablesInitializer(m.root)}, nullptr));
  PeriodicSaver periodic(&saver, (dir_ / "p").string(), 5, 0);
  int saved = 0;
  for (int step = 0; step <= 12; ++step) saved += periodic.MaybeSave(&s, step).value() ? 1 : 0;
  EXPECT_EQ(saved, 2);  // at 5 and 10
  EXPECT_EQ(LatestCheckpoint(dir_.string()).value(), (dir_ / "p-10").string());
}

}  // namespace
}  // namespace cfx
