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
  std::lock_guard<std::mutex> lock(mu_);
  return callbacks_.erase(token) > 0;
}

void CancellationManager::StartCancel(const Status& status) {
  std::map<Token, std::function<void(const Status&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    status_ = status;
    callbacks.swap(callbacks_);
  }
  for (auto& [token, cb] : callbacks) cb(status);
}

}  // namespace cfx
