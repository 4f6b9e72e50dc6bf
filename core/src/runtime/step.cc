// CancellationManager.
#include "runtime/step.h"

#include <utility>

namespace cfx {

CancellationManager::Token CancellationManager::Register(
    std::function<void(const Status&)> callback) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return kInvalidToken;
  Token t = next_++;
  callbacks_.emplace(t, std::move(callback));
  return t;
}

bool CancellationManager::Deregister(Token token) {
  std::unique_lock<std::mutex> lock(mu_);
  if (callbacks_.erase(token) > 0) return true;
  // A callback that deregisters another runs on the cancelling thread: it must not wait for
  // itself.
  if (cancelling_thread_ != std::this_thread::get_id())
    cancel_done_.wait(lock, [&] { return !cancelling_; });
  return false;
}

void CancellationManager::StartCancel(const Status& status) {
  std::map<Token, std::function<void(const Status&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
    cancelling_ = true;
    cancelling_thread_ = std::this_thread::get_id();
  }
  for (auto& [token, cb] : callbacks) cb(status);
  std::lock_guard<std::mutex> lock(mu_);
  cancelling_ = false;
  cancelling_thread_ = std::thread::id();
  // Under the lock: a waiter that returns may destroy this manager.
  cancel_done_.notify_all();
}

}  // namespace cfx
