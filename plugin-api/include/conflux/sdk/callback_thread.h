// Conflux plugin SDK: a thread that runs a device's completion callbacks in order. Device APIs
// forbid their own calls inside their completion notifications (OpenCL event callbacks, CUDA
// stream host functions), while what a completion runs (a kernel's continuation, the executor's
// next nodes, a stream_then callback) may make them and may block, so the notification only
// posts here.
//
// Thread-safe: Expect and Post may be called from any thread, including the callback thread.
#ifndef CONFLUX_SDK_CALLBACK_THREAD_H_
#define CONFLUX_SDK_CALLBACK_THREAD_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace cfx::sdk {

class CallbackThread {
 public:
  // `on_start` (may be empty) runs first on the new thread (e.g. to make a device current).
  explicit CallbackThread(std::function<void()> on_start = {})
      : thread_([this, on_start = std::move(on_start)] {
          if (on_start) on_start();
          Loop();
        }) {}
  // Waits for every announced Post, runs everything queued, joins.
  ~CallbackThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CallbackThread(const CallbackThread&) = delete;
  CallbackThread& operator=(const CallbackThread&) = delete;

  // Announces a Post that a completion notification will make later.
  void Expect() {
    std::lock_guard<std::mutex> lock(mu_);
    ++expected_;
  }
  // Runs fn on the thread after what is already queued; `expected`: the Post that an Expect
  // announced.
  void Post(std::function<void()> fn, bool expected) {
    // Notifies under the lock: once an announced Post has released it, the destructor may run,
    // and Post touches nothing of the object after that.
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    if (expected) --expected_;
    cv_.notify_all();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty() || (stop_ && expected_ == 0); });
      if (queue_.empty()) return;  // stopped, nothing announced, all run
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  int64_t expected_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_CALLBACK_THREAD_H_
