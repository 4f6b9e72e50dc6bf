// StagingArea: payloads between ranks of one host through shared memory instead of MPI.
//
// Why: Open MPI moves a large message between processes of one host with CMA
// (process_vm_readv, which pins the sender's pages one by one) or through 32 KiB fragments; on a
// 2-core virtual machine either ran at 1.7 to 2 GB/s for 1 MiB (bench/transport_pingpong), where
// a plain memcpy between two processes' shared pages runs at 14 to 40 GB/s. So a payload to a
// rank of the same host is copied into the sender's segment, its header (wire.h) says where, and
// the receiver copies it out into the buffer its alloc gave and marks the block free: two copies
// at memory speed, and the sender's buffer is free as soon as the first is done.
//
// Each rank owns one segment (POSIX shared memory of `bytes`, transport option staging_bytes, at
// most a quarter of /dev/shm's free space divided among the host's ranks, and none below 1 MiB;
// unlinked once the host's ranks have mapped it, so nothing is left behind however the job
// ends): a flag per 4 KiB unit, then the units. The sender alone allocates (first fit over its
// free runs); the receiver frees a block by setting its first unit's flag (release), which the
// sender reads (acquire) before it reuses the block, at its next allocation. A payload that finds
// no room (receivers that fall behind), one larger than a quarter of the segment (MPI's single
// copy was as fast from 16 MiB up), a peer on another host, or a pair where either side could
// not map the other's segment, goes through MPI as before.
//
// Thread-safe: Stage and Unstage from any thread (one mutex); Take and Release from the progress
// thread (or any one thread at a time per block).
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_STAGING_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_STAGING_H_

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conflux/sdk/status.h"

namespace cfx::mpi {

class StagingArea {
 public:
  // Collective over `comm` (every rank calls it once, with the same `comm`): makes this rank's
  // segment of `bytes` (0: none, and this rank stages nothing), maps those of the other ranks of
  // its host (SplitByHost with `ranks_per_host`, as the all-reduce's hosts), and learns which of
  // them mapped its own. Never fails the transport: a segment that cannot be made or mapped only
  // leaves its pairs to MPI, and `problems` gets why (for the log).
  static std::unique_ptr<StagingArea> Create(MPI_Comm comm, int ranks_per_host, uint64_t bytes,
                                             std::vector<std::string>* problems);
  ~StagingArea();
  StagingArea(const StagingArea&) = delete;
  StagingArea& operator=(const StagingArea&) = delete;

  // Copies `bytes` of `data` into this rank's segment for `peer`: the block's offset, or -1
  // when the payload goes through MPI (no shared segment with `peer`, or no room now).
  int64_t Stage(int peer, const void* data, uint64_t bytes);
  // Frees a block that Stage gave and that will not be taken (its header could not be sent).
  void Unstage(int64_t offset);
  // The receiving side: copies `bytes` at `offset` of `source`'s segment into `out`, then frees
  // the block. INTERNAL (the block is left alone) when this rank has not mapped `source`'s
  // segment or the block lies outside it: a header that no StagingArea of this job wrote.
  sdk::Status Take(int source, int64_t offset, uint64_t bytes, void* out);
  // Frees `source`'s block at `offset` without reading it (a dropped message).
  void Release(int source, int64_t offset);

  // Whether payloads to `peer` go through shared memory when there is room.
  bool Shares(int peer) const { return can_stage_[peer] != 0; }
  // The bytes of this rank's segment in blocks not yet freed by their receivers (outstanding as
  // of the last Stage, which reclaims); for tests and benchmarks.
  uint64_t TEST_BytesInUse();

  static constexpr uint64_t kUnit = 4096;
  // Segments smaller than this (after the /dev/shm cap below) are not made.
  static constexpr uint64_t kMinBytes = uint64_t{1} << 20;

 private:
  StagingArea() = default;
  struct Segment {
    char* base = nullptr;  // the flags, then the units
    uint64_t units = 0;
    uint64_t mapped = 0;
    std::atomic<uint32_t>* flags() const { return reinterpret_cast<std::atomic<uint32_t>*>(base); }
    char* data() const;
  };
  static uint64_t FlagBytes(uint64_t units);
  // `source`'s segment when this rank mapped it, else null.
  const Segment* Mapped(int source) const;
  // Frees the blocks whose receivers are done with them; with mu_ held.
  void Reclaim();
  void Free(uint64_t unit, uint64_t units);  // with mu_ held

  Segment own_;
  std::vector<Segment> peers_;   // by rank: mapped for the host's other ranks
  std::vector<char> can_stage_;  // by rank: the peer mapped this rank's segment
  std::mutex mu_;
  std::map<uint64_t, uint64_t> free_;         // first unit -> units; guarded by mu_
  std::map<uint64_t, uint64_t> outstanding_;  // first unit -> units; guarded by mu_
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_STAGING_H_
