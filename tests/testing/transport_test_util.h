// Helpers for tests of transports (runtime/transport.h): the outcome of an operation waited for
// with a bound, and receives into strings. Callbacks hold shared state, so an operation that
// completes after a failed test returned touches nothing freed.
#ifndef CONFLUX_TESTS_TESTING_TRANSPORT_TEST_UTIL_H_
#define CONFLUX_TESTS_TESTING_TRANSPORT_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "bounded_wait.h"
#include "conflux/status.h"
#include "runtime/transport.h"

namespace cfx::test {

// What one operation's `done` reported, and how often it ran (exactly once is correct).
class Outcome {
 public:
  Outcome() : state_(std::make_shared<State>()) {}
  Transport::Done Callback() const {
    return [state = state_](const Status& s) {
      std::lock_guard<std::mutex> lock(state->mu);
      if (state->calls++ == 0) state->status = s;
      state->cv.notify_all();
    };
  }
  // The status `done` ran with; DeadlineExceeded when it did not run within `timeout`.
  Status Wait(std::chrono::milliseconds timeout = kHangTimeout) const {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (!state_->cv.wait_for(lock, timeout, [&] { return state_->calls > 0; }))
      return errors::DeadlineExceeded("the operation did not complete in ", timeout.count(), " ms");
    return state_->status;
  }
  int calls() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->calls;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    int calls = 0;
    Status status;
  };
  std::shared_ptr<State> state_;
};

// One receive into strings: the metadata and the payload, and its outcome.
struct Received {
  std::string meta;
  std::string payload;
  uint64_t allocs = 0;  // how often alloc ran (once is correct)
  Outcome outcome;
};

// Starts a receive of `key` from `peer` into `into`.
inline Transport::Request RecvInto(Transport& t, int peer, std::string_view key,
                                   std::shared_ptr<Received> into) {
  return t.Recv(
      peer, key,
      [into](std::string_view meta, uint64_t bytes) -> StatusOr<void*> {
        ++into->allocs;
        into->meta = std::string(meta);
        into->payload.assign(bytes, '\0');
        return static_cast<void*>(into->payload.data());
      },
      into->outcome.Callback());
}

// An alloc that refuses every payload: ResourceExhausted "no room for <n> bytes".
inline Transport::Alloc RefusingAlloc() {
  return [](std::string_view, uint64_t bytes) -> StatusOr<void*> {
    return errors::ResourceExhausted("no room for ", bytes, " bytes");
  };
}

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TESTING_TRANSPORT_TEST_UTIL_H_
