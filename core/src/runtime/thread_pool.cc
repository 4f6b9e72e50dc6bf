// ThreadPool.
#include "runtime/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>

namespace cfx {
namespace {
thread_local int tls_thread_id = 0;
thread_local const ThreadPool* tls_pool = nullptr;
std::atomic<int> next_thread_id{1};
}  // namespace

ThreadPool::ThreadPool(int num_threads, std::string name) {
  if (num_threads < 1) num_threads = 1;
  // "cfx-" + the pool's name, as `top -H`, gdb and perf show it (15 characters at most).
  const std::string thread_name = ("cfx-" + name).substr(0, 15);
  for (int i = 0; i < num_threads; ++i)
    threads_.emplace_back([this, thread_name] {
      pthread_setname_np(pthread_self(), thread_name.c_str());
      WorkerLoop(next_thread_id.fetch_add(1));
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadPool::Schedule(std::function<void()> fn) {
  // Notified under the lock: once it is released a worker may run the task, end the last step
  // of a session and let its owner destroy the pool, while a thread outside the pool (an
  // asynchronous kernel's completion) would still be notifying the destroyed condition variable.
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(fn));
  cv_.notify_one();
}

int ThreadPool::CurrentThreadId() { return tls_thread_id; }

bool ThreadPool::OwnsCurrentThread() const { return tls_pool == this; }

void ThreadPool::WorkerLoop(int id) {
  tls_thread_id = id;
  tls_pool = this;
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

int InterOpThreads(int inter_op_threads, int intra_op_threads) {
  if (inter_op_threads > 0) return inter_op_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int intra = intra_op_threads;
  return std::max(1, intra > 0 && intra < cores ? cores / intra : 1);
}

}  // namespace cfx
