// The asynchronous machinery of a TOYDEV device, made of host threads: what a GPU's streams and
// events do in hardware.
//
// WorkQueue: an in-order queue of work run by a thread of its own. A TOYDEV stream is one; so is
// the device's callback thread, which runs the host's stream_then callbacks (see toy_device.cc).
// Event: a point in a stream's work that other streams and host threads wait for.
//
// Thread-safe: any thread may use a WorkQueue or an Event, except that a queue's own work must
// not Drain it (it would wait for itself).
#ifndef TOYDEV_STREAM_H_
#define TOYDEV_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace toydev {

class WorkQueue {
 public:
  WorkQueue();
  // Runs everything still queued, then stops the thread.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `work` to run after everything enqueued before it; returns at once.
  void Enqueue(std::function<void()> work);
  // Blocks until everything enqueued before the call has run.
  void Drain();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: it starts once the members it reads exist
};

// As a CUDA event: Record marks the current end of a stream's queue, and the event completes
// when the stream gets there. An event recorded again stands for its latest record. An event
// never recorded is complete.
//
// The closures that complete or wait for an event hold it by shared_ptr, so the host may destroy
// its handle while they are still queued (it does so right after stream_wait_event).
class Event {
 public:
  // Marks a new record; returns its number, for Complete and Wait.
  uint64_t Record();
  // Record `record` has been reached (run on the stream it was recorded on).
  void Complete(uint64_t record);
  // Whether the latest record has been reached.
  bool IsComplete();
  // Blocks until record `record` has been reached (0: returns at once).
  void Wait(uint64_t record);
  // The number of the latest record: what stream_wait_event waits for.
  uint64_t latest();

 private:
  std::mutex mu_;
  std::condition_variable reached_;
  uint64_t recorded_ = 0;   // records made
  uint64_t completed_ = 0;  // the highest record reached
};

}  // namespace toydev

#endif  // TOYDEV_STREAM_H_
