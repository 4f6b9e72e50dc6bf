// Per-step state shared by every executor of one step: cancellation, the rendezvous through which
// partitions exchange tensors (runtime/rendezvous.h), and the call frame that holds the step's
// feeds and fetches.
#ifndef CONFLUX_CORE_SRC_RUNTIME_STEP_H_
#define CONFLUX_CORE_SRC_RUNTIME_STEP_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "conflux/device.h"
#include "conflux/status.h"
#include "conflux/tensor.h"
#include "runtime/rendezvous.h"

namespace cfx {

class Collectives;
class DeviceCollectives;
class Env;

// Callbacks to run when a step is aborted (a kernel failed, the step timed out, the session
// closed). Blocked operations (queue ops, Recvs) register one and deregister when they finish.
class CancellationManager {
 public:
  using Token = int64_t;
  static constexpr Token kInvalidToken = -1;
  // Returns kInvalidToken (and does not register) when the step is already cancelled.
  Token Register(std::function<void(const Status&)> callback);
  // True when the callback was removed before it ran (the caller still owns its completion).
  // False when it ran or is running: then, unless called from a callback, waits until
  // StartCancel's callbacks have returned, so that the caller may free what its callback uses.
  bool Deregister(Token token);
  // Runs every registered callback once with `status`; later calls are no-ops.
  void StartCancel(const Status& status);
  bool cancelled() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cancelled_;
  }
  Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  Status status_;
  Token next_ = 0;
  std::map<Token, std::function<void(const Status&)>> callbacks_;
  // The thread that runs the callbacks while StartCancel runs them; Deregister waits for them
  // (cancel_done_) on every other thread.
  std::thread::id cancelling_thread_;
  bool cancelling_ = false;
  std::condition_variable cancel_done_;
};

// The step's feeds (_Arg nodes read them) and fetches (_Retval nodes write them).
struct CallFrame {
  std::vector<Tensor> args;
  std::vector<Tensor> retvals;
  std::vector<char> retval_set;  // char: set concurrently by different _Retval nodes
};

struct StepContext {
  int64_t step_id = 0;
  CancellationManager* cancellation = nullptr;
  Rendezvous* rendezvous = nullptr;
  CallFrame* call_frame = nullptr;
  bool collect_stats = false;
  // Resources that live for this step only (TensorArrays, stacks), shared by every executor of
  // the step; null outside a Session step.
  ResourceMgr* step_resources = nullptr;
  // The process group's collectives for host memory (runtime/transport.h); null outside a
  // cluster. The collective kernels (CollectiveReduceV2, ...) run on them.
  Collectives* collectives = nullptr;
  // Its collectives for device memory, by device type (null outside a cluster): the collective
  // kernels on a device other than the CPU run on them.
  const DeviceCollectives* device_collectives = nullptr;
  // The file system the step's kernels write through (the runtime's Env); null means
  // Env::Default().
  Env* env = nullptr;
};

// A one-shot event.
class Notification {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return notified_; });
  }
  // False on timeout.
  bool WaitFor(int64_t ms) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return notified_; });
  }
  bool HasBeenNotified() {
    std::lock_guard<std::mutex> lock(mu_);
    return notified_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace cfx

#endif  // CONFLUX_CORE_SRC_RUNTIME_STEP_H_
