// MpiCollectives: all-reduce, all-gather and broadcast issued by the progress thread.
#include "mpi_collectives.h"

#include <pthread.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <span>

#include "conflux/sdk/tensor.h"
#include "mpi_transport.h"

namespace cfx::mpi {
namespace {

// Elements (all-reduce) or bytes (broadcast) per MPI call: well inside an int.
constexpr uint64_t kMaxPiece = uint64_t{1} << 30;
constexpr uint64_t kFingerprint = 0x31304950'4D584643;  // "CFXMPI01"

sdk::Status CollectivesPrecondition(std::string message) {
  return sdk::Status(CFX_FAILED_PRECONDITION, "mpi collectives: " + std::move(message));
}

// A datatype of exactly `bytes` bytes, for a block past what an int counts: 1 MiB units and
// the rest, with its extent set to `bytes` so that blocks lie end to end.
int BlockType(uint64_t bytes, MPI_Datatype* type) {
  constexpr uint64_t kUnit = uint64_t{1} << 20;
  MPI_Datatype unit, block;
  int rc = MPI_Type_contiguous(static_cast<int>(kUnit), MPI_BYTE, &unit);
  if (rc != MPI_SUCCESS) return rc;
  int lengths[2] = {static_cast<int>(bytes / kUnit), static_cast<int>(bytes % kUnit)};
  MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(bytes / kUnit * kUnit)};
  MPI_Datatype types[2] = {unit, MPI_BYTE};
  rc = MPI_Type_create_struct(2, lengths, offsets, types, &block);
  MPI_Type_free(&unit);
  if (rc != MPI_SUCCESS) return rc;
  rc = MPI_Type_create_resized(block, 0, static_cast<MPI_Aint>(bytes), type);
  MPI_Type_free(&block);
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Type_commit(type);
}

// The same tag on every member for the same group (MPI_Comm_create_group's tag).
int GroupTag(std::span<const int32_t> ranks, int tag_ub) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (int32_t r : ranks) h = (h ^ static_cast<uint32_t>(r)) * 1099511628211ull;
  return static_cast<int>(h % static_cast<uint64_t>(tag_ub));
}

// Where `rank` is in `ranks` (empty = every rank), or -1.
int IndexIn(std::span<const int32_t> ranks, int32_t rank) {
  if (ranks.empty()) return rank;
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  return it != ranks.end() && *it == rank ? static_cast<int>(it - ranks.begin()) : -1;
}

}  // namespace

CollectiveLane::CollectiveLane() {
  thread_ = std::thread([state = state_] {
    pthread_setname_np(pthread_self(), "cfx-mpi-collect");
    std::unique_lock<std::mutex> lock(state->mu);
    for (;;) {
      state->cv.wait(lock, [&] { return state->stopping || !state->work.empty(); });
      if (state->stopping) break;
      Work work = std::move(state->work.front());
      state->work.pop_front();
      lock.unlock();
      work(true);
      lock.lock();
    }
    state->ended = true;
    state->cv.notify_all();
  });
}

CollectiveLane::~CollectiveLane() {
  if (!stopped_) Stop(std::chrono::milliseconds(0));
}

void CollectiveLane::Post(Work work) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->stopping) {
      state_->work.push_back(std::move(work));
      state_->cv.notify_all();
      return;
    }
  }
  work(false);
}

bool CollectiveLane::Stop(std::chrono::milliseconds limit) {
  stopped_ = true;
  std::deque<Work> left;
  bool ended;
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->stopping = true;
    left.swap(state_->work);
    state_->cv.notify_all();
    ended = state_->cv.wait_for(lock, limit, [&] { return state_->ended; });
  }
  for (Work& w : left) w(false);
  if (ended) {
    thread_.join();
  } else {
    thread_.detach();
  }
  return ended;
}

sdk::Result<std::unique_ptr<MpiCollectives>> MpiCollectives::Create(const sdk::HostGroup& group) {
  MpiTransport* transport = MpiTransport::Live();
  if (transport == nullptr)
    return CollectivesPrecondition("there is no mpi transport in this process to run over");
  Endpoint* e = &transport->endpoint();
  if (group.Size() != e->size || group.Rank() != e->rank)
    return CollectivesPrecondition("the host's process group is not the mpi transport's");
  uint64_t fingerprint[2] = {kFingerprint, static_cast<uint64_t>(e->size)};
  CFX_SDK_RETURN_IF_ERROR(group.Broadcast(fingerprint, sizeof(fingerprint), 0));
  if (fingerprint[0] != kFingerprint || fingerprint[1] != static_cast<uint64_t>(e->size))
    return CollectivesPrecondition(
        sdk::StrCat("rank 0 runs other collectives or another job size (", fingerprint[1],
                    " ranks, this rank sees ", e->size, ")"));
  auto c = std::make_unique<MpiCollectives>(e);
  const bool block = transport->collectives_block();
  const MpiTransport::Options::SharedMemory shared = transport->shared_memory();
  if (shared == MpiTransport::Options::SharedMemory::kOn && !block)
    return CollectivesPrecondition(
        "shared_memory: on needs blocking collectives, and MPI gave less than "
        "MPI_THREAD_MULTIPLE (or funnel is on)");
  const int per_host = transport->shared_memory_ranks_per_host();
  CFX_SDK_RETURN_IF_ERROR(e->engine.Call([&c, e, block, shared, per_host] {
    const int rc = MPI_Comm_dup(e->comm, &c->comm_);
    if (rc != MPI_SUCCESS) return MpiError("MPI_Comm_dup", rc, "for the collectives");
    MPI_Comm_set_errhandler(c->comm_, MPI_ERRORS_RETURN);
    CFX_SDK_RETURN_IF_ERROR(c->ops_.Create());
    if (!block || shared == MpiTransport::Options::SharedMemory::kOff) return sdk::Status();
    std::string why;
    c->shm_ = SharedMemoryAllReduce::Create(c->comm_, &e->names, per_host, &why);
    if (c->shm_ == nullptr && shared == MpiTransport::Options::SharedMemory::kOn)
      return CollectivesPrecondition("shared_memory: on, but no shared-memory all-reduce: " + why);
    return sdk::Status();
  }));
  c->on_caller_ = transport->collectives_on_caller();
  if (block && !c->on_caller_) c->lane_ = std::make_unique<CollectiveLane>();
  return c;
}

MpiCollectives::~MpiCollectives() {
  // A shared-memory all-reduce waiting for a rank that will not come returns now.
  if (shm_ != nullptr) shm_->Stop();
  // A collective that a dead peer left blocked keeps its communicator: the process is ending
  // (the transport aborts the job when MPI cannot finalize).
  if (lane_ != nullptr && !lane_->Stop(std::chrono::milliseconds(1000))) return;
  std::unique_lock<std::timed_mutex> caller(caller_mu_, std::defer_lock);
  if (on_caller_ && !caller.try_lock_for(std::chrono::milliseconds(1000))) return;
  (void)e_->engine.Call([this] {
    for (auto& [ranks, comm] : groups_) MPI_Comm_free(&comm);
    if (shm_ != nullptr) shm_->FreeComms();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    ops_.Free();
    return sdk::Status();
  });
}

sdk::Status MpiCollectives::CheckGroup(Ranks ranks) const {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= e_->size || (i > 0 && ranks[i] <= ranks[i - 1]))
      return sdk::InvalidArgument("mpi collectives ", Describe(ranks),
                                  ": ranks must be ascending ranks of this job of ", e_->size);
  }
  if (IndexIn(ranks, e_->rank) < 0)
    return sdk::InvalidArgument("mpi collectives ", Describe(ranks), ": rank ", e_->rank,
                                " is not a member");
  return sdk::Status();
}

std::string MpiCollectives::Describe(Ranks ranks) const {
  if (ranks.empty()) return sdk::StrCat("over all ", e_->size, " ranks");
  std::string list;
  for (int32_t r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
  return "over ranks [" + list + "]";
}

sdk::Result<MPI_Comm> MpiCollectives::CommOf(Ranks ranks) {
  if (ranks.empty() || static_cast<int>(ranks.size()) == e_->size) return comm_;
  std::vector<int32_t> key(ranks.begin(), ranks.end());
  auto cached = groups_.find(key);
  if (cached != groups_.end()) return cached->second;
  MPI_Group all, members;
  MPI_Comm_group(comm_, &all);
  MPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &members);
  MPI_Comm comm;
  const int rc = MPI_Comm_create_group(comm_, members, GroupTag(ranks, e_->tag_ub), &comm);
  MPI_Group_free(&members);
  MPI_Group_free(&all);
  if (rc != MPI_SUCCESS) return MpiError("MPI_Comm_create_group", rc, Describe(ranks));
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  groups_[std::move(key)] = comm;
  return comm;
}

template <typename RunFn>
sdk::Status MpiCollectives::RunBlocking(const char* call, Ranks ranks, const RunFn& run) {
  sdk::Result<MPI_Comm> comm = CommOf(ranks);
  if (!comm.ok()) return comm.status();
  e_->engine.EnterBlockingCall();
  const int rc = run(comm.value(), nullptr);
  e_->engine.LeaveBlockingCall();
  return rc == MPI_SUCCESS ? sdk::Status() : MpiError(call, rc, Describe(ranks));
}

template <typename Fn, typename ThenFn>
void MpiCollectives::InOrder(const char* call, Ranks ranks, Fn fn, ThenFn then) {
  if (on_caller_) {
    // One collective at a time, in the order callers take the lock; `then` runs after it is
    // released, since it may issue the next collective.
    sdk::Status outcome;
    {
      std::lock_guard<std::timed_mutex> lock(caller_mu_);
      outcome = fn(ranks);
    }
    return then(outcome);
  }
  lane_->Post([this, call, ranks = std::vector<int32_t>(ranks.begin(), ranks.end()),
               fn = std::move(fn), then = std::move(then)](bool go) {
    if (!go)
      return then(sdk::Status(
          CFX_CANCELLED,
          sdk::StrCat("mpi collectives: ", call, " ", Describe(ranks), " abandoned at shutdown")));
    then(fn(ranks));
  });
}

template <typename RunFn, typename ThenFn>
void MpiCollectives::Issue(const char* call, Ranks ranks, RunFn run, ThenFn then) {
  if (on_caller_ || lane_ != nullptr)
    return InOrder(
        call, ranks,
        [this, call, run = std::move(run)](Ranks r) { return RunBlocking(call, r, run); },
        std::move(then));
  e_->engine.Post([this, call, ranks = std::vector<int32_t>(ranks.begin(), ranks.end()),
                   run = std::move(run), then = std::move(then)]() mutable {
    sdk::Result<MPI_Comm> comm = CommOf(ranks);
    if (!comm.ok()) return then(comm.status());
    std::vector<MPI_Request> requests;
    const int rc = run(comm.value(), &requests);
    sdk::Status error = rc == MPI_SUCCESS ? sdk::Status() : MpiError(call, rc, Describe(ranks));
    e_->engine.TrackAll(
        std::move(requests), std::move(error),
        [this, call, ranks](int code) { return MpiError(call, code, Describe(ranks)); },
        std::move(then), /*spin=*/true);
  });
}

void MpiCollectives::AllReduce(Ranks ranks, cfx_dtype dtype, const void* input, void* output,
                               uint64_t count, cfx_reduce_op op, cfx_stream*,
                               sdk::TransportDone done) {
  sdk::Result<Reduction> how = ops_.For(dtype, op);
  if (!how.ok()) return done(how.status());
  if (sdk::Status s = CheckGroup(ranks); !s.ok()) return done(s);
  const Reduction reduction = how.value();
  const size_t size = sdk::DTypeSize(dtype);
  const int members = ranks.empty() ? e_->size : static_cast<int>(ranks.size());
  if (shm_ != nullptr && members == e_->size && SharedMemoryAllReduce::Handles(dtype, op)) {
    return InOrder(
        "shared-memory all-reduce", ranks,
        [=, this](Ranks) {
          e_->engine.EnterBlockingCall();
          sdk::Status s = shm_->AllReduce(dtype, input, output, count, op, reduction);
          e_->engine.LeaveBlockingCall();
          return s;
        },
        std::move(done));
  }
  Issue(
      "MPI_Allreduce", ranks,
      [=](MPI_Comm comm, std::vector<MPI_Request>* requests) {
        for (uint64_t start = 0; start < count; start += kMaxPiece) {
          char* out = static_cast<char*>(output) + start * size;
          const void* in =
              input == output ? MPI_IN_PLACE : static_cast<const char*>(input) + start * size;
          const int n = static_cast<int>(std::min(kMaxPiece, count - start));
          if (requests == nullptr) {
            const int rc = MPI_Allreduce(in, out, n, reduction.type, reduction.op, comm);
            if (rc != MPI_SUCCESS) return rc;
            continue;
          }
          MPI_Request request;
          const int rc = MPI_Iallreduce(in, out, n, reduction.type, reduction.op, comm, &request);
          if (rc != MPI_SUCCESS) return rc;
          requests->push_back(request);
        }
        return MPI_SUCCESS;
      },
      [=, done = std::move(done)](sdk::Status s) {
        if (s.ok() && op == CFX_REDUCE_MEAN) DivideBy(dtype, output, count, members);
        done(s);
      });
}

void MpiCollectives::AllGather(Ranks ranks, cfx_dtype dtype, const void* input, uint64_t count,
                               void* output, cfx_stream*, sdk::TransportDone done) {
  const size_t size = sdk::DTypeSize(dtype);
  if (size == 0)
    return done(sdk::Unimplemented("mpi collectives: no all-gather of ", sdk::DTypeName(dtype)));
  if (sdk::Status s = CheckGroup(ranks); !s.ok()) return done(s);
  const uint64_t bytes = count * size;
  const int index = IndexIn(ranks, e_->rank);
  // A derived type past INT_MAX bytes, freed when done.
  auto block = std::make_shared<MPI_Datatype>(MPI_BYTE);
  Issue(
      "MPI_Allgather", ranks,
      [=](MPI_Comm comm, std::vector<MPI_Request>* requests) {
        if (bytes == 0) return MPI_SUCCESS;
        int n = static_cast<int>(bytes);
        if (bytes > static_cast<uint64_t>(INT_MAX)) {
          if (const int rc = BlockType(bytes, block.get()); rc != MPI_SUCCESS) return rc;
          n = 1;
        }
        const void* in =
            input == static_cast<char*>(output) + index * bytes ? MPI_IN_PLACE : input;
        if (requests == nullptr) return MPI_Allgather(in, n, *block, output, n, *block, comm);
        MPI_Request request;
        const int rc = MPI_Iallgather(in, n, *block, output, n, *block, comm, &request);
        if (rc == MPI_SUCCESS) requests->push_back(request);
        return rc;
      },
      [block, done = std::move(done)](sdk::Status s) {
        if (*block != MPI_BYTE) MPI_Type_free(block.get());
        done(s);
      });
}

void MpiCollectives::Broadcast(Ranks ranks, cfx_dtype dtype, void* buffer, uint64_t count,
                               int32_t root, cfx_stream*, sdk::TransportDone done) {
  const size_t size = sdk::DTypeSize(dtype);
  if (size == 0)
    return done(sdk::Unimplemented("mpi collectives: no broadcast of ", sdk::DTypeName(dtype)));
  if (sdk::Status s = CheckGroup(ranks); !s.ok()) return done(s);
  const int root_index = root >= 0 && root < e_->size ? IndexIn(ranks, root) : -1;
  if (root_index < 0)
    return done(sdk::InvalidArgument("mpi collectives: broadcast ", Describe(ranks), ": root ",
                                     root, " is not a member"));
  const uint64_t bytes = count * size;
  Issue(
      "MPI_Bcast", ranks,
      [=](MPI_Comm comm, std::vector<MPI_Request>* requests) {
        for (uint64_t start = 0; start < bytes; start += kMaxPiece) {
          char* at = static_cast<char*>(buffer) + start;
          const int n = static_cast<int>(std::min(kMaxPiece, bytes - start));
          if (requests == nullptr) {
            const int rc = MPI_Bcast(at, n, MPI_BYTE, root_index, comm);
            if (rc != MPI_SUCCESS) return rc;
            continue;
          }
          MPI_Request request;
          const int rc = MPI_Ibcast(at, n, MPI_BYTE, root_index, comm, &request);
          if (rc != MPI_SUCCESS) return rc;
          requests->push_back(request);
        }
        return MPI_SUCCESS;
      },
      std::move(done));
}

}  // namespace cfx::mpi
