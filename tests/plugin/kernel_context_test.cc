// The kernel context's step, frame and iteration and its step's cancellation, as a plugin sees
// them through the ABI (fixtures/context_plugin.cc), in Session steps, in while loops and alone
// in a KernelRunner; and the SDK's answers on a host without these functions.
#include <gtest/gtest.h>

#include "bounded_wait.h"
#include "conflux/sdk/kernel.h"
#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"
#include "loop_graph.h"
#include "plugin/abi_types.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

std::unique_ptr<Runtime> ContextRuntime() {
  auto rt = RuntimeWithFixture("context");
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

Tensor EmptyInt64() { return MakeTensor<int64_t>({0}, {}); }

// One (step_id, frame_id, iteration) triple per FixtureWhere call, in call order.
struct Where {
  int64_t step, frame, iteration;
};
std::vector<Where> Triples(const Tensor& t) {
  std::vector<int64_t> v = Values<int64_t>(t);
  EXPECT_EQ(v.size() % 3, 0u);
  std::vector<Where> out;
  for (size_t i = 0; i + 2 < v.size(); i += 3) out.push_back({v[i], v[i + 1], v[i + 2]});
  return out;
}

// for (i = 0; i < n; ++i) acc = FixtureWhere(acc), then once more in the root frame.
GraphDef WhereLoop() {
  GraphBuilder b;
  b.Placeholder("n", DT_INT32);
  b.Const("acc0", EmptyInt64());
  std::vector<std::string> exits = AddCountedLoop(
      b, {.prefix = "loop/", .frame = "where", .parallel = 10, .anchor = ""}, "n",
      {{"acc", "acc0", DT_INT64}}, [&](const std::string&, const std::vector<std::string>& v) {
        b.Op("loop/where", "FixtureWhere", {v[0]});
        return std::vector<std::string>{"loop/where"};
      });
  b.Op("root_where", "FixtureWhere", {exits[0]});
  return b.graph();
}

TEST(KernelContextAbi, StepFrameAndIterationInAWhileLoop) {
  auto rt = ContextRuntime();
  ASSERT_NE(rt, nullptr);
  auto session = Session::Create(rt.get(), WhereLoop());
  ASSERT_TRUE(session.ok()) << session.status();
  constexpr int kN = 5;
  std::vector<int64_t> step_ids;
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> out;
    ASSERT_OK((*session)->Run({{"n:0", MakeScalar<int32_t>(kN)}}, {"root_where:0"}, {}, &out));
    std::vector<Where> calls = Triples(out[0]);
    ASSERT_EQ(calls.size(), static_cast<size_t>(kN + 1));
    const int64_t step = calls[0].step;
    EXPECT_GT(step, 0);
    for (int i = 0; i < kN; ++i) {
      EXPECT_EQ(calls[i].step, step) << "call " << i;
      EXPECT_EQ(calls[i].frame, calls[0].frame) << "call " << i;
      EXPECT_EQ(calls[i].iteration, i);
    }
    EXPECT_NE(calls[0].frame, 0) << "the loop's frame is not the root";
    // After the loop, in the root frame.
    EXPECT_EQ(calls[kN].step, step);
    EXPECT_EQ(calls[kN].frame, 0);
    EXPECT_EQ(calls[kN].iteration, 0);
    step_ids.push_back(step);
  }
  EXPECT_NE(step_ids[0], step_ids[1]) << "two Session::Run calls are two steps";
}

TEST(KernelContextAbi, OutsideAStepTheStepIdIsZeroAndNothingCancels) {
  auto rt = ContextRuntime();
  ASSERT_NE(rt, nullptr);
  Device* cpu = rt->FindDevice("CPU:0").value();
  auto where = RunKernelOnce(*rt, cpu, MakeNode("FixtureWhere", 1, {}), {EmptyInt64()});
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_EQ(Values<int64_t>((*where)[0]), (std::vector<int64_t>{0, 0, 0}));
  // The registration is valid and is removed before it ran: the kernel finishes on its own.
  auto wait = RunKernelOnce(*rt, cpu, MakeNode("FixtureWaitForCancel", 0, {}), {});
  ASSERT_TRUE(wait.ok()) << wait.status();
  EXPECT_EQ(Values<int64_t>((*wait)[0]), (std::vector<int64_t>{1}));
}

std::vector<int64_t> CancelCounts(Session& session) {
  std::vector<Tensor> out;
  EXPECT_OK(session.Run({}, {"counts:0"}, {}, &out));
  return out.empty() ? std::vector<int64_t>{} : Values<int64_t>(out[0]);
}

TEST(KernelContextAbi, AKernelWaitingForCancellationEndsWithTheStepsDeadline) {
  auto rt = ContextRuntime();
  ASSERT_NE(rt, nullptr);
  GraphBuilder b;
  b.Op("wait", "FixtureWaitForCancel");
  b.Op("counts", "FixtureCancelCounts");
  auto session = Session::Create(rt.get(), b.graph());
  ASSERT_TRUE(session.ok()) << session.status();
  const std::vector<int64_t> before = CancelCounts(**session);
  ASSERT_EQ(before.size(), 3u);

  RunOptions options;
  options.timeout_ms = 50;
  Status s;
  RunOrAbort("a step whose kernel waits for cancellation",
             [&] { s = (*session)->Run(options, {}, {"wait:0"}, {}, nullptr, nullptr); });
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;

  const std::vector<int64_t> after = CancelCounts(**session);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0] - before[0], 1) << "waits started";
  EXPECT_EQ(after[1] - before[1], 1) << "cancellation callbacks run";
  EXPECT_EQ(after[2] - before[2], 1) << "done calls";
}

// An asynchronous kernel may complete inside its ComputeAsync, on another thread before
// ComputeAsync returns, or after: the executor finishes the node once either way, in a chain
// and in every iteration of a loop, step after step.
TEST(KernelContextAbi, AsynchronousKernelsCompleteInlineOnAnotherThreadOrLater) {
  auto rt = ContextRuntime();
  ASSERT_NE(rt, nullptr);
  constexpr int kChain = 20;
  constexpr int kIterations = 30;
  for (const char* when : {"inline", "thread_joined", "thread_later"}) {
    SCOPED_TRACE(when);
    GraphBuilder b;
    b.Placeholder("x", DT_INT64);
    std::string last = "x";
    for (int i = 0; i < kChain; ++i) {
      const std::string name = "add" + std::to_string(i);
      b.Op(name, "FixtureAddOneAsync", {last}, {{"when", AttrValue::String(when)}});
      last = name;
    }
    b.Placeholder("n", DT_INT32);
    b.Const("zero", MakeTensor<int64_t>({}, {0}));
    std::vector<std::string> exits = AddCountedLoop(
        b, {.prefix = "loop/", .frame = "adds", .parallel = 4, .anchor = ""}, "n",
        {{"acc", "zero", DT_INT64}}, [&](const std::string&, const std::vector<std::string>& v) {
          b.Op("loop/add", "FixtureAddOneAsync", {v[0]}, {{"when", AttrValue::String(when)}});
          return std::vector<std::string>{"loop/add"};
        });
    auto session = Session::Create(rt.get(), b.graph());
    ASSERT_TRUE(session.ok()) << session.status();
    for (int step = 0; step < 5; ++step) {
      std::vector<Tensor> out;
      RunOrAbort("a step of asynchronous kernels", [&] {
        EXPECT_OK((*session)->Run({{"x", MakeTensor<int64_t>({}, {100 * step})},
                                   {"n", MakeTensor<int32_t>({}, {kIterations})}},
                                  {last + ":0", exits[0] + ":0"}, {}, &out));
      });
      ASSERT_EQ(out.size(), 2u);
      EXPECT_EQ(Values<int64_t>(out[0]), std::vector<int64_t>{100 * step + kChain});
      EXPECT_EQ(Values<int64_t>(out[1]), std::vector<int64_t>{kIterations});
    }
  }
}

// A host of minor 3 before these functions (or an older one, through the SDK's tables over the
// flat fields): the SDK answers 0 and refuses registration, without calling through NULL.
TEST(KernelContextAbi, SdkDegradesOnAHostWithoutTheFunctions) {
  sdk::HostTables saved = sdk::internal::HostSlot();
  cfx_host_kernel_api kernel = *internal::HostApi()->kernel;
  kernel.struct_size = offsetof(cfx_host_kernel_api, step_id);
  sdk::internal::HostSlot() = sdk::internal::TablesOf(internal::HostApi());
  sdk::internal::HostSlot().kernel = &kernel;

  KernelContext ctx;
  ctx.frame_id = 7;
  ctx.iteration = 3;
  sdk::KernelContext c(internal::ToHandle(&ctx));
  EXPECT_FALSE(c.HasStepApi());
  EXPECT_EQ(c.frame_id(), 0);
  EXPECT_EQ(c.iteration(), 0);
  auto callback = [](const sdk::Status&) { ADD_FAILURE() << "never registered"; };
  auto token = c.RegisterCancellation(&callback);
  EXPECT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), CFX_UNIMPLEMENTED);
  EXPECT_FALSE(c.DeregisterCancellation(0));

  kernel.struct_size = sizeof(kernel);  // the current host
  EXPECT_TRUE(c.HasStepApi());
  EXPECT_EQ(c.frame_id(), 7);
  EXPECT_EQ(c.iteration(), 3);
  EXPECT_EQ(c.step_id(), 0);
  sdk::internal::HostSlot() = saved;
}

}  // namespace
}  // namespace cfx
