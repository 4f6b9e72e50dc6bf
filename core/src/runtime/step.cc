// CancellationManager and Rendezvous.
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

std::string Rendezvous::Key(const std::string& send_device, const std::string& recv_device,
                            const std::string& tensor_name, int64_t frame, int64_t iteration) {
  return Key(KeyPrefix(send_device, recv_device, tensor_name), frame, iteration);
}

std::string Rendezvous::KeyPrefix(const std::string& send_device, const std::string& recv_device,
                                  const std::string& tensor_name) {
  return StrCat(send_device, ";", recv_device, ";", tensor_name, ";");
}

std::string Rendezvous::Key(const std::string& prefix, int64_t frame, int64_t iteration) {
  return StrCat(prefix, frame, ":", iteration);
}

Status Rendezvous::Send(const std::string& key, Value value) {
  DoneCallback waiter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    auto it = waiters_.find(key);
    if (it == waiters_.end()) {
      if (!values_.emplace(key, std::move(value)).second)
        return errors::Internal("rendezvous key ", key, " was sent twice in one step");
      return Status();
    }
    waiter = std::move(it->second);
    waiters_.erase(it);
  }
  waiter(Status(), value);
  return Status();
}

void Rendezvous::RecvAsync(const std::string& key, DoneCallback done) {
  Value value;
  Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) {
      status = aborted_;
    } else {
      auto it = values_.find(key);
      if (it == values_.end()) {
        // try_emplace: `done` is left intact when the key is taken, to report the error.
        if (!waiters_.try_emplace(key, std::move(done)).second) {
          status = errors::Internal("rendezvous key ", key, " was received twice in one step");
        } else {
          return;
        }
      } else {
        value = std::move(it->second);
        values_.erase(it);
      }
    }
  }
  done(status, value);
}

void Rendezvous::StartAbort(const Status& status) {
  std::unordered_map<std::string, DoneCallback> waiters;
  Status aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return;
    aborted_ = status.ok() ? errors::Cancelled("step aborted") : status;
    aborted = aborted_;
    waiters.swap(waiters_);
    values_.clear();
  }
  for (auto& [key, cb] : waiters) cb(aborted, Value());
}

}  // namespace cfx
