// The MPI transport's one notion of a host, shared by the all-reduce through shared memory
// (shared_memory.h) and the staging of payloads (staging.h).
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_HOSTS_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_HOSTS_H_

#include <mpi.h>

namespace cfx::mpi {

// Splits `comm` into one communicator per host, ordered by rank in `comm`: the ranks that MPI
// says share memory (MPI_COMM_TYPE_SHARED), or, with `ranks_per_host` > 0 (transport option
// shared_memory_ranks_per_host), every that many consecutive ranks. Collective over `comm`;
// returns MPI's code (the caller frees `*host` on success).
int SplitByHost(MPI_Comm comm, int ranks_per_host, MPI_Comm* host);

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_HOSTS_H_
