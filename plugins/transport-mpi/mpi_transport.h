// MpiTransport: the "mpi" transport (conflux/plugin_transport.h over MPI point-to-point).
//
// Create joins the job (MPI_Init_thread asking for MPI_THREAD_MULTIPLE, unless the program has
// initialized MPI already), duplicates MPI_COMM_WORLD with MPI_ERRORS_RETURN, learns where
// every rank runs (MPI_Get_processor_name and pid, MPI_Allgather) and sets up the staging
// segments of its host (staging.h). A send posts its header and its payload's chunks with
// MPI_Isend straight from the caller's buffer, or for a small payload one header that carries
// it, or for a larger one to a rank of the same host one header after copying the payload into
// the staging segment (see wire.h); the receiving side is Receiver. With MPI_THREAD_MULTIPLE
// the caller's thread posts its sends; with less, or with the option funnel: true, every MPI call
// runs on the progress thread. Callbacks run on the progress thread (or inline, for a send that
// fails at once).
//
// Options: chunk_bytes (payload chunk, default 64M, at most 2^31 - 1 since MPI counts are int),
// inline_bytes (payloads up to this size travel inside the header, copied: default 4096, at most
// 1M), funnel (true/false), shutdown_timeout_ms (how long destroy waits for messages in flight,
// default 10000), collectives (caller: blocking MPI collectives on the calling thread, the
// default when the host allows collectives to block their caller, under between-graph
// replication; thread: blocking MPI collectives on a thread of their own, the default otherwise;
// progress: non-blocking ones advanced by the progress thread; both blocking modes need
// MPI_THREAD_MULTIPLE, without which, and in funnel mode, collectives are always progress),
// shared_memory (auto: the blocking collectives' all-reduce over every rank goes through shared
// memory within each host, and through MPI between hosts when there are several with the same
// number of ranks each, shared_memory.h; on: the same, and creating the collectives fails when it
// cannot; off: MPI_Allreduce always), shared_memory_ranks_per_host (0, the default: MPI says
// which ranks share a host; N: every N consecutive ranks count as one host, which runs the
// all-reduce between hosts on one machine, and staging only within each such "host"),
// staging_bytes (this rank's staging segment, default 32M; 0, or shared_memory: off, sends every
// payload through MPI).
//
// A process has at most one: MPI is initialized once per process, and finalized by destroy when
// the transport initialized it. A send cannot be taken back once posted: Cancel ends only
// receives (a cancelled send's done runs when MPI is done with its buffer).
//
// Thread-safe: every member may be called from any thread.
#ifndef CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_TRANSPORT_H_
#define CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_TRANSPORT_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "conflux/sdk/transport.h"
#include "endpoint.h"
#include "receiver.h"

namespace cfx::mpi {

class MpiTransport final : public sdk::Transport {
 public:
  struct Options {
    uint64_t chunk_bytes = uint64_t{64} << 20;
    uint64_t inline_bytes = 4096;
    bool funnel = false;
    enum class Collectives { kCaller, kThread, kProgress };
    Collectives collectives = Collectives::kThread;
    enum class SharedMemory { kAuto, kOn, kOff };
    SharedMemory shared_memory = SharedMemory::kAuto;
    int shared_memory_ranks_per_host = 0;
    uint64_t staging_bytes = uint64_t{32} << 20;
    std::chrono::milliseconds shutdown_timeout{10000};
  };
  static sdk::Result<Options> ParseOptions(const sdk::TransportConfig& config);

  // FAILED_PRECONDITION when this process has a live mpi transport or MPI was finalized.
  static sdk::Result<std::unique_ptr<MpiTransport>> Create(const sdk::TransportConfig& config);
  // Completes what is in flight (up to shutdown_timeout), fails posted receives with CANCELLED,
  // then finalizes MPI if the transport initialized it. Every collectives object made over
  // this transport must be destroyed first.
  ~MpiTransport() override;

  int32_t Rank() const override { return e_.rank; }
  int32_t Size() const override { return e_.size; }
  void SetPeerName(int32_t rank, const std::string& name) override { e_.names.Set(rank, name); }
  std::string DescribePeer(int32_t rank) const override;
  cfx_transport_request Send(int32_t peer, std::string_view key, std::string_view meta,
                             const void* payload, uint64_t payload_bytes,
                             sdk::TransportDone done) override;
  cfx_transport_request Recv(int32_t peer, std::string_view key, sdk::TransportAlloc alloc,
                             sdk::TransportDone done) override;
  void Cancel(cfx_transport_request request) override;
  void AbortPrefix(std::string_view prefix, const sdk::Status& why) override;

  // The live transport of this process, or nullptr: what the collectives run over.
  static MpiTransport* Live();
  Endpoint& endpoint() { return e_; }
  // Collectives run as blocking calls (MPI_THREAD_MULTIPLE, not funnel, option collectives:
  // caller or thread): on the calling thread, or on a thread of their own.
  bool collectives_block() const {
    return direct_ && options_.collectives != Options::Collectives::kProgress;
  }
  bool collectives_on_caller() const {
    return direct_ && options_.collectives == Options::Collectives::kCaller;
  }
  Options::SharedMemory shared_memory() const { return options_.shared_memory; }
  int shared_memory_ranks_per_host() const { return options_.shared_memory_ranks_per_host; }

  explicit MpiTransport(Options options) : options_(options), receiver_(&e_) {}

 private:
  // On the progress thread, before anything else.
  sdk::Status Init();
  // What a send carries: its bytes, its payload tag (0: inline, kStagedTag: staged, otherwise
  // the chunks' tag) and where it was staged.
  struct Payload {
    const char* data;
    uint64_t bytes;
    int32_t tag;
    int64_t staged;
  };
  // Posts the header and the payload's chunks of a send and tracks them.
  void PostSend(int peer, std::shared_ptr<const std::string> header, std::string key,
                const Payload& payload, sdk::TransportDone done);
  int32_t NextTag(int peer);

  const Options options_;
  Endpoint e_;
  Receiver receiver_;
  bool running_ = false;  // Init succeeded: destroy has a thread to stop
  bool owns_mpi_ = false;
  bool direct_ = false;                            // sends posted by the caller's thread
  std::vector<std::string> places_;                // "host node3, pid 4711" by rank
  std::unique_ptr<std::atomic<uint32_t>[]> tags_;  // the next payload tag, by peer
  std::unique_ptr<StagingArea> staging_;           // made by Init
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace cfx::mpi

#endif  // CONFLUX_PLUGINS_TRANSPORT_MPI_MPI_TRANSPORT_H_
