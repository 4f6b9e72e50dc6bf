// MpiCollectives: the mpi transport's collectives for host memory (device type "CPU"):
// MPI_Iallreduce, MPI_Iallgather and MPI_Ibcast on a communicator of their own (a duplicate of
// the transport's), and for a group of ranks on a communicator per group, made by
// MPI_Comm_create_group the first time the group is used and kept. Every collective is issued
// by the progress thread in the order of the calls, which is why every member must call the
// same collectives in the same order (the ABI's rule); done runs there once MPI completed it.
//
// Counts above what an MPI int holds run as several collectives (all-reduce, broadcast) or with
// a derived datatype (all-gather). Reductions: see mpi_reduce.h.
//
// Created over the process's live MpiTransport (Create fails without one) and destroyed before
// it. Create and the destructor block until the other ranks take part (a broadcast, a
// communicator duplicate), so neither may run inside a transport callback. Thread-safe.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_COLLECTIVES_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_COLLECTIVES_H_

#include <map>
#include <memory>
#include <vector>

#include "conflux/sdk/transport.h"
#include "endpoint.h"
#include "mpi_reduce.h"

namespace cfx::mpi {

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
  sdk::Status CheckGroup(const std::vector<int32_t>& ranks) const;
  // The communicator of `ranks` (empty = every rank); on the progress thread.
  sdk::Result<MPI_Comm> CommOf(const std::vector<int32_t>& ranks);
  // "over ranks [0,2]" for errors.
  std::string Describe(const std::vector<int32_t>& ranks) const;
  // Posts the pieces of one collective (each returns its MPI code), then tracks them.
  void Issue(const char* call, const std::vector<int32_t>& ranks,
             const std::function<int(MPI_Comm, std::vector<MPI_Request>*)>& post,
             std::function<void(sdk::Status)> then);

  Endpoint* e_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  ReduceOps ops_;
  std::map<std::vector<int32_t>, MPI_Comm> groups_;  // the progress thread's
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_COLLECTIVES_H_
