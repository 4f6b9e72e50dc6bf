// MpiTransport: joining the job, sends, and handing receives to the progress thread.
#include "mpi_transport.h"

#include <unistd.h>

#include <climits>
#include <cstring>
#include <mutex>

#include "wire.h"

namespace cfx::mpi {
namespace {

std::mutex live_mu;
MpiTransport* live = nullptr;  // guarded by live_mu

sdk::Status TransportPrecondition(std::string message) {
  return sdk::Status(CFX_FAILED_PRECONDITION, "mpi transport: " + std::move(message));
}

// Where one rank runs, as exchanged at start-up.
struct Place {
  char host[MPI_MAX_PROCESSOR_NAME];
  int64_t pid;
};

}  // namespace

sdk::Result<MpiTransport::Options> MpiTransport::ParseOptions(const sdk::TransportConfig& config) {
  Options o;
  for (const auto& [key, value] : config.options) {
    if (key != "chunk_bytes" && key != "inline_bytes" && key != "funnel" &&
        key != "shutdown_timeout_ms" && key != "collectives" && key != "shared_memory" &&
        key != "shared_memory_ranks_per_host" && key != "staging_bytes")
      return sdk::InvalidArgument("mpi transport: unknown option '", key,
                                  "' (known: chunk_bytes, inline_bytes, funnel, "
                                  "shutdown_timeout_ms, collectives, shared_memory, "
                                  "shared_memory_ranks_per_host, staging_bytes)");
  }
  CFX_SDK_ASSIGN_OR_RETURN(int64_t chunk, config.IntOption("chunk_bytes", o.chunk_bytes));
  if (chunk < 1 || chunk > INT_MAX)
    return sdk::InvalidArgument("mpi transport: chunk_bytes must be 1 to ", INT_MAX,
                                " (MPI counts are int), not ", chunk);
  o.chunk_bytes = static_cast<uint64_t>(chunk);
  CFX_SDK_ASSIGN_OR_RETURN(int64_t carried, config.IntOption("inline_bytes", o.inline_bytes));
  if (carried > (int64_t{1} << 20))
    return sdk::InvalidArgument("mpi transport: inline_bytes must be at most 1M, not ", carried);
  o.inline_bytes = static_cast<uint64_t>(carried);
  const std::string funnel = config.Option("funnel", "false");
  if (funnel != "true" && funnel != "false")
    return sdk::InvalidArgument("mpi transport: funnel must be true or false, not '", funnel, "'");
  o.funnel = funnel == "true";
  const std::string collectives =
      config.Option("collectives", config.blocking_collectives ? "caller" : "thread");
  if (collectives != "caller" && collectives != "thread" && collectives != "progress")
    return sdk::InvalidArgument(
        "mpi transport: collectives must be caller, thread or progress, not '", collectives, "'");
  if (collectives == "caller" && !config.blocking_collectives)
    return sdk::InvalidArgument(
        "mpi transport: collectives: caller blocks the calling thread until every member joins, "
        "which only between-graph replication allows (cluster.replication: between-graph); "
        "use thread or progress");
  o.collectives = collectives == "caller"   ? Options::Collectives::kCaller
                  : collectives == "thread" ? Options::Collectives::kThread
                                            : Options::Collectives::kProgress;
  const std::string shared = config.Option("shared_memory", "auto");
  if (shared != "auto" && shared != "on" && shared != "off")
    return sdk::InvalidArgument("mpi transport: shared_memory must be auto, on or off, not '",
                                shared, "'");
  if (shared == "on" && (o.funnel || o.collectives == Options::Collectives::kProgress))
    return sdk::InvalidArgument(
        "mpi transport: shared_memory: on needs blocking collectives (collectives: caller or "
        "thread, funnel: false): the progress thread must not wait for the other ranks");
  o.shared_memory = shared == "on"    ? Options::SharedMemory::kOn
                    : shared == "off" ? Options::SharedMemory::kOff
                                      : Options::SharedMemory::kAuto;
  CFX_SDK_ASSIGN_OR_RETURN(int64_t per_host, config.IntOption("shared_memory_ranks_per_host", 0));
  if (per_host < 0 || per_host > INT_MAX)
    return sdk::InvalidArgument(
        "mpi transport: shared_memory_ranks_per_host must be 0 (ask MPI) to ", INT_MAX,
        " ranks, not ", per_host);
  o.shared_memory_ranks_per_host = static_cast<int>(per_host);
  CFX_SDK_ASSIGN_OR_RETURN(
      int64_t staging, config.IntOption("staging_bytes", static_cast<int64_t>(o.staging_bytes)));
  if (staging < 0 || staging > (int64_t{1} << 40))
    return sdk::InvalidArgument("mpi transport: staging_bytes must be 0 (off) to 1T, not ",
                                staging);
  o.staging_bytes = static_cast<uint64_t>(staging);
  CFX_SDK_ASSIGN_OR_RETURN(int64_t timeout,
                           config.IntOption("shutdown_timeout_ms", o.shutdown_timeout.count()));
  o.shutdown_timeout = std::chrono::milliseconds(timeout);
  return o;
}

sdk::Result<std::unique_ptr<MpiTransport>> MpiTransport::Create(
    const sdk::TransportConfig& config) {
  CFX_SDK_ASSIGN_OR_RETURN(Options options, ParseOptions(config));
  std::lock_guard<std::mutex> lock(live_mu);
  if (live != nullptr)
    return TransportPrecondition("this process has an mpi transport already (one per process)");
  auto t = std::make_unique<MpiTransport>(options);
  t->e_.chunk_bytes = options.chunk_bytes;
  t->e_.engine.SetPoller([r = &t->receiver_] { return r->Poll(); },
                         [r = &t->receiver_] { return r->Awaiting(); });
  CFX_SDK_RETURN_IF_ERROR(t->e_.engine.Start([raw = t.get()] { return raw->Init(); }));
  t->running_ = true;
  live = t.get();
  return t;
}

sdk::Status MpiTransport::Init() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return TransportPrecondition(
        "MPI was finalized in this process, and MPI starts once per process: create the mpi "
        "transport once");
  int provided = MPI_THREAD_SINGLE;
  int rc;
  if (!initialized) {
    rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) return MpiError("MPI_Init_thread", rc, "(started by mpirun?)");
    owns_mpi_ = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else {
    MPI_Query_thread(&provided);
    // Every call comes from the progress thread then, which is not the thread that initialized.
    if (provided < MPI_THREAD_SERIALIZED)
      return TransportPrecondition(
          "the program initialized MPI with a thread level below MPI_THREAD_SERIALIZED; "
          "initialize it with MPI_Init_thread(MPI_THREAD_MULTIPLE), or let the transport do it");
  }
  direct_ = provided == MPI_THREAD_MULTIPLE && !options_.funnel;
  rc = MPI_Comm_dup(MPI_COMM_WORLD, &e_.comm);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Comm_dup", rc, "of MPI_COMM_WORLD");
  MPI_Comm_set_errhandler(e_.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(e_.comm, &e_.rank);
  MPI_Comm_size(e_.comm, &e_.size);
  int* tag_ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
  if (found && tag_ub != nullptr) e_.tag_ub = *tag_ub;
  e_.names.Resize(e_.size);
  tags_ = std::make_unique<std::atomic<uint32_t>[]>(e_.size);

  Place mine{};
  int length = 0;
  MPI_Get_processor_name(mine.host, &length);
  mine.pid = static_cast<int64_t>(getpid());
  std::vector<Place> all(e_.size);
  rc = MPI_Allgather(&mine, sizeof(Place), MPI_BYTE, all.data(), sizeof(Place), MPI_BYTE, e_.comm);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Allgather", rc, "of the ranks' hosts");
  for (const Place& p : all)
    places_.push_back(sdk::StrCat("host ", std::string(p.host, strnlen(p.host, sizeof(p.host))),
                                  ", pid ", p.pid));
  const uint64_t staging_bytes =
      options_.shared_memory == Options::SharedMemory::kOff ? 0 : options_.staging_bytes;
  std::vector<std::string> problems;
  staging_ =
      StagingArea::Create(e_.comm, options_.shared_memory_ranks_per_host, staging_bytes, &problems);
  for (const std::string& p : problems) {
    const std::string warning =
        sdk::StrCat("mpi transport: payloads to some ranks of this host go through MPI: ", p);
    sdk::Host().core->log(CFX_LOG_WARNING, warning.c_str());
  }
  e_.staging = staging_.get();
  return sdk::Status();
}

MpiTransport::~MpiTransport() {
  if (!running_) return;
  e_.engine.Post([this] { receiver_.Shutdown(); });
  e_.engine.Stop(options_.shutdown_timeout, [this] {
    MPI_Comm_free(&e_.comm);
    if (owns_mpi_) MPI_Finalize();
  });
  e_.staging = nullptr;
  staging_.reset();
  std::lock_guard<std::mutex> lock(live_mu);
  if (live == this) live = nullptr;
}

MpiTransport* MpiTransport::Live() {
  std::lock_guard<std::mutex> lock(live_mu);
  return live;
}

std::string MpiTransport::DescribePeer(int32_t rank) const {
  if (rank < 0 || rank >= static_cast<int32_t>(places_.size()))
    return sdk::StrCat("rank ", rank, " (not in this job of ", e_.size, ")");
  return places_[rank];
}

int32_t MpiTransport::NextTag(int peer) {
  const uint32_t n = tags_[peer].fetch_add(1, std::memory_order_relaxed);
  return 1 + static_cast<int32_t>(n % static_cast<uint32_t>(e_.tag_ub));
}

cfx_transport_request MpiTransport::Send(int32_t peer, std::string_view key, std::string_view meta,
                                         const void* payload, uint64_t payload_bytes,
                                         sdk::TransportDone done) {
  if (peer < 0 || peer >= e_.size) {
    done(sdk::InvalidArgument("mpi transport: send to rank ", peer, ", not in this job of ",
                              e_.size, " (key '", PrintableKey(key), "')"));
    return 0;
  }
  if (key.size() + meta.size() > INT_MAX / 2) {
    done(sdk::InvalidArgument("mpi transport: key and metadata of ", key.size() + meta.size(),
                              " bytes are too large (key '", PrintableKey(key), "')"));
    return 0;
  }
  // A small payload travels inside the header (tag 0), a larger one to a rank of this host
  // through the staging segment (copied here, on the caller's thread), otherwise on a tag of
  // its own.
  const char* bytes = static_cast<const char*>(payload);
  int32_t tag = 0;
  int64_t staged = -1;
  if (payload_bytes > options_.inline_bytes) {
    if (staging_ != nullptr) staged = staging_->Stage(peer, bytes, payload_bytes);
    tag = staged >= 0 ? kStagedTag : NextTag(peer);
  }
  auto header = std::make_shared<const std::string>(
      EncodeHeader(key, meta, bytes, payload_bytes, e_.chunk_bytes, tag, staged));
  const Payload out{bytes, payload_bytes, tag, staged};
  if (direct_) {
    PostSend(peer, std::move(header), std::string(key), out, done);
  } else {
    e_.engine.Post([this, peer, header, key = std::string(key), out, done]() mutable {
      PostSend(peer, std::move(header), std::move(key), out, done);
    });
  }
  return next_id_.fetch_add(1, std::memory_order_relaxed);
}

void MpiTransport::PostSend(int peer, std::shared_ptr<const std::string> header, std::string key,
                            const Payload& payload, sdk::TransportDone done) {
  std::vector<MPI_Request> requests;
  sdk::Status error;
  MPI_Request request;
  int rc = MPI_Isend(header->data(), static_cast<int>(header->size()), MPI_BYTE, peer, kHeaderTag,
                     e_.comm, &request);
  if (rc != MPI_SUCCESS) {
    error = MpiError("MPI_Isend (header)", rc, e_.Where("to", peer, key));
    if (payload.staged >= 0) staging_->Unstage(payload.staged);  // nobody will take it
  } else {
    requests.push_back(request);
    // Chunks on the payload's tag (none when it is inline or staged).
    for (uint64_t sent = 0; payload.tag > 0 && sent < payload.bytes; sent += e_.chunk_bytes) {
      const uint64_t n = std::min(e_.chunk_bytes, payload.bytes - sent);
      rc = MPI_Isend(payload.data + sent, static_cast<int>(n), MPI_BYTE, peer, payload.tag, e_.comm,
                     &request);
      if (rc != MPI_SUCCESS) {
        error = MpiError("MPI_Isend", rc, e_.Where("to", peer, key));
        break;
      }
      requests.push_back(request);
    }
  }
  e_.engine.TrackAll(
      std::move(requests), std::move(error),
      [this, peer, key](int code) {
        return MpiError("MPI_Isend", code, e_.Where("to", peer, key));
      },
      [header, done](sdk::Status s) { done(s); });  // `header` lives until its send completed
}

cfx_transport_request MpiTransport::Recv(int32_t peer, std::string_view key,
                                         sdk::TransportAlloc alloc, sdk::TransportDone done) {
  if (peer < 0 || peer >= e_.size) {
    done(sdk::InvalidArgument("mpi transport: receive from rank ", peer, ", not in this job of ",
                              e_.size, " (key '", PrintableKey(key), "')"));
    return 0;
  }
  auto* r = new Receive;
  r->id = next_id_.fetch_add(1, std::memory_order_relaxed);
  r->peer = peer;
  r->key = std::string(key);
  r->alloc = alloc;
  r->done = done;
  const uint64_t id = r->id;
  e_.engine.Post([this, r] { receiver_.Post(std::unique_ptr<Receive>(r)); });
  return id;
}

void MpiTransport::Cancel(cfx_transport_request request) {
  e_.engine.Post([this, request] { receiver_.Cancel(request); });
}

void MpiTransport::AbortPrefix(std::string_view prefix, const sdk::Status& why) {
  e_.engine.Post([this, prefix = std::string(prefix), why] { receiver_.AbortPrefix(prefix, why); });
}

}  // namespace cfx::mpi
