// The MPI job a transport test program runs in: the transport-mpi plugin loaded through the real
// PluginManager, its transport made by CreatePluginTransport (one per process: MPI starts once
// per process) and its collectives by CreatePluginCollectives, for every test of the program.
//
// Every rank runs the same tests in the same order; a test talks to other ranks only through
// the transport and never ASSERTs between two calls its peers wait for, so that a failure on one
// rank fails that rank's test rather than hanging the others. Waits are bounded (Outcome::Wait).
#ifndef CONFLUX_TESTS_TRANSPORT_MPI_WORLD_H_
#define CONFLUX_TESTS_TRANSPORT_MPI_WORLD_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/transport.h"

namespace cfx::test {

class MpiWorld {
 public:
  // The job's transport and collectives; valid between main's Create and Destroy.
  static Transport& transport();
  static Collectives& collectives();
  static int rank() { return transport().rank(); }
  static int size() { return transport().size(); }

  // Loads the plugin and creates the transport (chunk_bytes 1 MiB, so that a few MiB make
  // several chunks; `funnel`: every MPI call on the progress thread; `shared_memory`: the
  // transport option, "" for its default; `ranks_per_host`: the option
  // shared_memory_ranks_per_host, 0 for its default) and the collectives.
  static Status Create(bool funnel, const std::string& shared_memory, int ranks_per_host);
  // The all-reduce over every rank goes through shared memory (the option was "on").
  static bool shared_memory();
  // Every that many consecutive ranks count as one host (0: MPI's hosts).
  static int ranks_per_host();
  // What creating another mpi transport with `options` says: its options' error, or (the
  // options being valid) that a process has one mpi transport at most.
  static Status CreateAnother(const std::vector<std::pair<std::string, std::string>>& options);
  static void Destroy();

  // Every rank waits until all have arrived (messages through rank 0).
  static Status Barrier();
  // "<test name>;<what>": a key no other test uses.
  static std::string Key(const std::string& what);
};

}  // namespace cfx::test

#endif  // CONFLUX_TESTS_TRANSPORT_MPI_WORLD_H_
