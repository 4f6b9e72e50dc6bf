// Variables (reference and resource), containers shared by sessions, and queues driven by
// concurrent Run calls.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "conflux/session.h"
#include "graph_builder.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

using namespace test;  // NOLINT

AttrValue Str(const std::string& s) { return AttrValue::String(s); }

// v = VariableV2 [2]; init: v = [1, 2]; inc: v += [10, 20]; read: v * 1.
GraphDef RefVariableGraph(const std::string& container, const std::string& shared_name) {
  GraphBuilder b;
  b.Op("v", "VariableV2", {},
       {{"dtype", F()}, {"shape", AttrValue::Shape(PartialTensorShape({2}))},
        {"container", Str(container)}, {"shared_name", Str(shared_name)}});
  b.Const("init_value", MakeVector<float>({1, 2}));
  b.Op("init", "Assign", {"v", "init_value"}, {{"T", F()}});
  b.Const("delta", MakeVector<float>({10, 20}));
  b.Op("inc", "AssignAdd", {"v", "delta"}, {{"T", F()}});
  b.Op("dec", "AssignSub", {"v", "delta"}, {{"T", F()}});
  b.Op("read", "Identity", {"v"}, {{"T", F()}});
  b.Op("is_init", "IsVariableInitialized", {"v"}, {{"dtype", F()}});
  return b.graph();
}

TEST(VariableTest, AssignAddAndReadWithReferenceSemantics) {
  auto session = NewTestSession(RefVariableGraph("", "ref_var_a"));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"init"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 2}));
  ASSERT_OK(session->Run({}, {}, {"inc"}, nullptr));
  ASSERT_OK(session->Run({}, {}, {"inc"}, nullptr));
  ASSERT_OK(session->Run({}, {"read", "is_init"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{21, 42}));
  EXPECT_TRUE(out[1].at<bool>(0));
  ASSERT_OK(session->Run({}, {"dec"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{11, 22}));
}

TEST(VariableTest, ReadingAnUninitializedVariableIsAClearError) {
  auto session = NewTestSession(RefVariableGraph("", "ref_var_uninit"));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"is_init"}, {}, &out));
  EXPECT_FALSE(out[0].at<bool>(0));
  Status s = session->Run({}, {"read"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("uninitialized value ref_var_uninit"), std::string::npos) << s;
}

TEST(VariableTest, DefaultContainerIsSharedBySessionsAndNamedOnesCanBeReset) {
  auto a = NewTestSession(RefVariableGraph("", "shared_default"));
  auto b = NewTestSession(RefVariableGraph("", "shared_default"));
  std::vector<Tensor> out;
  ASSERT_OK(a->Run({}, {}, {"init"}, nullptr));
  ASSERT_OK(b->Run({}, {}, {"inc"}, nullptr));  // b sees a's variable
  ASSERT_OK(a->Run({}, {"read"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{11, 22}));

  auto c = NewTestSession(RefVariableGraph("experiment", "shared_named"));
  auto d = NewTestSession(RefVariableGraph("experiment", "shared_named"));
  ASSERT_OK(c->Run({}, {}, {"init"}, nullptr));
  ASSERT_OK(d->Run({}, {"read"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 2}));
  ASSERT_OK(d->Reset({"experiment"}));  // clears it for every session
  EXPECT_EQ(c->Run({}, {"read"}, {}, &out).code(), Code::kFailedPrecondition);
  // The default container survives a reset of named ones.
  ASSERT_OK(a->Run({}, {"read"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{11, 22}));
}

GraphDef ResourceVariableGraph(const std::string& name) {
  GraphBuilder b;
  b.Op("h", "VarHandleOp", {},
       {{"dtype", F()}, {"shape", AttrValue::Shape(PartialTensorShape({3}))},
        {"shared_name", Str(name)}});
  b.Const("value", MakeVector<float>({1, 2, 3}));
  b.Op("assign", "AssignVariableOp", {"h", "value"}, {{"dtype", F()}});
  b.Op("add", "AssignAddVariableOp", {"h", "value"}, {{"dtype", F()}});
  b.Op("sub", "AssignSubVariableOp", {"h", "value"}, {{"dtype", F()}});
  b.Op("read", "ReadVariableOp", {"h"}, {{"dtype", F()}});
  b.Op("is_init", "VarIsInitializedOp", {"h"});
  b.Op("destroy", "DestroyResourceOp", {"h"});
  return b.graph();
}

TEST(VariableTest, ResourceVariablesCopyOnWrite) {
  auto session = NewTestSession(ResourceVariableGraph("resource_var"));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"is_init"}, {}, &out));
  EXPECT_FALSE(out[0].at<bool>(0));
  Status s = session->Run({}, {"read"}, {}, &out);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s;
  ASSERT_OK(session->Run({}, {}, {"assign"}, nullptr));
  ASSERT_OK(session->Run({}, {"read"}, {}, &out));
  Tensor before = out[0];  // shares the variable's buffer
  ASSERT_OK(session->Run({}, {}, {"add"}, nullptr));
  EXPECT_EQ(Values<float>(before), (std::vector<float>{1, 2, 3}));  // not changed under us
  ASSERT_OK(session->Run({}, {"read", "is_init"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{2, 4, 6}));
  EXPECT_TRUE(out[1].at<bool>(0));
  ASSERT_OK(session->Run({}, {}, {"destroy"}, nullptr));
  ASSERT_OK(session->Run({}, {"is_init"}, {}, &out));
  EXPECT_FALSE(out[0].at<bool>(0));
}

// A FIFO queue of float scalars with capacity 4.
GraphDef QueueGraph(const std::string& name, bool shuffle = false) {
  GraphBuilder b;
  std::vector<std::pair<std::string, AttrValue>> attrs = {
      {"component_types", AttrValue::TypeList({DT_FLOAT})},
      {"capacity", AttrValue::Int(4)},
      {"shared_name", Str(name)}};
  if (shuffle) {
    attrs.push_back({"min_after_dequeue", AttrValue::Int(2)});
    attrs.push_back({"seed", AttrValue::Int(7)});
  }
  b.Op("q", shuffle ? "RandomShuffleQueueV2" : "FIFOQueueV2", {}, attrs);
  b.Placeholder("x", DT_FLOAT);
  b.Op("enqueue", "QueueEnqueueV2", {"q", "x"},
       {{"Tcomponents", AttrValue::TypeList({DT_FLOAT})}});
  b.Placeholder("batch", DT_FLOAT);
  b.Op("enqueue_many", "QueueEnqueueManyV2", {"q", "batch"},
       {{"Tcomponents", AttrValue::TypeList({DT_FLOAT})}});
  b.Op("dequeue", "QueueDequeueV2", {"q"}, {{"component_types", AttrValue::TypeList({DT_FLOAT})}});
  b.Const("n", MakeScalar<int32_t>(3));
  b.Op("dequeue_many", "QueueDequeueManyV2", {"q", "n"},
       {{"component_types", AttrValue::TypeList({DT_FLOAT})}});
  b.Op("dequeue_up_to", "QueueDequeueUpToV2", {"q", "n"},
       {{"component_types", AttrValue::TypeList({DT_FLOAT})}});
  b.Op("close", "QueueCloseV2", {"q"});
  b.Op("size", "QueueSizeV2", {"q"});
  return b.graph();
}

TEST(QueueTest, ProducerAndConsumerInConcurrentRuns) {
  auto session = NewTestSession(QueueGraph("fifo_pc"));
  constexpr int kItems = 200;
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i)
      ASSERT_OK(session->Run({{"x", MakeScalar<float>(static_cast<float>(i))}}, {}, {"enqueue"},
                             nullptr));
  });
  std::vector<float> got;
  for (int i = 0; i < kItems; ++i) {
    std::vector<Tensor> out;
    ASSERT_OK(session->Run({}, {"dequeue"}, {}, &out));
    got.push_back(out[0].at<float>(0));
  }
  producer.join();
  for (int i = 0; i < kItems; ++i) EXPECT_EQ(got[i], static_cast<float>(i));  // FIFO order
}

TEST(QueueTest, DequeueManyBatchesAndUpToDrainsAClosedQueue) {
  auto session = NewTestSession(QueueGraph("fifo_many"));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({{"batch", MakeVector<float>({1, 2, 3, 4})}}, {}, {"enqueue_many"},
                         nullptr));
  ASSERT_OK(session->Run({}, {"size"}, {}, &out));
  EXPECT_EQ(out[0].at<int32_t>(0), 4);
  ASSERT_OK(session->Run({}, {"dequeue_many"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{1, 2, 3}));
  ASSERT_OK(session->Run({}, {}, {"close"}, nullptr));
  EXPECT_EQ(session->Run({{"x", MakeScalar<float>(5)}}, {}, {"enqueue"}, nullptr).code(),
            Code::kCancelled);
  EXPECT_EQ(session->Run({}, {"dequeue_many"}, {}, &out).code(), Code::kOutOfRange);
  ASSERT_OK(session->Run({}, {"dequeue_up_to"}, {}, &out));
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{4}));
}

TEST(QueueTest, BlockedDequeueIsReleasedByClose) {
  auto session = NewTestSession(QueueGraph("fifo_close"));
  Status blocked;
  std::thread consumer([&] { blocked = session->Run({}, {"dequeue"}, {}, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_OK(session->Run({}, {}, {"close"}, nullptr));
  consumer.join();
  EXPECT_EQ(blocked.code(), Code::kOutOfRange) << blocked;
}

TEST(QueueTest, BlockedDequeueIsReleasedByTheStepTimeout) {
  auto session = NewTestSession(QueueGraph("fifo_timeout"));
  RunOptions options;
  options.timeout_ms = 50;
  RunMetadata meta;
  Status s = session->Run(options, {}, {"dequeue"}, {}, nullptr, &meta);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  // The session stays usable, and the queue did not lose an element to the aborted step.
  ASSERT_OK(session->Run({{"x", MakeScalar<float>(9)}}, {}, {"enqueue"}, nullptr));
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"dequeue"}, {}, &out));
  EXPECT_EQ(out[0].at<float>(0), 9);
}

TEST(QueueTest, DequeueWithItsOwnTimeoutGivesDeadlineExceeded) {
  GraphDef g = QueueGraph("fifo_op_timeout");
  GraphBuilder more;
  more.Op("dequeue_30ms", "QueueDequeueV2", {"q"},
          {{"component_types", AttrValue::TypeList({DT_FLOAT})}, {"timeout_ms", AttrValue::Int(30)}});
  for (const NodeDef& n : more.graph().node) g.node.push_back(n);
  auto session = NewTestSession(g);
  Status s = session->Run({}, {"dequeue_30ms"}, {}, nullptr);
  EXPECT_EQ(s.code(), Code::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("timed out after 30 ms"), std::string::npos) << s;
}

TEST(QueueTest, BlockedDequeueIsReleasedBySessionClose) {
  auto session = NewTestSession(QueueGraph("fifo_session_close"));
  Status blocked;
  std::thread consumer([&] { blocked = session->Run({}, {"dequeue"}, {}, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_OK(session->Close());
  consumer.join();
  EXPECT_EQ(blocked.code(), Code::kCancelled) << blocked;
}

TEST(QueueTest, BlockedEnqueueWaitsForRoom) {
  auto session = NewTestSession(QueueGraph("fifo_full"));
  ASSERT_OK(session->Run({{"batch", MakeVector<float>({1, 2, 3, 4})}}, {}, {"enqueue_many"},
                         nullptr));
  std::atomic<bool> done{false};
  std::thread producer([&] {
    ASSERT_OK(session->Run({{"x", MakeScalar<float>(5)}}, {}, {"enqueue"}, nullptr));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());  // the queue is full
  std::vector<Tensor> out;
  ASSERT_OK(session->Run({}, {"dequeue"}, {}, &out));
  producer.join();
  EXPECT_TRUE(done.load());
}

TEST(QueueTest, RandomShuffleQueueKeepsMinAfterDequeueAndIsSeeded) {
  auto run_once = [](const std::string& name) {
    auto session = NewTestSession(QueueGraph(name, true));
    EXPECT_OK(session->Run({{"batch", MakeVector<float>({1, 2, 3, 4})}}, {}, {"enqueue_many"},
                           nullptr));
    std::vector<float> got;
    for (int i = 0; i < 2; ++i) {  // two may leave: min_after_dequeue is 2
      std::vector<Tensor> out;
      EXPECT_OK(session->Run({}, {"dequeue"}, {}, &out));
      got.push_back(out[0].at<float>(0));
    }
    RunOptions options;
    options.timeout_ms = 50;
    EXPECT_EQ(session->Run(options, {}, {"dequeue"}, {}, nullptr, nullptr).code(),
              Code::kDeadlineExceeded);
    EXPECT_OK(session->Run({}, {}, {"close"}, nullptr));  // closed: the rest drains
    for (int i = 0; i < 2; ++i) {
      std::vector<Tensor> out;
      EXPECT_OK(session->Run({}, {"dequeue"}, {}, &out));
      got.push_back(out[0].at<float>(0));
    }
    return got;
  };
  std::vector<float> a = run_once("shuffle_a"), b = run_once("shuffle_b");
  EXPECT_EQ(a, b);  // same seeds, same order
  std::vector<float> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace cfx
