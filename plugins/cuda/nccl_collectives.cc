// The "nccl" collectives for GPU memory (see nccl_collectives.h).
#include "nccl_collectives.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "cuda_common.h"
#include "nccl_collectives_launch.h"

#if __has_include(<nccl.h>)
#include <nccl.h>
// The values nccl_collectives.h declares are NCCL's.
namespace {
constexpr bool Same(int nccl_value, int ours) { return nccl_value == ours; }
namespace n = cfx::cuda::nccl;
static_assert(NCCL_UNIQUE_ID_BYTES == n::kUniqueIdBytes);
static_assert(Same(ncclSuccess, n::kSuccess) && Same(ncclInProgress, n::kInProgress));
static_assert(Same(ncclInt8, n::kInt8) && Same(ncclUint8, n::kUint8) &&
              Same(ncclInt32, n::kInt32) && Same(ncclUint32, n::kUint32) &&
              Same(ncclInt64, n::kInt64) && Same(ncclUint64, n::kUint64) &&
              Same(ncclFloat16, n::kFloat16) && Same(ncclFloat32, n::kFloat32) &&
              Same(ncclFloat64, n::kFloat64) && Same(ncclBfloat16, n::kBfloat16));
static_assert(Same(ncclSum, n::kSum) && Same(ncclProd, n::kProd) && Same(ncclMax, n::kMax) &&
              Same(ncclMin, n::kMin) && Same(ncclAvg, n::kAvg));
}  // namespace
#endif

namespace cfx::cuda::nccl {
namespace {

constexpr const char* kSoname = "libnccl.so.2";

using Comm = void*;  // ncclComm_t
struct UniqueId {
  char internal[kUniqueIdBytes];
};

// The NCCL functions the provider calls, with NCCL 2's signatures (enums as int).
struct Api {
  int (*ncclGetVersion)(int* version) = nullptr;
  int (*ncclGetUniqueId)(UniqueId* id) = nullptr;
  int (*ncclCommInitRank)(Comm* comm, int nranks, UniqueId id, int rank) = nullptr;
  int (*ncclCommDestroy)(Comm comm) = nullptr;
  int (*ncclCommGetAsyncError)(Comm comm, int* async_error) = nullptr;
  const char* (*ncclGetErrorString)(int result) = nullptr;
  const char* (*ncclGetLastError)(Comm comm) = nullptr;  // NCCL 2.13+; may stay null
  int (*ncclAllReduce)(const void* send, void* recv, size_t count, int type, int op, Comm comm,
                       cudaStream_t stream) = nullptr;
  int (*ncclAllGather)(const void* send, void* recv, size_t count, int type, Comm comm,
                       cudaStream_t stream) = nullptr;
  int (*ncclBroadcast)(const void* send, void* recv, size_t count, int type, int root, Comm comm,
                       cudaStream_t stream) = nullptr;
  int version = 0;
  std::string path;
};

// The library, opened once for the process and never closed (communicators live until exit).
const Api* g_api = nullptr;

// Opens `path` and fills `api`; false with the reason in *why.
bool Open(const std::string& path, Api* api, std::string* why) {
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    *why = err != nullptr ? err : path + ": cannot be opened";
    return false;
  }
  bool complete = true;
  auto need = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
    if (fn == nullptr && complete) {
      *why = path + " has no " + name + " (NCCL 2.10 or newer is needed)";
      complete = false;
    }
  };
  need(api->ncclGetVersion, "ncclGetVersion");
  need(api->ncclGetUniqueId, "ncclGetUniqueId");
  need(api->ncclCommInitRank, "ncclCommInitRank");
  need(api->ncclCommDestroy, "ncclCommDestroy");
  need(api->ncclCommGetAsyncError, "ncclCommGetAsyncError");
  need(api->ncclGetErrorString, "ncclGetErrorString");
  need(api->ncclAllReduce, "ncclAllReduce");
  need(api->ncclAllGather, "ncclAllGather");
  need(api->ncclBroadcast, "ncclBroadcast");
  if (!complete) {
    dlclose(lib);
    return false;
  }
  api->ncclGetLastError =
      reinterpret_cast<decltype(api->ncclGetLastError)>(dlsym(lib, "ncclGetLastError"));
  // ncclAvg and bfloat16 came with NCCL 2.10 (version code 21000).
  if (api->ncclGetVersion(&api->version) != kSuccess || api->version < 21000) {
    *why = path + " is NCCL " + std::to_string(api->version) + "; NCCL 2.10 or newer is needed";
    dlclose(lib);
    return false;
  }
  api->path = path;
  return true;
}

// "2.28.9" from NCCL's version code (major * 10000 + minor * 100 + patch since 2.9).
std::string VersionString(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

// One group's communicator, made on the group's first collective.
struct GroupComm {
  std::mutex mu;  // serialises NCCL calls on `comm`
  Comm comm = nullptr;
  int device = -1;  // the CUDA ordinal it runs on
  std::vector<int32_t> ranks;
};

class NcclCollectives final : public sdk::Collectives {
 public:
  static sdk::Result<std::unique_ptr<NcclCollectives>> Create(const sdk::HostGroup& group) {
    const Api& api = *g_api;
    auto c = std::unique_ptr<NcclCollectives>(new NcclCollectives(group.Rank(), group.Size()));
    // Rank 0 makes the bootstrap id of the whole group's communicator. It broadcasts even when
    // that fails (an all-zero id), so that no rank waits for it.
    sdk::Status made;
    if (c->rank_ == 0) {
      const int r = api.ncclGetUniqueId(&c->world_id_);
      if (r != kSuccess) {
        std::memset(&c->world_id_, 0, sizeof(c->world_id_));
        made = sdk::Internal("nccl collectives: ncclGetUniqueId failed on rank 0: ",
                             api.ncclGetErrorString(r));
      }
    }
    CFX_SDK_RETURN_IF_ERROR(group.Broadcast(&c->world_id_, sizeof(c->world_id_), 0));
    CFX_SDK_RETURN_IF_ERROR(made);
    static const UniqueId kZero{};
    if (std::memcmp(&c->world_id_, &kZero, sizeof(kZero)) == 0)
      return sdk::Internal(
          "nccl collectives: rank 0 could not make NCCL's bootstrap id (see its "
          "log)");
    return c;
  }

  ~NcclCollectives() override {
    for (auto& [key, g] : comms_)
      if (g->comm != nullptr) {
        int current = -1;
        if (cudaGetDevice(&current) != cudaSuccess || current != g->device)
          (void)cudaSetDevice(g->device);
        g_api->ncclCommDestroy(g->comm);
      }
  }

  void AllReduce(Ranks ranks, cfx_dtype dtype, const void* input, void* output, uint64_t count,
                 cfx_reduce_op op, cfx_stream* stream, sdk::TransportDone done) override {
    Reduction red;
    if (sdk::Status s = ReductionOf(op, dtype, &red); !s.ok()) return done(s);
    DataType type = kFloat32;
    DataTypeOf(dtype, &type);  // ReductionOf checked that NCCL has it
    Run(
        "all_reduce", "ncclAllReduce", ranks, stream, done,
        [&](GroupComm& g, cudaStream_t s) {
          return g_api->ncclAllReduce(input, output, count, type, red.op, g.comm, s);
        },
        -1,
        [&](GroupComm& g, cudaStream_t s) -> sdk::Status {
          if (!red.divide_after) return sdk::Status();
          // An integer mean: the sum, divided by the group's size behind it on the stream, from
          // the stream's device (a launch goes to the calling thread's current device).
          int current = -1;
          if (cudaGetDevice(&current) != cudaSuccess || current != g.device)
            CFX_SDK_RETURN_IF_ERROR(
                CudaCheck(cudaSetDevice(g.device), "nccl all_reduce", "cudaSetDevice"));
          const cudaError_t e =
              LaunchDivideIntegers(type, output, count, static_cast<int>(g.ranks.size()), s);
          if (e == cudaSuccess) return sdk::Status();
          return sdk::Internal("nccl all_reduce over group ", GroupName(g.ranks),
                               ": the division of the integer mean by ", g.ranks.size(),
                               " failed to launch: ", cudaGetErrorString(e));
        });
  }

  void AllGather(Ranks ranks, cfx_dtype dtype, const void* input, uint64_t count, void* output,
                 cfx_stream* stream, sdk::TransportDone done) override {
    DataType type;
    if (!DataTypeOf(dtype, &type))
      return done(sdk::Unimplemented("nccl all_gather: NCCL has no type for ",
                                     sdk::DTypeName(dtype), "; place the collective on the CPU"));
    Run("all_gather", "ncclAllGather", ranks, stream, done, [&](GroupComm& g, cudaStream_t s) {
      return g_api->ncclAllGather(input, output, count, type, g.comm, s);
    });
  }

  void Broadcast(Ranks ranks, cfx_dtype dtype, void* buffer, uint64_t count, int32_t root,
                 cfx_stream* stream, sdk::TransportDone done) override {
    DataType type;
    if (!DataTypeOf(dtype, &type))
      return done(sdk::Unimplemented("nccl broadcast: NCCL has no type for ", sdk::DTypeName(dtype),
                                     "; place the collective on the CPU"));
    Run(
        "broadcast", "ncclBroadcast", ranks, stream, done,
        [&](GroupComm& g, cudaStream_t s) {
          const int32_t at = IndexIn(g.ranks, root);
          if (at < 0) return -1;  // reported below
          return g_api->ncclBroadcast(buffer, buffer, count, type, at, g.comm, s);
        },
        root);
  }

 private:
  NcclCollectives(int32_t rank, int32_t size) : rank_(rank), size_(size) {}

  // Enqueues `enqueue` on the group's communicator and the stream, then calls `done`: OK once
  // the collective is ordered on the stream, else the error naming the call and the group.
  // `root` >= 0: a broadcast's root, which must be a member. `after` enqueues what follows the
  // collective on the stream (an integer mean's division), once NCCL's call succeeded.
  template <typename Enqueue, typename After = sdk::Status (*)(GroupComm&, cudaStream_t)>
  void Run(
      const char* call, const char* nccl_call, Ranks ranks, cfx_stream* stream,
      const sdk::TransportDone& done, Enqueue enqueue, int32_t root = -1,
      After after = [](GroupComm&, cudaStream_t) { return sdk::Status(); }) {
    sdk::Result<GroupComm*> g = CommFor(call, ranks, stream);
    if (!g.ok()) return done(g.status());
    GroupComm& comm = **g;
    if (root >= 0 && IndexIn(comm.ranks, root) < 0)
      return done(sdk::InvalidArgument("nccl broadcast over group ", GroupName(comm.ranks),
                                       ": the root ", root, " is not a member"));
    sdk::Status status;
    {
      std::lock_guard<std::mutex> lock(comm.mu);
      status = Check(comm, call, nccl_call, enqueue(comm, stream->stream));
      if (status.ok()) status = after(comm, stream->stream);
    }
    done(status);
  }

  // OK when `result` is a success and the communicator has no asynchronous error; else the
  // error text of nccl_collectives.h.
  sdk::Status Check(const GroupComm& g, const char* call, const char* nccl_call, int result) {
    int async_error = kSuccess;
    if (result == kSuccess || result == kInProgress) {
      if (g_api->ncclCommGetAsyncError(g.comm, &async_error) != kSuccess ||
          async_error == kSuccess || async_error == kInProgress)
        return sdk::Status();
      result = async_error;
      nccl_call = "the communicator (ncclCommGetAsyncError)";
    }
    const std::string detail =
        g_api->ncclGetLastError != nullptr ? g_api->ncclGetLastError(g.comm) : "";
    return sdk::Internal(
        ErrorText(call, g.ranks, nccl_call, g_api->ncclGetErrorString(result), detail));
  }

  // The communicator of `ranks`' group, made on its first use on the CUDA device of `stream`.
  sdk::Result<GroupComm*> CommFor(const char* call, Ranks ranks, cfx_stream* stream) {
    CFX_SDK_ASSIGN_OR_RETURN(std::vector<int32_t> key, GroupKey(ranks, size_, rank_));
    if (stream == nullptr || stream->stream == nullptr)
      return sdk::InvalidArgument("nccl ", call, " over group ", GroupName(key),
                                  ": no CUDA stream was passed (NCCL collectives run on the "
                                  "kernel's stream)");
    int device = -1;
    if (cudaError_t e = cudaStreamGetDevice(stream->stream, &device); e != cudaSuccess)
      return CudaCheck(e, "nccl " + std::string(call), "cudaStreamGetDevice");
    if (static_cast<int32_t>(key.size()) != size_)
      return sdk::Unimplemented(
          "nccl ", call, " over group ", GroupName(key), ": a communicator for some of the ", size_,
          " processes needs a bootstrap id shared among them only, which the host's "
          "process group cannot send yet; NCCL collectives run over every task of the cluster "
          "(place this group's collectives on the CPU)");
    std::lock_guard<std::mutex> lock(mu_);
    std::unique_ptr<GroupComm>& g = comms_[key];
    if (g != nullptr) {
      if (g->comm == nullptr)
        return sdk::Internal("nccl ", call, " over group ", GroupName(key),
                             ": its communicator could not be made earlier");
      if (g->device != device)
        return sdk::InvalidArgument("nccl ", call, " over group ", GroupName(key),
                                    ": its communicator runs on CUDA "
                                    "device ",
                                    g->device, " but this collective's stream is on device ",
                                    device, " (a task's collectives on a group use one GPU)");
      return g.get();
    }
    g = std::make_unique<GroupComm>();
    g->ranks = key;
    g->device = device;
    if (world_id_taken_)
      return sdk::Internal("nccl ", call, " over group ", GroupName(key),
                           ": the group's bootstrap id was used already");
    world_id_taken_ = true;
    CFX_SDK_RETURN_IF_ERROR(
        CudaCheck(cudaSetDevice(device), "nccl " + std::string(call), "cudaSetDevice"));
    // Blocks until every member has called it: each does on its first collective on the group,
    // which all members issue in the same order.
    Comm comm = nullptr;
    const int r = g_api->ncclCommInitRank(&comm, static_cast<int>(key.size()), world_id_,
                                          IndexIn(key, rank_));
    if (r != kSuccess)
      return sdk::Internal(
          ErrorText(call, key, "ncclCommInitRank", g_api->ncclGetErrorString(r),
                    g_api->ncclGetLastError != nullptr ? g_api->ncclGetLastError(nullptr) : ""),
          " (CUDA device ", device, ", rank ", IndexIn(key, rank_), " of ", key.size(),
          "; two ranks on one GPU are refused by NCCL)");
    g->comm = comm;
    return g.get();
  }

  const int32_t rank_, size_;
  UniqueId world_id_{};
  std::mutex mu_;  // guards comms_ and world_id_taken_
  bool world_id_taken_ = false;
  std::map<std::vector<int32_t>, std::unique_ptr<GroupComm>> comms_;
};

}  // namespace

void RegisterNcclCollectives(sdk::Plugin& p, const std::string& library) {
  static Api api;
  std::string why;
  if (!Open(library.empty() ? kSoname : library, &api, &why)) {
    const std::string line =
        "cuda: NCCL not loaded (" + why +
        "); collectives stay on the CPU. Set plugins.cuda.options.nccl_library to a "
        "libnccl.so.2 (e.g. the nvidia-nccl-cu13 wheel's nvidia/nccl/lib/libnccl.so.2) to run "
        "them on the GPU";
    if (sdk::Host().core->log != nullptr) sdk::Host().core->log(CFX_LOG_INFO, line.c_str());
    return;
  }
  g_api = &api;
  p.Collectives<NcclCollectives>("nccl", kDeviceType);
  const std::string line = "cuda: NCCL " + VersionString(api.version) + " from " + api.path;
  if (sdk::Host().core->log != nullptr) sdk::Host().core->log(CFX_LOG_DEBUG, line.c_str());
}

}  // namespace cfx::cuda::nccl
