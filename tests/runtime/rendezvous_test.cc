// Rendezvous: the key format, a value meeting its receiver whichever comes first, dead values,
// keys sent or received twice, aborts, and many senders and receivers on threads.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bounded_wait.h"
#include "kernel_test_util.h"
#include "runtime/rendezvous.h"

namespace cfx {
namespace {

using test::Latch;

// The one place that makes the rendezvous under test.
std::unique_ptr<Rendezvous> NewRendezvous() { return std::make_unique<LocalRendezvous>(); }

// A full key of a sender of incarnation 1.
std::string FullKey(const std::string& send, const std::string& recv, const std::string& tensor,
                    int64_t frame, int64_t iteration) {
  return Rendezvous::Key(Rendezvous::KeyPrefix(send, 1, recv, tensor), frame, iteration);
}

Rendezvous::Value IntValue(int64_t v) { return {test::MakeScalar<int64_t>(v), nullptr, false}; }
Rendezvous::Value DeadValue() { return {Tensor(), nullptr, true}; }

// What the callbacks of one RecvAsync were given.
class Received {
 public:
  Rendezvous::DoneCallback Callback() {
    return [this](const Status& s, const Rendezvous::Value& v) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++calls_;
        status_ = s;
        value_ = v;
      }
      called_.CountDown();
    };
  }
  // True once the callback ran (bounded).
  bool Wait() { return called_.WaitFor(); }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  Rendezvous::Value value() {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }
  int64_t scalar() { return test::Values<int64_t>(value().tensor).at(0); }

 private:
  std::mutex mu_;
  Latch called_{1};
  int calls_ = 0;
  Status status_;
  Rendezvous::Value value_;
};

const std::string kKey = FullKey("/device:CPU:0", "/device:CPU:1", "x:0", 0, 0);

// TensorFlow's format: src_device;src_incarnation (16 hex digits);dst_device;tensor;frame:iter.
TEST(RendezvousKey, JoinsDevicesIncarnationTensorFrameAndIteration) {
  EXPECT_EQ(Rendezvous::Key(Rendezvous::KeyPrefix("/job:a/device:CPU:0", 42,
                                                  "/job:a/device:GPU:0", "x:0"),
                            3, 7),
            "/job:a/device:CPU:0;000000000000002a;/job:a/device:GPU:0;x:0;3:7");
  EXPECT_EQ(Rendezvous::KeyPrefix("a", 0xfedcba9876543210ull, "b", "t"),
            "a;fedcba9876543210;b;t;");
  // Another incarnation of the sender is another key.
  EXPECT_NE(Rendezvous::KeyPrefix("a", 1, "b", "t"), Rendezvous::KeyPrefix("a", 2, "b", "t"));
}

TEST(RendezvousKey, PrefixThenFrameAndIterationIsTheFullKey) {
  const std::string prefix = Rendezvous::KeyPrefix("a", 1, "b", "t:1");
  EXPECT_EQ(prefix, "a;0000000000000001;b;t:1;");
  EXPECT_EQ(Rendezvous::Key(prefix, 4, 2), FullKey("a", "b", "t:1", 4, 2));
  // Frame and iteration are delimited: no two (frame, iteration) pairs share a key.
  const std::pair<int, int> frame_iterations[] = {{0, 11}, {1, 1},   {1, 10},
                                                  {11, 0}, {110, 1}, {1, 101}};
  std::set<std::string> keys;
  for (auto [frame, iteration] : frame_iterations)
    keys.insert(Rendezvous::Key(prefix, frame, iteration));
  EXPECT_EQ(keys.size(), 6u);
}

TEST(Rendezvous, SendThenRecvGetsTheValue) {
  auto rendezvous = NewRendezvous();
  ASSERT_OK(rendezvous->Send(kKey, IntValue(42)));
  Received r;
  rendezvous->RecvAsync(kKey, r.Callback());
  ASSERT_TRUE(r.Wait()) << "RecvAsync of a value already sent never called back";
  ASSERT_OK(r.status());
  EXPECT_FALSE(r.value().is_dead);
  EXPECT_EQ(r.scalar(), 42);
  EXPECT_EQ(r.calls(), 1);
}

TEST(Rendezvous, RecvThenSendCallsBackWithTheValue) {
  auto rendezvous = NewRendezvous();
  Received r, other;
  rendezvous->RecvAsync(kKey, r.Callback());
  const std::string other_key = FullKey("/device:CPU:0", "/device:CPU:1", "x:0", 0, 1);
  rendezvous->RecvAsync(other_key, other.Callback());
  EXPECT_EQ(r.calls(), 0) << "called back before anything was sent";
  ASSERT_OK(rendezvous->Send(kKey, IntValue(7)));
  ASSERT_TRUE(r.Wait()) << "Send did not complete the waiting RecvAsync";
  ASSERT_OK(r.status());
  EXPECT_EQ(r.scalar(), 7);
  EXPECT_EQ(r.calls(), 1);
  EXPECT_EQ(other.calls(), 0) << "a Send completed the receiver of another key";
}

TEST(Rendezvous, SendFromAnotherThreadCompletesTheReceiver) {
  auto rendezvous = NewRendezvous();
  Received r;
  rendezvous->RecvAsync(kKey, r.Callback());
  std::thread sender([&] { EXPECT_OK(rendezvous->Send(kKey, IntValue(9))); });
  ASSERT_TRUE(r.Wait());
  sender.join();
  ASSERT_OK(r.status());
  EXPECT_EQ(r.scalar(), 9);
}

TEST(Rendezvous, DeadValuesArriveDeadInEitherOrder) {
  auto rendezvous = NewRendezvous();
  const std::string second = FullKey("/device:CPU:0", "/device:CPU:1", "x:0", 0, 1);
  ASSERT_OK(rendezvous->Send(kKey, DeadValue()));
  Received sent_first, received_first;
  rendezvous->RecvAsync(kKey, sent_first.Callback());
  rendezvous->RecvAsync(second, received_first.Callback());
  ASSERT_OK(rendezvous->Send(second, DeadValue()));
  for (Received* r : {&sent_first, &received_first}) {
    ASSERT_TRUE(r->Wait());
    ASSERT_OK(r->status());
    EXPECT_TRUE(r->value().is_dead);
  }
}

TEST(Rendezvous, ASecondSendOfAKeyIsAnInternalErrorAndKeepsTheFirstValue) {
  auto rendezvous = NewRendezvous();
  ASSERT_OK(rendezvous->Send(kKey, IntValue(1)));
  Status second = rendezvous->Send(kKey, IntValue(2));
  EXPECT_EQ(second.code(), Code::kInternal) << second;
  EXPECT_NE(second.message().find(kKey), std::string::npos) << second;
  Received r;
  rendezvous->RecvAsync(kKey, r.Callback());
  ASSERT_TRUE(r.Wait());
  ASSERT_OK(r.status());
  EXPECT_EQ(r.scalar(), 1);
}

// Once a value has been received, its key is still taken for the rest of the step: a second
// Send, or a second receive, is an error rather than a value nobody takes or a receiver that
// waits for ever.
TEST(Rendezvous, AKeyStaysTakenAfterItsValueWasReceived) {
  for (bool receiver_first : {false, true}) {
    auto rendezvous = NewRendezvous();
    Received r;
    if (receiver_first) rendezvous->RecvAsync(kKey, r.Callback());
    ASSERT_OK(rendezvous->Send(kKey, IntValue(1)));
    if (!receiver_first) rendezvous->RecvAsync(kKey, r.Callback());
    ASSERT_TRUE(r.Wait());
    ASSERT_OK(r.status());
    EXPECT_EQ(r.scalar(), 1);
    Status again = rendezvous->Send(kKey, IntValue(2));
    EXPECT_EQ(again.code(), Code::kInternal) << again;
    Received second;
    rendezvous->RecvAsync(kKey, second.Callback());
    ASSERT_TRUE(second.Wait());
    EXPECT_EQ(second.status().code(), Code::kInternal) << second.status();
  }
}

TEST(Rendezvous, ASecondReceiverOfAPendingKeyIsAnInternalError) {
  auto rendezvous = NewRendezvous();
  Received first, second;
  rendezvous->RecvAsync(kKey, first.Callback());
  rendezvous->RecvAsync(kKey, second.Callback());
  ASSERT_TRUE(second.Wait()) << "the second receiver was never called back";
  EXPECT_EQ(second.status().code(), Code::kInternal) << second.status();
  EXPECT_EQ(first.calls(), 0);
  ASSERT_OK(rendezvous->Send(kKey, IntValue(5)));
  ASSERT_TRUE(first.Wait());
  ASSERT_OK(first.status());
  EXPECT_EQ(first.scalar(), 5);
  EXPECT_EQ(second.calls(), 1);
}

TEST(Rendezvous, StartAbortFailsPendingAndLaterReceives) {
  auto rendezvous = NewRendezvous();
  const std::string sent_key = FullKey("/device:CPU:0", "/device:CPU:1", "y:0", 0, 0);
  ASSERT_OK(rendezvous->Send(sent_key, IntValue(3)));  // sent, never received before the abort
  Received pending;
  rendezvous->RecvAsync(kKey, pending.Callback());
  const Status abort = errors::Aborted("kernel failed");
  rendezvous->StartAbort(abort);
  ASSERT_TRUE(pending.Wait()) << "StartAbort did not call back a pending receiver";
  EXPECT_EQ(pending.status(), abort);

  Received later, later_sent;
  rendezvous->RecvAsync(FullKey("/device:CPU:0", "/device:CPU:1", "z:0", 0, 0),
                        later.Callback());
  rendezvous->RecvAsync(sent_key, later_sent.Callback());
  for (Received* r : {&later, &later_sent}) {
    ASSERT_TRUE(r->Wait()) << "a receive after the abort was never called back";
    EXPECT_EQ(r->status(), abort);
  }
}

TEST(Rendezvous, StartAbortIsIdempotent) {
  auto rendezvous = NewRendezvous();
  Received pending;
  rendezvous->RecvAsync(kKey, pending.Callback());
  const Status first = errors::Aborted("first");
  rendezvous->StartAbort(first);
  rendezvous->StartAbort(errors::Cancelled("second"));
  ASSERT_TRUE(pending.Wait());
  EXPECT_EQ(pending.calls(), 1) << "a second StartAbort called a receiver back again";
  EXPECT_EQ(pending.status(), first);
  Received later;
  rendezvous->RecvAsync(kKey, later.Callback());
  ASSERT_TRUE(later.Wait());
  EXPECT_EQ(later.status(), first) << "the second StartAbort replaced the abort status";
}

TEST(Rendezvous, StartAbortWithOkStillFailsPendingAndLaterReceives) {
  auto rendezvous = NewRendezvous();
  Received pending, later;
  rendezvous->RecvAsync(kKey, pending.Callback());
  rendezvous->StartAbort(Status());
  rendezvous->RecvAsync(kKey, later.Callback());
  for (Received* r : {&pending, &later}) {
    ASSERT_TRUE(r->Wait());
    EXPECT_FALSE(r->status().ok()) << "an aborted receive was given OK and no value";
  }
  EXPECT_EQ(pending.status(), later.status());
}

TEST(Rendezvous, ConcurrentSendersAndReceiversGetEveryValueOnceUnderItsKey) {
  constexpr int kKeys = 4000;
  constexpr int kSenders = 4, kReceivers = 4;
  auto rendezvous = NewRendezvous();
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i)
    keys.push_back(FullKey("/device:CPU:0", "/device:CPU:1", "t:0", i % 3, i));
  std::vector<std::atomic<int>> calls(kKeys);
  std::vector<std::atomic<int64_t>> values(kKeys);
  std::atomic<int> errors{0};
  Latch all_received(kKeys);
  test::RunOnThreads(kSenders + kReceivers, [&](int thread) {
    // Senders go up and receivers down through their share of the keys, so that about half
    // the values wait for their receiver and half the receivers for their value.
    if (thread < kSenders) {
      for (int i = thread; i < kKeys; i += kSenders)
        if (!rendezvous->Send(keys[i], IntValue(1000 + i)).ok()) errors.fetch_add(1);
      return;
    }
    const int r = thread - kSenders;
    for (int i = kKeys - 1 - r; i >= 0; i -= kReceivers)
      rendezvous->RecvAsync(keys[i], [&, i](const Status& s, const Rendezvous::Value& v) {
        if (s.ok() && v.tensor.dtype() == DT_INT64) {
          values[i].store(v.tensor.data<int64_t>()[0]);
        } else {
          errors.fetch_add(1);
        }
        calls[i].fetch_add(1);
        all_received.CountDown();
      });
  });
  ASSERT_TRUE(all_received.WaitFor())
      << all_received.remaining() << " of " << kKeys << " receivers were never called back";
  EXPECT_EQ(errors.load(), 0);
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_EQ(calls[i].load(), 1) << keys[i];
    EXPECT_EQ(values[i].load(), 1000 + i) << keys[i];
  }
}

}  // namespace
}  // namespace cfx
