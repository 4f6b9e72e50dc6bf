// Notification: a one-shot event that wakes every waiter, and WaitFor's timeout.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "bounded_wait.h"
#include "runtime/step.h"

namespace cfx {
namespace {

TEST(Notification, WaitForTimesOutWhenNotNotified) {
  Notification n;
  EXPECT_FALSE(n.HasBeenNotified());
  EXPECT_FALSE(n.WaitFor(0));
  EXPECT_FALSE(n.WaitFor(20));
  EXPECT_FALSE(n.HasBeenNotified());
}

TEST(Notification, WaitsReturnAtOnceAfterNotify) {
  Notification n;
  n.Notify();
  EXPECT_TRUE(n.HasBeenNotified());
  EXPECT_TRUE(n.WaitFor(0));
  test::RunOrAbort("Wait after Notify", [&] { n.Wait(); });
  n.Notify();  // a second Notify changes nothing
  EXPECT_TRUE(n.WaitFor(0));
}

TEST(Notification, NotifyWakesEveryWaiter) {
  constexpr int kWaiters = 4;
  Notification n;
  test::Latch waiting(kWaiters);
  std::atomic<int> woken{0};
  const int64_t timeout_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(test::kHangTimeout).count();
  std::thread notifier([&] {
    (void)waiting.WaitFor();  // make it likely that the waiters are blocked already
    n.Notify();
  });
  test::RunOnThreads(kWaiters, [&](int) {
    waiting.CountDown();
    if (n.WaitFor(timeout_ms)) woken.fetch_add(1);
  });
  notifier.join();
  EXPECT_EQ(woken.load(), kWaiters) << "WaitFor timed out in a waiter that Notify should wake";
}

TEST(Notification, NotifyFromAnotherThreadEndsWait) {
  Notification n;
  std::thread notifier([&] { n.Notify(); });
  test::RunOrAbort("Wait for a Notify from another thread", [&] { n.Wait(); });
  notifier.join();
  EXPECT_TRUE(n.HasBeenNotified());
}

}  // namespace
}  // namespace cfx
