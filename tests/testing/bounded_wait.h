// Bounded waits for tests of concurrent code: a lost wake-up or a deadlock fails the test with a
// message instead of hanging the test binary. Every member may be called from any thread.
#ifndef CONFLUX_TESTS_TESTING_BOUNDED_WAIT_H_
#define CONFLUX_TESTS_TESTING_BOUNDED_WAIT_H_

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cfx::test {

// Far longer than any correct wait takes on a loaded machine: reached only through a bug.
inline constexpr std::chrono::seconds kHangTimeout{60};

// A count that threads decrement and wait to reach zero.
class Latch {
 public:
  explicit Latch(int count) : count_(count) {}
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  // Decrements the count (never below zero) and wakes the waiters when it reaches zero.
  void CountDown() {
    std::lock_guard<std::mutex> lock(mu_);
    if (count_ > 0 && --count_ == 0) cv_.notify_all();
  }
  // True once the count is zero; false when `timeout` passed first.
  [[nodiscard]] bool WaitFor(std::chrono::milliseconds timeout = kHangTimeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_ == 0; });
  }
  // CountDown, then WaitFor: a barrier of `count` threads. False when some never arrived.
  [[nodiscard]] bool ArriveAndWait(std::chrono::milliseconds timeout = kHangTimeout) {
    CountDown();
    return WaitFor(timeout);
  }
  int remaining() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int count_;
};

// Runs body(0), ..., body(n - 1) on n threads released together (to make races likely), then
// joins them.
inline void RunOnThreads(int n, const std::function<void(int)>& body) {
  Latch start(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&start, &body, i] {
      (void)start.ArriveAndWait();  // a late thread only makes the start less simultaneous
      body(i);
    });
  for (std::thread& t : threads) t.join();
}

// Runs `fn` on another thread and waits for it to return. When it has not returned after
// `timeout` (a deadlock), prints `what` and aborts the test binary: that thread cannot be
// stopped, and returning would leave it running on the caller's objects.
inline void RunOrAbort(const char* what, std::function<void()> fn,
                       std::chrono::milliseconds timeout = kHangTimeout) {
  auto returned = std::make_shared<Latch>(1);
  std::thread([fn = std::move(fn), returned] {
    fn();
    returned->CountDown();
  }).detach();
  if (!returned->WaitFor(timeout)) {
    std::fprintf(stderr, "FAILED: %s did not return within %lld ms (deadlock?)\n", what,
                 static_cast<long long>(timeout.count()));
    std::abort();
  }
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_BOUNDED_WAIT_H_
