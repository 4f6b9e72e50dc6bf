// MpiCollectives: the mpi transport's collectives for host memory (device type "CPU"):
// all-reduce, all-gather and broadcast on a communicator of their own (a duplicate of the
// transport's), and for a group of ranks on a communicator per group, made by
// MPI_Comm_create_group the first time the group is used and kept. Every collective is issued
// in the order of the calls, which is why every member must call the same collectives in the
// same order (the ABI's rule). With MPI_THREAD_MULTIPLE they are MPI's blocking calls
// (MPI_Allreduce, MPI_Allgather, MPI_Bcast): MPI's blocking algorithms, and no thread polling
// while they run. Transport option collectives: caller (between-graph replication's default)
// makes them on the calling thread, one at a time, and runs done there before returning;
// thread (the default otherwise) on a thread of their own, the collective lane, where done
// runs. Otherwise the progress thread issues MPI_Iallreduce, MPI_Iallgather and MPI_Ibcast and
// polls them; done runs there.
//
// With blocking collectives, an all-reduce over every rank of a job whose ranks share one host
// goes through shared memory instead (shared_memory.h; transport option shared_memory), in the
// same order as the other collectives.
//
// Counts above what an MPI int holds run as several collectives (all-reduce, broadcast) or with
// a derived datatype (all-gather). Reductions: see mpi_reduce.h.
//
// Created over the process's live MpiTransport (Create fails without one) and destroyed before
// it. Create and the destructor block until the other ranks take part (a broadcast, a
// communicator duplicate), so neither may run inside a transport callback. Thread-safe.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_COLLECTIVES_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_COLLECTIVES_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "conflux/sdk/transport.h"
#include "endpoint.h"
#include "mpi_reduce.h"
#include "shared_memory.h"

namespace cfx::mpi {

// A thread that runs work in the order it was posted (the collective lane).
class CollectiveLane {
 public:
  // `work(true)` runs it; `work(false)` tells it that it never will (the lane stopped).
  using Work = std::function<void(bool run)>;
  CollectiveLane();
  ~CollectiveLane();  // Stop(0) unless stopped
  void Post(Work work);
  // Work not started is told it will not run; waits up to `limit` for the work running. True
  // when the thread ended; false when the work running is still blocked (in a collective a dead
  // peer never completes): the thread is then left to the process's end.
  bool Stop(std::chrono::milliseconds limit);

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Work> work;
    bool stopping = false;
    bool ended = false;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  std::thread thread_;
  bool stopped_ = false;
};

class MpiCollectives final : public sdk::Collectives {
 public:
  // Every member creates them; rank 0 broadcasts a fingerprint over `group` so that a member
  // running another build fails here rather than in a collective.
  static sdk::Result<std::unique_ptr<MpiCollectives>> Create(const sdk::HostGroup& group);
  ~MpiCollectives() override;

  void AllReduce(Ranks ranks, cfx_dtype dtype, const void* input, void* output, uint64_t count,
                 cfx_reduce_op op, cfx_stream* stream, sdk::TransportDone done) override;
  void AllGather(Ranks ranks, cfx_dtype dtype, const void* input, uint64_t count, void* output,
                 cfx_stream* stream, sdk::TransportDone done) override;
  void Broadcast(Ranks ranks, cfx_dtype dtype, void* buffer, uint64_t count, int32_t root,
                 cfx_stream* stream, sdk::TransportDone done) override;

  explicit MpiCollectives(Endpoint* e) : e_(e) {}

 private:
  // OK when `ranks` is empty or ascending ranks of the job that include this one.
  sdk::Status CheckGroup(Ranks ranks) const;
  // The communicator of `ranks` (empty = every rank); on the progress thread.
  sdk::Result<MPI_Comm> CommOf(Ranks ranks);
  // "over ranks [0,2]" for errors.
  std::string Describe(Ranks ranks) const;
  // Runs one collective on the lane, or on the progress thread: `run` makes its MPI calls
  // (blocking ones when `requests` is null, else non-blocking ones whose requests it adds) and
  // returns the first failing MPI code; `then` gets the outcome once MPI completed it. On the
  // caller's thread neither is wrapped in a std::function (no allocation per collective).
  // RunFn: int(MPI_Comm, std::vector<MPI_Request>* requests); ThenFn: void(sdk::Status).
  template <typename RunFn, typename ThenFn>
  void Issue(const char* call, Ranks ranks, RunFn run, ThenFn then);
  // Blocking collectives: runs `fn` (sdk::Status(Ranks)) on the caller, one collective at a
  // time, or on the lane, in the order of the calls; `then` gets its status.
  template <typename Fn, typename ThenFn>
  void InOrder(const char* call, Ranks ranks, Fn fn, ThenFn then);
  // Makes one collective's blocking MPI calls on this thread (the caller's or the lane's), with
  // the progress thread told to keep quiet meanwhile.
  template <typename RunFn>
  sdk::Status RunBlocking(const char* call, Ranks ranks, const RunFn& run);

  Endpoint* e_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  ReduceOps ops_;
  bool on_caller_ = false;                           // collectives: caller
  std::timed_mutex caller_mu_;                       // held by the caller in a collective
  std::unique_ptr<CollectiveLane> lane_;             // null: the caller or the progress thread
  std::unique_ptr<SharedMemoryAllReduce> shm_;       // null: MPI_Allreduce
  std::map<std::vector<int32_t>, MPI_Comm> groups_;  // the issuing thread's
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_COLLECTIVES_H_
