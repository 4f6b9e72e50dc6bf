// Endpoint: what the sending and receiving halves of the MPI transport share. Set once while
// the transport is created; then read-only, except the peers' names (thread-safe).
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_ENDPOINT_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_ENDPOINT_H_

#include <mpi.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "mpi_errors.h"
#include "progress_engine.h"
#include "staging.h"

namespace cfx::mpi {

// The host's names of the ranks (cfx_transport_funcs.set_peer_name), for error messages.
class PeerNames {
 public:
  void Resize(int size) {
    std::lock_guard<std::mutex> lock(mu_);
    names_.resize(size);
  }
  void Set(int rank, std::string name) {
    std::lock_guard<std::mutex> lock(mu_);
    if (rank >= 0 && rank < static_cast<int>(names_.size())) names_[rank] = std::move(name);
  }
  // "/job:worker/replica:0/task:1 (rank 1)", or "rank 1" before the host named it.
  std::string Of(int rank) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string number = "rank " + std::to_string(rank);
    if (rank < 0 || rank >= static_cast<int>(names_.size()) || names_[rank].empty()) return number;
    return names_[rank] + " (" + number + ")";
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> names_;
};

struct Endpoint {
  MPI_Comm comm = MPI_COMM_NULL;  // the transport's own duplicate of MPI_COMM_WORLD
  int rank = 0;
  int size = 0;
  int tag_ub = 32767;  // MPI_TAG_UB: payload tags are 1..tag_ub
  uint64_t chunk_bytes = 0;
  ProgressEngine engine;
  PeerNames names;
  StagingArea* staging = nullptr;  // payloads to ranks of this host; null: every one through MPI

  // "<direction> <peer>, key '<key>'" for MpiError.
  std::string Where(const char* direction, int peer, std::string_view key) const {
    return std::string(direction) + " " + names.Of(peer) + ", key '" + PrintableKey(key) + "'";
  }
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_ENDPOINT_H_
