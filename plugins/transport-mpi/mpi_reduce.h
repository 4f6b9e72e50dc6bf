// How the MPI collectives reduce each dtype: an MPI datatype and op for sum, min, max and prod
// (MEAN is a sum divided afterwards by the group's size, with integer division for integer
// dtypes). MPI has no 16-bit floats, so half and bfloat16 reduce with user-defined ops that
// compute in float and round each partial result back; bool has min (logical and) and max
// (logical or) only.
//
// Create and Free run on the progress thread; For and DivideBy are thread-safe in between.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_REDUCE_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_REDUCE_H_

#include <mpi.h>

#include "conflux/sdk/status.h"

namespace cfx::mpi {

struct Reduction {
  MPI_Datatype type;
  MPI_Op op;
};

class ReduceOps {
 public:
  sdk::Status Create();  // the user-defined ops
  void Free();
  // UNIMPLEMENTED for a dtype or op this cannot reduce.
  sdk::Result<Reduction> For(cfx_dtype dtype, cfx_reduce_op op) const;

 private:
  // By cfx_reduce_op (MEAN = SUM), for half and for bfloat16.
  MPI_Op half_[5] = {};
  MPI_Op bfloat16_[5] = {};
};

// "sum", "mean", "min", "max", "prod"; "?" for another value. For errors.
const char* ReduceOpName(int op);

// data[i] /= n, i < count, for MEAN.
void DivideBy(cfx_dtype dtype, void* data, uint64_t count, int n);

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_REDUCE_H_
