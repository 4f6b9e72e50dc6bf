// CancellationManager: tokens, callbacks run exactly once with the cancel status, registration
// and deregistration after the cancel, callbacks that register or deregister during StartCancel,
// and all of it from many threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "bounded_wait.h"
#include "kernel_test_util.h"
#include "runtime/step.h"

namespace cfx {
namespace {

using Token = CancellationManager::Token;
constexpr Token kInvalidToken = CancellationManager::kInvalidToken;

TEST(CancellationManager, RegisterGivesDistinctValidTokens) {
  CancellationManager cm;
  std::set<Token> tokens;
  for (int i = 0; i < 100; ++i) {
    Token t = cm.Register([](const Status&) {});
    EXPECT_NE(t, kInvalidToken);
    tokens.insert(t);
  }
  EXPECT_EQ(tokens.size(), 100u);
}

TEST(CancellationManager, StartCancelRunsEachRegisteredCallbackOnceWithTheStatus) {
  CancellationManager cm;
  EXPECT_FALSE(cm.cancelled());
  EXPECT_OK(cm.status());
  constexpr int kCallbacks = 10;
  std::vector<int> runs(kCallbacks, 0);
  std::vector<Status> seen(kCallbacks);
  for (int i = 0; i < kCallbacks; ++i) {
    Token t = cm.Register([&, i](const Status& s) {
      ++runs[i];
      seen[i] = s;
    });
    ASSERT_NE(t, kInvalidToken);
  }
  const Status cause = errors::DeadlineExceeded("step timed out");
  cm.StartCancel(cause);
  EXPECT_TRUE(cm.cancelled());
  EXPECT_EQ(cm.status(), cause);
  for (int i = 0; i < kCallbacks; ++i) {
    EXPECT_EQ(runs[i], 1) << "callback " << i;
    EXPECT_EQ(seen[i], cause) << "callback " << i;
  }
}

TEST(CancellationManager, ADeregisteredCallbackDoesNotRun) {
  CancellationManager cm;
  int kept = 0, dropped = 0;
  Token keep = cm.Register([&](const Status&) { ++kept; });
  Token drop = cm.Register([&](const Status&) { ++dropped; });
  EXPECT_TRUE(cm.Deregister(drop));
  EXPECT_FALSE(cm.Deregister(drop)) << "a token deregistered twice";
  EXPECT_FALSE(cm.Deregister(kInvalidToken));
  EXPECT_FALSE(cm.Deregister(keep + drop + 1000)) << "a token never given out";
  cm.StartCancel(errors::Cancelled("cancel"));
  EXPECT_EQ(kept, 1);
  EXPECT_EQ(dropped, 0);
}

TEST(CancellationManager, LaterStartCancelsAreNoOps) {
  CancellationManager cm;
  int runs = 0;
  ASSERT_NE(cm.Register([&](const Status&) { ++runs; }), kInvalidToken);
  const Status first = errors::Aborted("first");
  cm.StartCancel(first);
  cm.StartCancel(errors::Cancelled("second"));
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(cm.status(), first);
}

TEST(CancellationManager, RegisterAfterCancelIsRefusedAndNeverRuns) {
  CancellationManager cm;
  cm.StartCancel(errors::Cancelled("cancel"));
  int runs = 0;
  EXPECT_EQ(cm.Register([&](const Status&) { ++runs; }), kInvalidToken);
  cm.StartCancel(errors::Cancelled("again"));
  EXPECT_EQ(runs, 0);
}

TEST(CancellationManager, DeregisterAfterCancelIsFalse) {
  CancellationManager cm;
  int runs = 0;
  Token t = cm.Register([&](const Status&) { ++runs; });
  cm.StartCancel(errors::Cancelled("cancel"));
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(cm.Deregister(t)) << "the callback already ran: its caller no longer owns it";
}

// A blocked operation whose callback completes another's (a Recv waking a queue op) may
// deregister it from inside StartCancel: the deregistration must not deadlock, and it comes too
// late (false), so the other callback still runs once.
TEST(CancellationManager, CallbacksThatDeregisterEachOtherDuringCancelBothRunOnce) {
  CancellationManager cm;
  Token tokens[2];
  int runs[2] = {0, 0};
  bool deregistered[2] = {true, true};
  for (int i = 0; i < 2; ++i)
    tokens[i] = cm.Register([&, i](const Status&) {
      ++runs[i];
      deregistered[i] = cm.Deregister(tokens[1 - i]);
    });
  test::RunOrAbort("StartCancel with callbacks that deregister",
                   [&] { cm.StartCancel(errors::Cancelled("cancel")); });
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(runs[i], 1) << "callback " << i;
    EXPECT_FALSE(deregistered[i]) << "callback " << i << " removed a callback being cancelled";
  }
}

// An executor deregisters when its step ends and then frees the state its callback uses: a
// Deregister that comes too late (false) must return only once that callback has returned.
TEST(CancellationManager, ALateDeregisterWaitsForTheRunningCallback) {
  CancellationManager cm;
  test::Latch callback_started(1), gate(1);
  std::atomic<bool> callback_returned{false};
  Token t = cm.Register([&](const Status&) {
    callback_started.CountDown();
    (void)gate.WaitFor();
    callback_returned = true;
  });
  ASSERT_NE(t, kInvalidToken);
  std::thread canceller([&] { cm.StartCancel(errors::Cancelled("cancel")); });
  ASSERT_TRUE(callback_started.WaitFor());
  // Opens the gate once Deregister has probably started waiting (if it has not, Deregister
  // still has to wait for the callback).
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.CountDown();
  });
  bool removed = true;
  test::RunOrAbort("Deregister during StartCancel", [&] { removed = cm.Deregister(t); });
  const bool returned_before_deregister = callback_returned.load();
  canceller.join();
  opener.join();
  EXPECT_FALSE(removed);
  EXPECT_TRUE(returned_before_deregister)
      << "Deregister returned false while the callback was still running";
}

TEST(CancellationManager, CallbacksThatRegisterOrCancelDuringCancelAreRefused) {
  CancellationManager cm;
  Token inner = 0;
  int inner_runs = 0, outer_runs = 0;
  bool cancelled_inside = false;
  Token outer = cm.Register([&](const Status&) {
    ++outer_runs;
    cancelled_inside = cm.cancelled();
    inner = cm.Register([&](const Status&) { ++inner_runs; });
    cm.StartCancel(errors::Internal("nested"));
  });
  ASSERT_NE(outer, kInvalidToken);
  const Status cause = errors::Cancelled("cancel");
  test::RunOrAbort("StartCancel with a callback that registers and cancels",
                   [&] { cm.StartCancel(cause); });
  EXPECT_EQ(outer_runs, 1);
  EXPECT_TRUE(cancelled_inside);
  EXPECT_EQ(inner, kInvalidToken);
  EXPECT_EQ(inner_runs, 0);
  EXPECT_EQ(cm.status(), cause) << "the nested StartCancel replaced the status";
}

// Threads register (and deregister every other callback) while StartCancel runs: a callback
// runs once exactly when it was registered and not deregistered in time; none runs twice and
// none is lost.
TEST(CancellationManager, ConcurrentRegisterDeregisterAndCancel) {
  constexpr int kRegistrars = 4, kPerThread = 2000, kCancellers = 2;
  constexpr int kTotal = kRegistrars * kPerThread;
  CancellationManager cm;
  std::vector<std::atomic<int>> runs(kTotal);
  std::vector<char> registered(kTotal, 0), removed(kTotal, 0);
  test::Latch half_registered(kTotal / 2);
  const Status cause = errors::Aborted("cancel");
  test::RunOnThreads(kRegistrars + kCancellers, [&](int thread) {
    if (thread >= kRegistrars) {
      (void)half_registered.WaitFor();
      cm.StartCancel(cause);
      return;
    }
    for (int k = 0; k < kPerThread; ++k) {
      const int i = thread * kPerThread + k;
      Token t = cm.Register([&runs, i](const Status&) { runs[i].fetch_add(1); });
      registered[i] = t != kInvalidToken;
      if (registered[i] && k % 2 == 0) removed[i] = cm.Deregister(t);
      half_registered.CountDown();
    }
  });
  ASSERT_TRUE(cm.cancelled());
  EXPECT_EQ(cm.status(), cause);
  int ran = 0, refused = 0;
  for (int i = 0; i < kTotal; ++i) {
    const int expected = registered[i] && !removed[i] ? 1 : 0;
    EXPECT_EQ(runs[i].load(), expected)
        << "callback " << i << (registered[i] ? " registered" : " refused")
        << (removed[i] ? ", deregistered" : "");
    ran += runs[i].load();
    refused += !registered[i];
  }
  // Not assertions (the interleaving decides them): what this run exercised.
  RecordProperty("callbacks_run", ran);
  RecordProperty("registrations_refused", refused);
}

TEST(CancellationManager, ConcurrentStartCancelsRunEachCallbackOnceWithOneStatus) {
  constexpr int kCallbacks = 1000, kCancellers = 4;
  CancellationManager cm;
  std::vector<std::atomic<int>> runs(kCallbacks);
  std::vector<Status> seen(kCallbacks);
  for (int i = 0; i < kCallbacks; ++i) {
    Token t = cm.Register([&, i](const Status& s) {
      runs[i].fetch_add(1);
      seen[i] = s;
    });
    ASSERT_NE(t, kInvalidToken);
  }
  test::RunOnThreads(kCancellers,
                     [&](int thread) { cm.StartCancel(errors::Cancelled("canceller ", thread)); });
  const Status status = cm.status();
  ASSERT_FALSE(status.ok());
  for (int i = 0; i < kCallbacks; ++i) {
    ASSERT_EQ(runs[i].load(), 1) << "callback " << i;
    EXPECT_EQ(seen[i], status) << "callback " << i;
  }
}

}  // namespace
}  // namespace cfx
