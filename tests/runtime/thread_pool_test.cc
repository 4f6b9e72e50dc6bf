// ThreadPool: every closure runs exactly once (scheduled from outside or from inside the pool),
// its threads run closures at the same time, the destructor runs what is queued before joining,
// and the thread identification (CurrentThreadId, OwnsCurrentThread).
#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "bounded_wait.h"

namespace cfx {
namespace {

using test::Latch;

TEST(ThreadPool, HasTheThreadsAskedFor) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_threads(), 3);
}

TEST(ThreadPool, RunsEveryClosureExactlyOnce) {
  constexpr int kClosures = 20000, kSchedulers = 4;
  std::vector<std::atomic<int>> runs(kClosures);
  Latch all_ran(kClosures);
  ThreadPool pool(4);
  test::RunOnThreads(kSchedulers, [&](int thread) {
    for (int i = thread; i < kClosures; i += kSchedulers)
      pool.Schedule([&runs, &all_ran, i] {
        runs[i].fetch_add(1);
        all_ran.CountDown();
      });
  });
  ASSERT_TRUE(all_ran.WaitFor()) << all_ran.remaining() << " closures never ran";
  for (int i = 0; i < kClosures; ++i) ASSERT_EQ(runs[i].load(), 1) << "closure " << i;
}

// Closures that schedule closures (a kernel making its consumers ready): a tree of them, each
// node scheduling two children down to a depth.
TEST(ThreadPool, ClosuresScheduledFromInsideThePoolRun) {
  constexpr int kDepth = 12;
  constexpr int kNodes = (1 << (kDepth + 1)) - 1;
  std::vector<std::atomic<int>> runs(kNodes);
  Latch all_ran(kNodes);
  std::function<void(int, int)> node;  // outlives the pool, whose destructor joins
  ThreadPool pool(3);
  node = [&](int index, int depth) {
    runs[index].fetch_add(1);
    if (depth < kDepth) {
      pool.Schedule([&, index, depth] { node(2 * index + 1, depth + 1); });
      pool.Schedule([&, index, depth] { node(2 * index + 2, depth + 1); });
    }
    all_ran.CountDown();
  };
  pool.Schedule([&] { node(0, 0); });
  ASSERT_TRUE(all_ran.WaitFor()) << all_ran.remaining() << " of " << kNodes << " never ran";
  for (int i = 0; i < kNodes; ++i) ASSERT_EQ(runs[i].load(), 1) << "node " << i;
}

// N closures that each wait for all N to start can only finish when N threads run them at once.
TEST(ThreadPool, ItsThreadsRunClosuresConcurrently) {
  for (int threads : {1, 2, 4, 8}) {
    Latch all_started(threads), all_done(threads);
    std::atomic<int> met{0};
    std::mutex mu;
    std::set<int> ids;
    ThreadPool pool(threads);
    for (int i = 0; i < threads; ++i)
      pool.Schedule([&] {
        {
          std::lock_guard<std::mutex> lock(mu);
          ids.insert(ThreadPool::CurrentThreadId());
        }
        if (all_started.ArriveAndWait()) met.fetch_add(1);
        all_done.CountDown();
      });
    ASSERT_TRUE(all_done.WaitFor());
    EXPECT_EQ(met.load(), threads) << "fewer than " << threads << " closures ran at once";
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(ids.size(), static_cast<size_t>(threads)) << "closures that ran at once shared a "
                                                           "thread id";
    EXPECT_EQ(ids.count(0), 0u) << "a pool thread has id 0 (reserved for other threads)";
  }
}

TEST(ThreadPool, IdentifiesItsOwnThreads) {
  EXPECT_EQ(ThreadPool::CurrentThreadId(), 0);
  std::atomic<bool> a_owns{false}, b_owns{true};
  std::atomic<int> id_in_a{0}, id_in_b{0};
  Latch done(2);
  ThreadPool a(2), b(2);
  EXPECT_FALSE(a.OwnsCurrentThread());
  a.Schedule([&] {
    a_owns = a.OwnsCurrentThread();
    b_owns = b.OwnsCurrentThread();
    id_in_a = ThreadPool::CurrentThreadId();
    done.CountDown();
  });
  b.Schedule([&] {
    id_in_b = ThreadPool::CurrentThreadId();
    done.CountDown();
  });
  ASSERT_TRUE(done.WaitFor());
  EXPECT_TRUE(a_owns.load());
  EXPECT_FALSE(b_owns.load()) << "a pool claims another pool's thread";
  EXPECT_NE(id_in_a.load(), 0);
  EXPECT_NE(id_in_b.load(), 0);
  EXPECT_NE(id_in_a.load(), id_in_b.load()) << "two pools' threads share an id";
}

// The destructor runs what is still queued, closures scheduled by those closures included, and
// joins: when it returns every closure has run.
TEST(ThreadPool, DestructionRunsWhatIsQueuedThenJoins) {
  constexpr int kQueued = 200, kChain = 50;
  std::atomic<int> ran{0}, chain_ran{0};
  Latch gate(1);
  auto pool = std::make_unique<ThreadPool>(1);
  ThreadPool* raw = pool.get();                   // reset() nulls `pool` before the destructor runs
  pool->Schedule([&] { (void)gate.WaitFor(); });  // holds the only thread while the queue fills
  for (int i = 0; i < kQueued; ++i) pool->Schedule([&] { ran.fetch_add(1); });
  std::function<void()> chain = [&] {
    if (chain_ran.fetch_add(1) + 1 < kChain) raw->Schedule(chain);
  };
  pool->Schedule(chain);
  // Opens the gate once the destructor has probably started (if it has not, the test still
  // checks that the destructor waits for the queue).
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.CountDown();
  });
  test::RunOrAbort("~ThreadPool", [&] { pool.reset(); });
  opener.join();
  EXPECT_EQ(ran.load(), kQueued) << "the destructor dropped queued closures";
  EXPECT_EQ(chain_ran.load(), kChain) << "closures scheduled while draining were dropped";
}

}  // namespace
}  // namespace cfx
