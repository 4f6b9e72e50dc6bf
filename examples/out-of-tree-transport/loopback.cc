// A transport written with the SDK: "loopback", a process group of one (rank 0 of size 1) whose
// receives take the messages this same process sends to rank 0, and its host-memory collectives
// (with one member every collective is a copy).
//
// What it shows: matching a send and a receive by key whichever comes first, the receiver's
// buffer asked for with the metadata (TransportAlloc), cancellation and aborted key prefixes,
// and the ABI's threading rule: callbacks run on a thread of the transport's (here one
// completion thread), never inside a call that started another operation.
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "conflux/sdk.h"

namespace {

using cfx::sdk::Status;
using cfx::sdk::TransportAlloc;
using cfx::sdk::TransportDone;

Status Cancelled(const char* what) { return Status(CFX_CANCELLED, what); }

// Takes the oldest entry waiting under `key`, if any.
template <typename T>
std::optional<T> TakeFirst(std::map<std::string, std::deque<T>>& waiting, std::string_view key) {
  auto it = waiting.find(std::string(key));
  if (it == waiting.end()) return std::nullopt;
  T first = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) waiting.erase(it);
  return first;
}

// Runs callbacks one after the other on a thread of its own.
class CompletionThread {
 public:
  CompletionThread() : thread_([this] { Loop(); }) {}
  ~CompletionThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Run(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and everything ran
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
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest exists
};

class LoopbackTransport final : public cfx::sdk::Transport {
 public:
  static cfx::sdk::Result<std::unique_ptr<LoopbackTransport>> Create(
      const cfx::sdk::TransportConfig& config) {
    if (config.expected_size > 1)
      return cfx::sdk::InvalidArgument("the loopback transport has one process, not ",
                                       config.expected_size);
    return std::make_unique<LoopbackTransport>();
  }

  int32_t Rank() const override { return 0; }
  int32_t Size() const override { return 1; }

  cfx_transport_request Send(int32_t peer, std::string_view key, std::string_view meta,
                             const void* payload, uint64_t payload_bytes,
                             TransportDone done) override {
    if (Reject(peer, done)) return 0;
    std::unique_lock<std::mutex> lock(mu_);
    const cfx_transport_request id = ++next_id_;
    Message m{std::string(meta), static_cast<const char*>(payload), payload_bytes, done};
    if (std::optional<Receive> r = TakeFirst(receives_, key)) {
      lock.unlock();
      Deliver(std::move(m), std::move(*r));
    } else if (Aborted(key)) {
      lock.unlock();
      completions_.Run([done] { done(Status()); });  // dropped: the sender completes
    } else {
      sends_[std::string(key)].push_back(std::move(m));
    }
    return id;
  }

  cfx_transport_request Recv(int32_t peer, std::string_view key, TransportAlloc alloc,
                             TransportDone done) override {
    if (Reject(peer, done)) return 0;
    std::unique_lock<std::mutex> lock(mu_);
    const cfx_transport_request id = ++next_id_;
    Receive r{id, alloc, done};
    if (std::optional<Message> m = TakeFirst(sends_, key)) {
      lock.unlock();
      Deliver(std::move(*m), std::move(r));
    } else if (Aborted(key)) {
      lock.unlock();
      completions_.Run([done] { done(Cancelled("the key was aborted")); });
    } else {
      receives_[std::string(key)].push_back(std::move(r));
    }
    return id;
  }

  // A receive still waiting for its message completes with CANCELLED; anything else has been
  // matched and completes on its own.
  void Cancel(cfx_transport_request request) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = receives_.begin(); it != receives_.end(); ++it) {
      for (auto r = it->second.begin(); r != it->second.end(); ++r) {
        if (r->id != request) continue;
        TransportDone done = r->done;
        it->second.erase(r);
        if (it->second.empty()) receives_.erase(it);
        completions_.Run([done] { done(Cancelled("the receive was cancelled")); });
        return;
      }
    }
  }

  void AbortPrefix(std::string_view prefix, const Status& why) override {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_.insert(std::string(prefix));
    for (auto it = receives_.lower_bound(std::string(prefix));
         it != receives_.end() && it->first.starts_with(prefix);) {
      for (Receive& r : it->second) completions_.Run([done = r.done, why] { done(why); });
      it = receives_.erase(it);
    }
    for (auto it = sends_.lower_bound(std::string(prefix));
         it != sends_.end() && it->first.starts_with(prefix);) {
      for (Message& m : it->second) completions_.Run([done = m.done] { done(Status()); });
      it = sends_.erase(it);
    }
  }

 private:
  struct Message {
    std::string meta;
    const char* payload;
    uint64_t bytes;
    TransportDone done;
  };
  struct Receive {
    cfx_transport_request id;
    TransportAlloc alloc;
    TransportDone done;
  };

  // The group has rank 0 only: an operation with another peer fails.
  bool Reject(int32_t peer, const TransportDone& done) {
    if (peer == 0) return false;
    completions_.Run([done, peer] { done(cfx::sdk::InvalidArgument("no rank ", peer)); });
    return true;
  }

  // Copies the payload into the buffer the receiver asks for, on the completion thread.
  void Deliver(Message m, Receive r) {
    completions_.Run([m = std::move(m), r = std::move(r)] {
      cfx::sdk::Result<void*> buffer = r.alloc(m.meta, m.bytes);
      if (buffer.ok() && m.bytes > 0) std::memcpy(buffer.value(), m.payload, m.bytes);
      m.done(Status());
      r.done(buffer.status());
    });
  }

  bool Aborted(std::string_view key) const {
    for (const std::string& prefix : aborted_)
      if (key.starts_with(prefix)) return true;
    return false;
  }

  std::mutex mu_;
  cfx_transport_request next_id_ = 0;
  std::map<std::string, std::deque<Message>> sends_;     // sent, not yet received
  std::map<std::string, std::deque<Receive>> receives_;  // posted, no message yet
  std::set<std::string> aborted_;
  CompletionThread completions_;  // last: joined first, after its pending callbacks ran
};

// With one member, every collective copies its input to its output.
class LoopbackCollectives final : public cfx::sdk::Collectives {
 public:
  static cfx::sdk::Result<std::unique_ptr<LoopbackCollectives>> Create(
      const cfx::sdk::HostGroup& group) {
    if (group.Size() != 1) return cfx::sdk::InvalidArgument("loopback collectives need 1 rank");
    return std::make_unique<LoopbackCollectives>();
  }
  void AllReduce(Ranks, cfx_dtype dtype, const void* input, void* output, uint64_t count,
                 cfx_reduce_op, cfx_stream*, TransportDone done) override {
    Copy(dtype, input, output, count, done);
  }
  void AllGather(Ranks, cfx_dtype dtype, const void* input, uint64_t count, void* output,
                 cfx_stream*, TransportDone done) override {
    Copy(dtype, input, output, count, done);
  }
  void Broadcast(Ranks, cfx_dtype, void*, uint64_t, int32_t, cfx_stream*,
                 TransportDone done) override {
    done(Status());
  }

 private:
  static void Copy(cfx_dtype dtype, const void* input, void* output, uint64_t count,
                   TransportDone done) {
    const size_t size = cfx::sdk::DTypeSize(dtype);
    if (size == 0)
      return done(cfx::sdk::Unimplemented(cfx::sdk::DTypeName(dtype), " has no fixed size"));
    if (input != output) std::memmove(output, input, count * size);
    done(Status());
  }
};

Status Init(cfx::sdk::Plugin& p) {
  p.SetInfo("example_loopback", "1.0.0");
  p.Transport<LoopbackTransport>("loopback").HostCollectives<LoopbackCollectives>("loopback");
  return p.status();
}

}  // namespace

CFX_DEFINE_PLUGIN(Init)
