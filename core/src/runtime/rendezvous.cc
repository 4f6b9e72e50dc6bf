// Rendezvous keys and the in-process rendezvous.
#include "runtime/rendezvous.h"

#include <cinttypes>
#include <cstdio>
#include <utility>

namespace cfx {

std::string Rendezvous::KeyPrefix(const std::string& send_device, uint64_t send_incarnation,
                                  const std::string& recv_device, const std::string& tensor_name) {
  char incarnation[17];
  std::snprintf(incarnation, sizeof(incarnation), "%016" PRIx64, send_incarnation);
  return StrCat(send_device, ";", incarnation, ";", recv_device, ";", tensor_name, ";");
}

std::string Rendezvous::Key(const std::string& prefix, int64_t frame, int64_t iteration) {
  return StrCat(prefix, frame, ":", iteration);
}

Status LocalRendezvous::Send(const std::string& key, Value value) {
  DoneCallback waiter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!aborted_.ok()) return aborted_;
    auto it = waiters_.find(key);
    if (it == waiters_.end()) {
      if (!values_.try_emplace(key, Slot{std::move(value), false}).second)
        return errors::Internal("rendezvous key ", key, " was sent twice in one step");
      return Status();
    }
    // Delivered at once; the key stays, taken, so that a second Send is still an error.
    if (!values_.try_emplace(key, Slot{Value(), true}).second)
      return errors::Internal("rendezvous key ", key, " was sent twice in one step");
    waiter = std::move(it->second);
    waiters_.erase(it);
  }
  waiter(Status(), value);
  return Status();
}

void LocalRendezvous::RecvAsync(const std::string& key, DoneCallback done) {
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
      } else if (it->second.taken) {
        status = errors::Internal("rendezvous key ", key, " was received twice in one step");
      } else {
        value = std::move(it->second.value);
        it->second.value = Value();
        it->second.taken = true;
      }
    }
  }
  done(status, value);
}

void LocalRendezvous::StartAbort(const Status& status) {
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
  // Never an OK status: a waiter must not take the empty Value for a received tensor.
  for (auto& [key, cb] : waiters) cb(aborted, Value());
}

}  // namespace cfx
