// Conditional accumulators (ConditionalAccumulator and ResourceConditionalAccumulator): means and
// sums, stale gradients, the global step, bad input, and takes that wait for gradients from
// concurrent Run calls or are released by Session::Close and step timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bounded_wait.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

// `base` with a suffix no earlier call returned: accumulators in the default container outlive
// their sessions, and a test run again (--gtest_repeat) must not find the last run's.
std::string Fresh(const std::string& base) {
  static std::atomic<int> count{0};
  return base + "_" + std::to_string(count++);
}

struct AccumulatorOptions {
  std::string shared_name;
  PartialTensorShape shape = PartialTensorShape({2});
  std::string reduction = "MEAN";
  bool resource = false;  // ResourceConditionalAccumulator and the Resource* operations
};

// acc: a float accumulator; apply(step, grad), take(n), num, set_step(new_step) on it, and
// apply_double, an apply whose dtype is not the accumulator's.
GraphDef AccumulatorGraph(const AccumulatorOptions& o) {
  const std::string prefix = o.resource ? "Resource" : "";
  GraphBuilder b;
  b.Op("acc", prefix + "ConditionalAccumulator", {},
       {{"dtype", F()},
        {"shape", AttrValue::Shape(o.shape)},
        {"shared_name", AttrValue::String(o.shared_name)},
        {"reduction_type", AttrValue::String(o.reduction)}});
  b.Placeholder("step", DT_INT64);
  b.Placeholder("grad", DT_FLOAT);
  b.Op("apply", prefix + "AccumulatorApplyGradient", {"acc", "step", "grad"}, {{"dtype", F()}});
  b.Placeholder("grad_double", DT_DOUBLE);
  b.Op("apply_double", prefix + "AccumulatorApplyGradient", {"acc", "step", "grad_double"},
       {{"dtype", AttrValue::Type(DT_DOUBLE)}});
  b.Placeholder("n", DT_INT32);
  b.Op("take", prefix + "AccumulatorTakeGradient", {"acc", "n"}, {{"dtype", F()}});
  b.Op("num", prefix + "AccumulatorNumAccumulated", {"acc"});
  b.Placeholder("new_step", DT_INT64);
  b.Op("set_step", prefix + "AccumulatorSetGlobalStep", {"acc", "new_step"});
  return b.graph();
}

Status Apply(Session* s, int64_t step, std::vector<float> grad) {
  return s->Run({{"step", MakeScalar<int64_t>(step)}, {"grad", MakeVector<float>(grad)}}, {},
                {"apply"}, nullptr);
}

StatusOr<std::vector<float>> Take(Session* s, int32_t n) {
  std::vector<Tensor> out;
  CFX_RETURN_IF_ERROR(s->Run({{"n", MakeScalar<int32_t>(n)}}, {"take"}, {}, &out));
  return Values<float>(out[0]);
}

int32_t NumAccumulated(Session* s) {
  std::vector<Tensor> out;
  Status st = s->Run({}, {"num"}, {}, &out);
  EXPECT_OK(st);
  return st.ok() ? out[0].at<int32_t>(0) : -1;
}

TEST(AccumulatorTest, TakeGradientReturnsTheMeanAndResets) {
  for (bool resource : {false, true}) {
    SCOPED_TRACE(resource ? "ResourceConditionalAccumulator" : "ConditionalAccumulator");
    auto session = NewTestSession(AccumulatorGraph(
        {.shared_name = Fresh(resource ? "acc_mean_resource" : "acc_mean"), .resource = resource}));
    ASSERT_OK(Apply(session.get(), 0, {1, 2}));
    ASSERT_OK(Apply(session.get(), 0, {3, 4}));
    ASSERT_OK(Apply(session.get(), 0, {5, 12}));
    EXPECT_EQ(NumAccumulated(session.get()), 3);
    auto mean = Take(session.get(), 3);
    ASSERT_OK(mean.status());
    EXPECT_EQ(*mean, (std::vector<float>{3, 6}));
    EXPECT_EQ(NumAccumulated(session.get()), 0);
    // The next round starts from zero (at local step 1: the take advanced the global step).
    ASSERT_OK(Apply(session.get(), 1, {10, 20}));
    mean = Take(session.get(), 1);
    ASSERT_OK(mean.status());
    EXPECT_EQ(*mean, (std::vector<float>{10, 20}));
  }
}

TEST(AccumulatorTest, SumReductionReturnsTheSum) {
  auto session =
      NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_sum"), .reduction = "SUM"}));
  ASSERT_OK(Apply(session.get(), 0, {1, 2}));
  ASSERT_OK(Apply(session.get(), 0, {3, 4}));
  ASSERT_OK(Apply(session.get(), 0, {5, 12}));
  auto sum = Take(session.get(), 3);
  ASSERT_OK(sum.status());
  EXPECT_EQ(*sum, (std::vector<float>{9, 18}));
}

TEST(AccumulatorTest, SumsIntoBuffersOfItsOwn) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_own_buffer")}));
  // The fed gradient is not summed into: the caller still holds it.
  Tensor fed = MakeVector<float>({1, 2});
  ASSERT_OK(
      session->Run({{"step", MakeScalar<int64_t>(0)}, {"grad", fed}}, {}, {"apply"}, nullptr));
  ASSERT_OK(Apply(session.get(), 0, {3, 4}));
  EXPECT_EQ(Values<float>(fed), (std::vector<float>{1, 2}));
  // Nor is a taken mean: the next round sums elsewhere.
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"n", MakeScalar<int32_t>(2)}}, {"take"}, {}, &out));
  Tensor taken = out[0];
  ASSERT_OK(Apply(session.get(), 1, {100, 100}));
  ASSERT_OK(Apply(session.get(), 1, {100, 100}));
  EXPECT_EQ(Values<float>(taken), (std::vector<float>{2, 3}));
}

TEST(AccumulatorTest, StaleGradientIsDroppedSilently) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_stale")}));
  ASSERT_OK(Apply(session.get(), 0, {1, 1}));
  ASSERT_OK(Take(session.get(), 1).status());      // global step 0 -> 1
  ASSERT_OK(Apply(session.get(), 0, {100, 100}));  // computed at step 0: stale, dropped
  EXPECT_EQ(NumAccumulated(session.get()), 0);
  ASSERT_OK(Apply(session.get(), 1, {2, 4}));
  ASSERT_OK(Apply(session.get(), 7, {4, 8}));  // a newer local step counts
  EXPECT_EQ(NumAccumulated(session.get()), 2);
  auto mean = Take(session.get(), 2);
  ASSERT_OK(mean.status());
  EXPECT_EQ(*mean, (std::vector<float>{3, 6}));
}

TEST(AccumulatorTest, SetGlobalStepDecidesWhichGradientsAreStale) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_set_step")}));
  auto set_step = [&](int64_t step) {
    return session->Run({{"new_step", MakeScalar<int64_t>(step)}}, {}, {"set_step"}, nullptr);
  };
  ASSERT_OK(set_step(5));
  ASSERT_OK(Apply(session.get(), 4, {1, 1}));  // dropped
  EXPECT_EQ(NumAccumulated(session.get()), 0);
  ASSERT_OK(Apply(session.get(), 5, {2, 2}));
  EXPECT_EQ(NumAccumulated(session.get()), 1);
  ASSERT_OK(Take(session.get(), 1).status());  // global step 5 -> 6
  ASSERT_OK(Apply(session.get(), 5, {3, 3}));  // dropped now
  EXPECT_EQ(NumAccumulated(session.get()), 0);
  ASSERT_OK(set_step(2));  // a step back is allowed (with a warning)
  ASSERT_OK(Apply(session.get(), 3, {4, 4}));
  EXPECT_EQ(NumAccumulated(session.get()), 1);
}

TEST(AccumulatorTest, ShapeMismatchIsAnErrorNamingTheNode) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_shape")}));
  Status s = Apply(session.get(), 0, {1, 2, 3});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("node apply"), std::string::npos) << s;
  EXPECT_NE(s.message().find("shape [2]"), std::string::npos) << s;
  EXPECT_NE(s.message().find("got shape [3]"), std::string::npos) << s;
  EXPECT_EQ(NumAccumulated(session.get()), 0);

  // A partial shape takes any length, but every gradient of one round must agree.
  auto partial = NewTestSession(
      AccumulatorGraph({.shared_name = Fresh("acc_partial"), .shape = PartialTensorShape({-1})}));
  ASSERT_OK(Apply(partial.get(), 0, {1, 2, 3}));
  s = Apply(partial.get(), 0, {1, 2});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("holds gradients of shape [3]"), std::string::npos) << s;
  EXPECT_EQ(NumAccumulated(partial.get()), 1);
}

TEST(AccumulatorTest, BadInputIsAClearError) {
  const std::string name = Fresh("acc_bad_input");
  auto session = NewTestSession(AccumulatorGraph({.shared_name = name}));
  Status s =
      session->Run({{"step", MakeScalar<int64_t>(0)}, {"grad_double", MakeVector<double>({1, 2})}},
                   {}, {"apply_double"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("node apply_double"), std::string::npos) << s;
  EXPECT_NE(s.message().find("holds float gradients"), std::string::npos) << s;

  s = Take(session.get(), 0).status();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("node take"), std::string::npos) << s;
  EXPECT_NE(s.message().find("num_required must be at least 1"), std::string::npos) << s;

  s = session->Run({{"step", MakeVector<int64_t>({0, 1})}, {"grad", MakeVector<float>({1, 2})}}, {},
                   {"apply"}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("local_step must be a scalar"), std::string::npos) << s;

  // Another node that shares the name but not the shape.
  auto other =
      NewTestSession(AccumulatorGraph({.shared_name = name, .shape = PartialTensorShape({3})}));
  s = other->Run({}, {"num"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("node acc"), std::string::npos) << s;
  EXPECT_NE(s.message().find("exists with dtype float, shape [2]"), std::string::npos) << s;
}

TEST(AccumulatorTest, UnknownHandleIsNotFound) {
  GraphDef g = AccumulatorGraph({.shared_name = Fresh("acc_gone"), .resource = true});
  for (NodeDef& n : g.node)
    if (n.name == "acc") n.attr["container"] = AttrValue::String("accumulators");
  auto session = NewTestSession(g);
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"acc"}, {}, &out));
  Tensor handle = out[0];
  ASSERT_OK(session->Reset({"accumulators"}));
  Status s = session->Run({{"acc", handle}}, {"num"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_NE(s.message().find("node num"), std::string::npos) << s;
  EXPECT_NE(s.message().find("acc_gone"), std::string::npos) << s;
}

TEST(AccumulatorTest, TakeGradientWaitsForGradientsFromConcurrentRuns) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_concurrent")}));
  std::atomic<bool> taken{false};
  StatusOr<std::vector<float>> mean = errors::Internal("not taken");
  std::thread taker([&] {
    mean = Take(session.get(), 3);
    taken = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // let the take start waiting
  // Two replicas apply one gradient each, at once.
  RunOnThreads(2, [&](int i) {
    EXPECT_OK(Apply(session.get(), 0, {static_cast<float>(i + 1), 10}));
  });
  EXPECT_EQ(NumAccumulated(session.get()), 2);  // not enough: nothing was taken
  EXPECT_FALSE(taken.load());
  ASSERT_OK(Apply(session.get(), 0, {6, 40}));
  RunOrAbort("the take after its third gradient", [&] { taker.join(); });
  ASSERT_OK(mean.status());
  EXPECT_EQ(*mean, (std::vector<float>{3, 20}));
  EXPECT_EQ(NumAccumulated(session.get()), 0);
}

TEST(AccumulatorTest, BlockedTakeIsReleasedBySessionClose) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_session_close")}));
  Status blocked;
  std::thread taker([&] { blocked = Take(session.get(), 1).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_OK(session->Close());
  RunOrAbort("the take blocked when the session closed", [&] { taker.join(); });
  EXPECT_EQ(blocked.code(), Code::kCancelled) << blocked;
}

TEST(AccumulatorTest, BlockedTakeIsReleasedByTheStepTimeout) {
  auto session = NewTestSession(AccumulatorGraph({.shared_name = Fresh("acc_timeout")}));
  RunOptions options;
  options.timeout_ms = 50;
  Status s;
  RunOrAbort("the take with a step timeout", [&] {
    s = session->Run(options, {{"n", MakeScalar<int32_t>(1)}}, {"take"}, {}, nullptr, nullptr);
  });
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  // The session stays usable, and the cancelled take neither took a gradient nor advanced the
  // global step: a gradient of local step 0 still counts.
  ASSERT_OK(Apply(session.get(), 0, {1, 2}));
  EXPECT_EQ(NumAccumulated(session.get()), 1);
  auto mean = Take(session.get(), 1);
  ASSERT_OK(mean.status());
  EXPECT_EQ(*mean, (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace cfx
