// SplitByHost (hosts.h).
#include "hosts.h"

namespace cfx::mpi {

int SplitByHost(MPI_Comm comm, int ranks_per_host, MPI_Comm* host) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return ranks_per_host > 0
             ? MPI_Comm_split(comm, rank / ranks_per_host, rank, host)
             : MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, host);
}

}  // namespace cfx::mpi
