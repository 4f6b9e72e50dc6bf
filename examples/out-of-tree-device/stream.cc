// WorkQueue and Event (see stream.h).
#include "stream.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace toydev {

WorkQueue::WorkQueue() : thread_([this] { Run(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void WorkQueue::Enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void WorkQueue::Drain() {
  // A marker at the end of the queue: when it runs, everything before it has.
  struct Marker {
    std::mutex mu;
    std::condition_variable cv;
    bool reached = false;
  };
  auto marker = std::make_shared<Marker>();
  Enqueue([marker] {
    std::lock_guard<std::mutex> lock(marker->mu);
    marker->reached = true;
    marker->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(marker->mu);
  marker->cv.wait(lock, [&] { return marker->reached; });
}

// One item at a time, in order, with the lock released while it runs so that work may enqueue
// more work (on this queue or another).
void WorkQueue::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    lock.lock();
  }
}

uint64_t Event::Record() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++recorded_;
}

void Event::Complete(uint64_t record) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    completed_ = std::max(completed_, record);
  }
  reached_.notify_all();
}

bool Event::IsComplete() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ >= recorded_;
}

void Event::Wait(uint64_t record) {
  std::unique_lock<std::mutex> lock(mu_);
  reached_.wait(lock, [&] { return completed_ >= record; });
}

uint64_t Event::latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_;
}

}  // namespace toydev
