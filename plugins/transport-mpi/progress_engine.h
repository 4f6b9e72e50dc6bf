// ProgressEngine: the MPI transport's one thread. It initializes MPI, runs work posted to it in
// order (every MPI call when MPI gives less than MPI_THREAD_MULTIPLE, and always the matching of
// receives and the collectives), tests the requests it tracks (MPI_Testsome) and polls for
// incoming messages, and finalizes MPI at the end.
//
// Pacing: while something happened within the last kSpinWindow, or requests are in flight and
// something happened within kPendingSpinLimit, or a collective is in flight, the thread spins
// with sched_yield (a large transfer needs MPI to be called often); otherwise it sleeps, 1 us,
// then twice as long each time up to kMaxSleep (kAwaitingPoll while a step's receive waits for
// its message; kQuietSleep once nothing happened for kLongQuiet), on a condition variable that
// Post and Track signal. So an idle transport costs next to nothing (each wake-up polls MPI,
// some 30 us of CPU with Open MPI), a message from a peer is seen within about a millisecond
// (10 ms after a long quiet spell), and one that a step waits for within about 50 us. The
// thread's timer slack is 1 us, so that its short sleeps are as short as asked.
//
// Thread-safety: Post, Track and Call may be called from any thread; the callbacks they take run
// on the progress thread, one at a time.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_PROGRESS_ENGINE_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_PROGRESS_ENGINE_H_

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "conflux/sdk/status.h"

namespace cfx::mpi {

class ProgressEngine {
 public:
  using Work = std::function<void()>;
  // A tracked request completed: `error` is MPI_SUCCESS or its MPI error code, or kAbandoned
  // when the engine stopped before the request completed.
  using Completion = std::function<void(int error, const MPI_Status& status)>;
  static constexpr int kAbandoned = -1;

  static constexpr std::chrono::microseconds kSpinWindow{150};
  static constexpr std::chrono::milliseconds kPendingSpinLimit{20};
  static constexpr std::chrono::microseconds kMaxSleep{1000};
  // After kLongQuiet without anything happening, sleeps grow to kQuietSleep.
  static constexpr std::chrono::milliseconds kLongQuiet{100};
  static constexpr std::chrono::microseconds kQuietSleep{10000};
  static constexpr std::chrono::microseconds kAwaitingPoll{50};
  static constexpr std::chrono::microseconds kQuietPoll{1000};
  // Stop's drain ends early when no request completed and nothing arrived for this long.
  static constexpr std::chrono::milliseconds kDrainStall{1000};
  // How long Stop waits for MPI to finalize after the drain before it aborts the MPI job.
  static constexpr std::chrono::milliseconds kFinishLimit{3000};

  ProgressEngine() = default;
  ~ProgressEngine();  // Stop()s if Start succeeded and Stop was not called
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  // Starts the thread and runs `init` on it first (MPI_Init_thread and set-up); returns its
  // status. On failure the thread has ended.
  sdk::Status Start(std::function<sdk::Status()> init);

  // Runs `work` on the progress thread after the work posted before it.
  void Post(Work work);
  // Runs `fn` on the progress thread and waits for it (at once when called there).
  sdk::Status Call(const std::function<sdk::Status()>& fn);
  // Tests `request` from the next turn on; `done` runs on the progress thread once it completes.
  void Track(MPI_Request request, Completion done);
  // Tracks `requests` as one operation: `then` runs on the progress thread once all have
  // completed (at once, on this thread, when there are none) with `error` when it is not OK,
  // else the first failure as `describe(code)` makes it (CANCELLED for kAbandoned).
  // `spin`: until they complete, the thread polls without sleeping (a non-blocking collective
  // advances only inside MPI calls, round by round).
  void TrackAll(std::vector<MPI_Request> requests, sdk::Status error,
                std::function<sdk::Status(int code)> describe,
                std::function<void(sdk::Status)> then, bool spin = false);
  // Another thread is inside a blocking MPI collective from Enter to Leave. MPI advances every
  // request from inside that call, so meanwhile this thread does not spin: it polls every
  // kQuietPoll (kAwaitingPoll while a receive waits, kQuietSleep after kLongQuiet without
  // anything happening), leaving the cores to the collective.
  void EnterBlockingCall() { blocking_.fetch_add(1); }
  void LeaveBlockingCall() { blocking_.fetch_sub(1); }
  // Called every turn on the progress thread: true when it found something to do. `awaiting`
  // (optional, also on the progress thread): whether a step waits for a message. While one
  // does, an idle thread sleeps at most kAwaitingPoll at a time instead of kMaxSleep: a step
  // whose last message comes after a few milliseconds of quiet (the replies at the end of a
  // step run across tasks) then sees it some 0.5 ms sooner.
  void SetPoller(std::function<bool()> poll, std::function<bool()> awaiting = {}) {
    poller_ = std::move(poll);
    awaiting_ = std::move(awaiting);
  }

  // Ends the thread: posted work runs, then requests in flight (but those of collectives) get up
  // to `drain` to complete, or until none moved for kDrainStall (a dead peer's never do; the
  // poller still runs, so that a peer's messages are taken), then
  // those left are cancelled and freed, `finish` runs (MPI_Finalize), and their completions run
  // with kAbandoned; when that has not ended kFinishLimit after the drain, MPI_Abort ends the
  // job. Blocks; not from the progress thread.
  void Stop(std::chrono::milliseconds drain, Work finish);

  bool OnProgressThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void Loop();
  // Moves posted work and new requests to the thread; true when there was any.
  bool TakeIncoming(std::deque<Work>* work);
  // MPI_Testsome over the tracked requests; runs the completions. True when any completed.
  bool TestRequests();
  void AbandonRequests();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> posted_;                                   // guarded by mu_
  std::vector<std::pair<MPI_Request, Completion>> incoming_;  // guarded by mu_
  bool stopping_ = false;                                     // guarded by mu_
  bool finishing_ = false;  // the drain is over; guarded by mu_
  bool ended_ = false;      // the thread finished; guarded by mu_
  std::condition_variable ended_cv_;
  std::chrono::milliseconds drain_{0};                        // guarded by mu_
  Work finish_;                                               // guarded by mu_

  // The progress thread's own.
  std::function<bool()> poller_;
  std::function<bool()> awaiting_;
  std::atomic<int> spinning_{0};  // operations tracked with `spin` still in flight
  std::atomic<size_t> spin_requests_{0};  // and their requests
  std::atomic<int> blocking_{0};          // blocking collectives running on other threads
  std::vector<MPI_Request> requests_;
  std::vector<Completion> completions_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;

  std::thread thread_;
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_PROGRESS_ENGINE_H_
