// ProgressEngine: the loop of the MPI transport's thread.
#include "progress_engine.h"

#include <cstdio>

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <future>
#include <memory>

namespace cfx::mpi {

using Clock = std::chrono::steady_clock;

ProgressEngine::~ProgressEngine() {
  if (thread_.joinable()) Stop(std::chrono::milliseconds(0), nullptr);
}

sdk::Status ProgressEngine::Start(std::function<sdk::Status()> init) {
  std::promise<sdk::Status> started;
  std::future<sdk::Status> result = started.get_future();
  thread_ = std::thread([this, init = std::move(init), started = std::move(started)]() mutable {
    sdk::Status s = init();
    // Named after MPI_Init, whose own threads would otherwise take the name too.
    pthread_setname_np(pthread_self(), "cfx-mpi-poll");
    // Linux's default slack of 50 us would double kAwaitingPoll's sleeps.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    const bool ok = s.ok();
    started.set_value(std::move(s));
    if (ok) Loop();
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    ended_cv_.notify_all();
  });
  sdk::Status s = result.get();
  if (!s.ok()) thread_.join();
  return s;
}

void ProgressEngine::Post(Work work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(work));
  }
  cv_.notify_one();
}

sdk::Status ProgressEngine::Call(const std::function<sdk::Status()>& fn) {
  if (OnProgressThread()) return fn();
  // The promise is shared: the caller may return while set_value is still finishing.
  auto done = std::make_shared<std::promise<sdk::Status>>();
  std::future<sdk::Status> result = done->get_future();
  Post([&fn, done] { done->set_value(fn()); });
  return result.get();
}

void ProgressEngine::Track(MPI_Request request, Completion done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.emplace_back(request, std::move(done));
  }
  cv_.notify_one();
}

void ProgressEngine::TrackAll(std::vector<MPI_Request> requests, sdk::Status error,
                              std::function<sdk::Status(int code)> describe,
                              std::function<void(sdk::Status)> then, bool spin) {
  if (requests.empty()) return then(std::move(error));
  if (spin) {
    spinning_.fetch_add(1);
    then = [this, then = std::move(then)](sdk::Status s) {
      spinning_.fetch_sub(1);
      then(std::move(s));
    };
  }
  struct Pending {
    size_t left;
    sdk::Status error;
    std::function<sdk::Status(int)> describe;
    std::function<void(sdk::Status)> then;
  };
  auto pending = std::make_shared<Pending>(
      Pending{requests.size(), std::move(error), std::move(describe), std::move(then)});
  if (spin) spin_requests_.fetch_add(requests.size());
  for (MPI_Request request : requests)
    Track(request, [this, spin, pending](int code, const MPI_Status&) {
      if (spin) spin_requests_.fetch_sub(1);
      if (code != MPI_SUCCESS && pending->error.ok())
        pending->error = code == kAbandoned
                             ? sdk::Status(CFX_CANCELLED, "the mpi transport shut down first")
                             : pending->describe(code);
      if (--pending->left == 0) pending->then(std::move(pending->error));
    });
}

void ProgressEngine::Stop(std::chrono::milliseconds drain, Work finish) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    drain_ = drain;
    finish_ = std::move(finish);
  }
  cv_.notify_one();
  {
    // MPI_Finalize waits for every rank: with one of them dead it never returns. Past the
    // drain and kFinishLimit the job is ended with MPI_Abort instead of hanging this process.
    // kFinishLimit counts from the end of the drain (its deadline, or a stall).
    std::unique_lock<std::mutex> lock(mu_);
    const bool drained = ended_cv_.wait_for(lock, drain + kFinishLimit,
                                            [&] { return finishing_ || ended_; });
    if (!drained || !ended_cv_.wait_for(lock, kFinishLimit, [&] { return ended_; })) {
      std::fprintf(stderr,
                   "conflux transport-mpi: MPI did not shut down within %lld ms of the end of "
                   "the drain (has a rank of the job died?): aborting the MPI job\n",
                   static_cast<long long>(kFinishLimit.count()));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  thread_.join();
}

bool ProgressEngine::TakeIncoming(std::deque<Work>* work) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool any = !posted_.empty() || !incoming_.empty();
  work->swap(posted_);
  for (auto& [request, done] : incoming_) {
    requests_.push_back(request);
    completions_.push_back(std::move(done));
  }
  incoming_.clear();
  return any;
}

bool ProgressEngine::TestRequests() {
  const int n = static_cast<int>(requests_.size());
  indices_.resize(n);
  statuses_.resize(n);
  int completed = 0;
  const int rc = MPI_Testsome(n, requests_.data(), &completed, indices_.data(), statuses_.data());
  std::vector<std::pair<Completion, std::pair<int, MPI_Status>>> finished;
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
    // The call itself failed: nothing tells which request is done, so all of them fail.
    for (int i = 0; i < n; ++i) {
      if (requests_[i] != MPI_REQUEST_NULL) MPI_Request_free(&requests_[i]);
      finished.push_back({std::move(completions_[i]), {rc, MPI_Status{}}});
    }
    requests_.clear();
    completions_.clear();
  } else if (completed != MPI_UNDEFINED && completed > 0) {
    for (int i = 0; i < completed; ++i) {
      const int error = rc == MPI_ERR_IN_STATUS ? statuses_[i].MPI_ERROR : MPI_SUCCESS;
      finished.push_back({std::move(completions_[indices_[i]]), {error, statuses_[i]}});
    }
    // Completed requests are MPI_REQUEST_NULL now; keep the others in order.
    size_t kept = 0;
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) continue;
      requests_[kept] = requests_[i];
      completions_[kept] = std::move(completions_[i]);
      ++kept;
    }
    requests_.resize(kept);
    completions_.resize(kept);
  }
  for (auto& [done, result] : finished) done(result.first, result.second);
  return !finished.empty();
}

void ProgressEngine::Loop() {
  std::deque<Work> work;
  Clock::time_point last_activity = Clock::now();
  std::chrono::microseconds sleep{1};
  bool draining = false;
  Clock::time_point deadline;
  for (;;) {
    bool active = TakeIncoming(&work);
    while (!work.empty()) {
      Work w = std::move(work.front());
      work.pop_front();
      w();
    }
    if (poller_ && poller_()) active = true;
    if (!requests_.empty() && TestRequests()) active = true;
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && !draining) {
        draining = true;
        deadline = now + drain_;
      }
      // Collectives still in flight at shutdown were abandoned by their steps (a member may be
      // dead): they are not waited for.
      // Nor are requests that stopped moving (their peer is gone: MPI never completes them).
      if (draining && posted_.empty() && incoming_.empty() &&
          (requests_.size() <= spin_requests_.load() || now >= deadline ||
           (!active && now - last_activity > kDrainStall)))
        break;
    }
    // Sleeps up to `d`, or until work is posted or Stop is called.
    auto wait = [&](std::chrono::microseconds d) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, d, [&] {
        return !posted_.empty() || !incoming_.empty() || (stopping_ && !draining);
      });
    };
    if (active) last_activity = now;
    const auto idle = now - last_activity;
    // Asked only where the thread is about to sleep: not on the turns that spin.
    auto awaiting = [&] { return awaiting_ && awaiting_(); };
    if (blocking_.load(std::memory_order_relaxed) > 0) {
      wait(awaiting() ? kAwaitingPoll : idle < kLongQuiet ? kQuietPoll : kQuietSleep);
      continue;
    }
    if (active) {
      sleep = std::chrono::microseconds(1);
      continue;
    }
    if (idle < kSpinWindow || (!requests_.empty() && idle < kPendingSpinLimit) ||
        spinning_.load(std::memory_order_relaxed) > 0) {
      sched_yield();
      continue;
    }
    const std::chrono::microseconds cap = awaiting()            ? kAwaitingPoll
                                          : idle < kLongQuiet ? kMaxSleep
                                                              : kQuietSleep;
    sleep = std::min(sleep, cap);
    wait(sleep);
    sleep = std::min(sleep * 2, cap);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  ended_cv_.notify_all();
  AbandonRequests();
}

void ProgressEngine::AbandonRequests() {
  for (MPI_Request& r : requests_) {
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }
  requests_.clear();
  Work finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    finish = std::move(finish_);
  }
  if (finish) finish();
  std::vector<Completion> abandoned = std::move(completions_);
  for (Completion& done : abandoned) done(kAbandoned, MPI_Status{});
}

}  // namespace cfx::mpi
