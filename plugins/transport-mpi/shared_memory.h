// SharedMemoryAllReduce: the mpi collectives' all-reduce over every rank of a job, through a
// segment of shared memory per host instead of MPI's messages between the ranks of a host.
//
// Why: Open MPI's all-reduce between processes of one host copies through the kernel (CMA's
// process_vm_readv pins the peer's pages page by page) and through temporary buffers that it
// allocates per call; on a 2-core host it took 2 to 3.5 times as long as the loop below for 1 to
// 64 MiB, and twice as long for 64 KiB (docs/distributed.md has the figures).
//
// The segment (POSIX shared memory, unlinked as soon as every rank of the host has mapped it, so
// that nothing is left behind however the job ends) holds per rank of the host a control block
// and two slots of chunk_bytes. A tensor goes through in chunks; for chunk number s, in slot
// s % 2, each rank of a host of n ranks (its local rank r):
//   1. waits until every rank is done with chunk s - 2 (which used the same slot),
//   2. copies its input's chunk into its slot, but for its own share (step 4 reads that where it
//      is), and publishes `in = s` with the call's description,
//   3. waits for every rank's `in`, and checks that every rank makes the same call (count, dtype,
//      reduction): a rank that differs fails the call on every rank, naming it,
//   4. reduces its share of the chunk (elements [len r / n, len (r + 1) / n)) from every rank's
//      slot, in rank order, into its output and back into its own slot; a MEAN is divided there
//      (mpi_reduce.h's DivideBy); then publishes `reduced = s`,
//   5. waits for every rank's `reduced` and copies the other ranks' shares into its output, then
//      publishes `out = s`.
// So every element is reduced once, by one rank, in rank order: every rank gets the same bits.
//
// Across hosts (hierarchical, as Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE): every host must run
// the same number of ranks n; local rank r of every host reduces the same share of each chunk,
// so between steps 4 and 5 it all-reduces that share with MPI among the hosts' local ranks r
// (one communicator per r: MPI carries 1/n of the tensor per rank between hosts), and a MEAN is
// divided by the job's size after that. The first chunk's check of step 3 also compares the
// call across hosts (one small MPI_Allreduce). Hosts with different numbers of ranks, or no two
// ranks on one host, leave the all-reduce to MPI alone.
//
// The counters only grow, and each is written by its rank only (release) and read by the others
// (acquire). 16-bit floats are reduced as the MPI path's user-defined ops do (each partial result
// computed in float and rounded back).
//
// Waiting spins (pause) for a few microseconds, then yields; when the host has fewer cores than
// the job has ranks it yields at once. Every 20 ms of waiting it checks that the ranks it waits
// for are alive (their pids, gathered at creation, when this process sees them all: not across
// pid namespaces): a rank of this host that died fails the call with UNAVAILABLE naming it,
// instead of a wait that never ends (a rank on another host is MPI's and the heartbeats' to find).
// Stop() makes waiting calls return CANCELLED. After a failure the segment's counters no longer
// agree between the ranks, so every later call fails with the first failure.
//
// Thread-compatible: one call at a time (MpiCollectives issues them in order).
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_SHARED_MEMORY_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_SHARED_MEMORY_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conflux/sdk/status.h"
#include "endpoint.h"
#include "hosts.h"
#include "mpi_reduce.h"

namespace cfx::mpi {

class SharedMemoryAllReduce {
 public:
  // The ranks' control blocks and slots, in the segment; defined in the .cc.
  struct Control;

  // Collective over `comm` (every rank of the job calls it, on the progress thread, where MPI
  // calls are allowed). Returns null when no two ranks share a host, when the hosts run different
  // numbers of ranks, or when making the segment failed on any rank (`*why` says why; the caller
  // decides whether that is an error). `names` names ranks in errors. `ranks_per_host` > 0 takes
  // every that many consecutive ranks for a host instead of asking MPI (transport option
  // shared_memory_ranks_per_host: the hierarchical path on one machine).
  static std::unique_ptr<SharedMemoryAllReduce> Create(MPI_Comm comm, const PeerNames* names,
                                                       int ranks_per_host, std::string* why);
  ~SharedMemoryAllReduce();  // unmaps; never waits for the other ranks
  SharedMemoryAllReduce(const SharedMemoryAllReduce&) = delete;
  SharedMemoryAllReduce& operator=(const SharedMemoryAllReduce&) = delete;

  // Whether AllReduce reduces `dtype` with `op` (the MPI path takes the rest).
  static bool Handles(cfx_dtype dtype, cfx_reduce_op op);
  // output[i] = input[0][i] op ... op input[n - 1][i] over the job's ranks (MEAN divided by n).
  // `input` may be `output`. Blocks until every rank made the same call. `between_hosts`: the
  // MPI datatype and op of the reduction (mpi_reduce.h), for the part between hosts.
  sdk::Status AllReduce(cfx_dtype dtype, const void* input, void* output, uint64_t count,
                        cfx_reduce_op op, const Reduction& between_hosts);
  // Calls waiting now or later return CANCELLED; thread-safe.
  void Stop() { stopped_.store(true, std::memory_order_release); }

  uint64_t chunk_bytes() const { return chunk_bytes_; }
  // Frees the communicator between hosts; on the progress thread, before MPI is finalized.
  void FreeComms();

 private:
  SharedMemoryAllReduce() = default;
  Control* ControlOf(int rank) const;
  char* SlotOf(int rank, int slot) const;
  // The counters of a rank's control block, one per phase of a chunk.
  enum class Phase { kIn, kReduced, kOut };
  // Waits until every rank's counter of `phase` is at least `value`.
  sdk::Status Wait(Phase phase, uint64_t value, uint64_t count);

  int rank_ = 0, size_ = 0;  // on this host
  int job_size_ = 0;
  std::vector<int> job_rank_;         // by rank on this host: its rank in the job, for names
  MPI_Comm between_ = MPI_COMM_NULL;  // this local rank's peers on the other hosts
  const PeerNames* names_ = nullptr;
  uint64_t chunk_bytes_ = 0;
  char* base_ = nullptr;  // the mapping
  size_t mapped_ = 0;
  size_t control_stride_ = 0, slots_offset_ = 0;
  std::vector<int64_t> pids_;   // by rank
  bool pids_visible_ = false;   // every rank's pid names its process in this pid namespace
  bool yield_at_once_ = false;  // more ranks on this host than cores for this process
  uint64_t next_ = 2;           // the next chunk's number; the counters start at 1
  sdk::Status broken_;
  std::atomic<bool> stopped_{false};
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_SHARED_MEMORY_H_
