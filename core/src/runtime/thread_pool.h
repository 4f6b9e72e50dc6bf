// ThreadPool: the executor's inter-op pool (whitepaper §5: costly kernels run here; cheap ones
// run inline on the thread that made them ready).
#ifndef CONFLUX_CORE_SRC_RUNTIME_THREAD_POOL_H_
#define CONFLUX_CORE_SRC_RUNTIME_THREAD_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cfx {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads, std::string name = "inter_op");
  ~ThreadPool();  // runs what is queued, then joins
  void Schedule(std::function<void()> fn);
  int num_threads() const { return static_cast<int>(threads_.size()); }
  // A small number identifying the calling thread (0 = not a pool thread).
  static int CurrentThreadId();
  // True when the calling thread is one of this pool's threads.
  bool OwnsCurrentThread() const;

 private:
  void WorkerLoop(int id);
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// The executor pool's size for a config's `threads:` (inter_op_threads, intra_op_threads): the
// configured number, or by default as many inter-op threads as intra-op teams fit on the cores
// (one when every op may use every core), so that ops side by side do not oversubscribe them.
int InterOpThreads(int inter_op_threads, int intra_op_threads);

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_THREAD_POOL_H_
