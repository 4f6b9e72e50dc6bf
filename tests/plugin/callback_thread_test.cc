// sdk::CallbackThread, which device plugins run completions on: posts run in order on one other
// thread, a callback may post more, and destruction waits for the posts that were announced.
#include "conflux/sdk/callback_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace cfx {
namespace {

TEST(CallbackThread, RunsPostsInOrderOnItsOwnThreadAfterOnStart) {
  std::mutex mu;
  std::vector<int> order;
  std::thread::id started_on, ran_on;
  {
    sdk::CallbackThread t([&] { started_on = std::this_thread::get_id(); });
    for (int i = 0; i < 100; ++i)
      t.Post(
          [&, i] {
            std::lock_guard<std::mutex> lock(mu);
            order.push_back(i);
            ran_on = std::this_thread::get_id();
          },
          /*expected=*/false);
  }  // the destructor runs what is queued
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_EQ(ran_on, started_on);
}

TEST(CallbackThread, DestructionWaitsForAnnouncedPostsIncludingOnesPostedByCallbacks) {
  std::atomic<int> ran{0};
  std::thread late;
  {
    sdk::CallbackThread t;
    t.Expect();
    // A completion that arrives later from another thread (as a device notification does), and
    // whose callback posts a follow-up of its own.
    late = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      t.Post(
          [&] {
            ran.fetch_add(1);
            t.Post([&] { ran.fetch_add(10); }, /*expected=*/false);
          },
          /*expected=*/true);
    });
  }
  late.join();
  EXPECT_EQ(ran.load(), 11);
}

}  // namespace
}  // namespace cfx
