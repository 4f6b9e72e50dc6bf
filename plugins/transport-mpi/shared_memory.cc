// SharedMemoryAllReduce: the segment, the chunk protocol and the element-wise reductions.
#include "shared_memory.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>

#include "conflux/sdk/float16.h"
#include "conflux/sdk/tensor.h"
#include "mpi_errors.h"
#include "mpi_reduce.h"

namespace cfx::mpi {

struct alignas(64) Counter {
  std::atomic<uint64_t> value;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "counters are shared between processes");

// What a rank's chunk belongs to: every rank must make the same call.
struct CallInfo {
  uint64_t chunk = 0;  // the chunk's number, so a stale description is never taken for this one
  uint64_t count = 0;
  int32_t dtype = 0;
  int32_t op = 0;
  bool operator==(const CallInfo&) const = default;
};

struct SharedMemoryAllReduce::Control {
  Counter in, reduced, out;
  alignas(64) CallInfo call[2];  // by slot
  int64_t pid = 0;
};

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kMinChunk = uint64_t{64} << 10;
constexpr uint64_t kMaxChunk = uint64_t{1} << 20;
// Pauses before the first yield: some 20 to 60 us, after which a thread of this rank that has
// work (the executor, when collectives run on their own thread) gets the core.
constexpr int kSpins = 1000;
constexpr auto kCheckEvery = std::chrono::milliseconds(20);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#else
  sched_yield();
#endif
}

// Chunk bytes: half this core's L2 cache (a chunk's input, the peers' shares and the output
// then stay in it), within [64 KiB, 1 MiB]. On a Zen 4 core (1 MiB of L2), 512 KiB chunks made
// a 4 MiB all-reduce a quarter faster than 256 KiB ones and 1 MiB ones.
uint64_t ChunkBytes() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const uint64_t half = l2 > 0 ? static_cast<uint64_t>(l2) / 2 : uint64_t{256} << 10;
  return std::clamp(half / 4096 * 4096, kMinChunk, kMaxChunk);
}

// The element-wise reductions. An integer sum or product wraps, as MPI's does on every
// implementation we know of, computed in uint64_t so that no signed overflow happens here.
template <typename T>
struct AddOp {
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    else
      return a + b;
  }
};
template <typename T>
struct MulOp {
  static T Apply(T a, T b) {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    else
      return a * b;
  }
};
template <typename T>
struct MinOp {
  static T Apply(T a, T b) { return b < a ? b : a; }
};
template <typename T>
struct MaxOp {
  static T Apply(T a, T b) { return a < b ? b : a; }
};
// bool: min is logical and, max logical or (MPI_LAND, MPI_LOR).
struct And {
  static uint8_t Apply(uint8_t a, uint8_t b) { return (a != 0) & (b != 0); }
};
struct Or {
  static uint8_t Apply(uint8_t a, uint8_t b) { return (a != 0) | (b != 0); }
};
// 16-bit floats: computed in float, rounded back (mpi_reduce.cc's user-defined ops).
template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float), template <typename> class Op>
struct In32 {
  static uint16_t Apply(uint16_t a, uint16_t b) {
    return kNarrow(Op<float>::Apply(kWiden(a), kWiden(b)));
  }
};

// out[i] = a[i] op b[i], and also[i] = out[i] unless `also` is null. `out` may be `a`.
using CombineFn = void (*)(void* out, void* also, const void* a, const void* b, uint64_t n);

template <typename T, typename Op>
void Combine(void* out_bytes, void* also_bytes, const void* a_bytes, const void* b_bytes,
             uint64_t n) {
  T* out = static_cast<T*>(out_bytes);
  const T* a = static_cast<const T*>(a_bytes);
  const T* b = static_cast<const T*>(b_bytes);
  if (also_bytes == nullptr) {
    for (uint64_t i = 0; i < n; ++i) out[i] = Op::Apply(a[i], b[i]);
    return;
  }
  T* also = static_cast<T*>(also_bytes);
  for (uint64_t i = 0; i < n; ++i) also[i] = out[i] = Op::Apply(a[i], b[i]);
}

// The data-parallel gradients' case, cloned for the CPU the job runs on (no FMA is involved:
// every clone gives the same bits).
__attribute__((target_clones("avx512f", "avx2", "default"))) void SumFloats(void* out, void* also,
                                                                            const void* a,
                                                                            const void* b,
                                                                            uint64_t n) {
  Combine<float, AddOp<float>>(out, also, a, b, n);
}
__attribute__((target_clones("avx512f", "avx2", "default"))) void SumDoubles(void* out, void* also,
                                                                             const void* a,
                                                                             const void* b,
                                                                             uint64_t n) {
  Combine<double, AddOp<double>>(out, also, a, b, n);
}

template <typename T>
CombineFn Arithmetic(cfx_reduce_op op) {
  switch (op) {
    case CFX_REDUCE_SUM:
    case CFX_REDUCE_MEAN:
      return &Combine<T, AddOp<T>>;
    case CFX_REDUCE_MIN:
      return &Combine<T, MinOp<T>>;
    case CFX_REDUCE_MAX:
      return &Combine<T, MaxOp<T>>;
    case CFX_REDUCE_PROD:
      return &Combine<T, MulOp<T>>;
  }
  return nullptr;
}

template <float (*kWiden)(uint16_t), uint16_t (*kNarrow)(float)>
CombineFn Sixteen(cfx_reduce_op op) {
  switch (op) {
    case CFX_REDUCE_SUM:
    case CFX_REDUCE_MEAN:
      return &Combine<uint16_t, In32<kWiden, kNarrow, AddOp>>;
    case CFX_REDUCE_MIN:
      return &Combine<uint16_t, In32<kWiden, kNarrow, MinOp>>;
    case CFX_REDUCE_MAX:
      return &Combine<uint16_t, In32<kWiden, kNarrow, MaxOp>>;
    case CFX_REDUCE_PROD:
      return &Combine<uint16_t, In32<kWiden, kNarrow, MulOp>>;
  }
  return nullptr;
}

// Null: not handled here.
CombineFn CombinerFor(cfx_dtype dtype, cfx_reduce_op op) {
  const bool sum = op == CFX_REDUCE_SUM || op == CFX_REDUCE_MEAN;
  switch (dtype) {
    case CFX_FLOAT:
      return sum ? &SumFloats : Arithmetic<float>(op);
    case CFX_DOUBLE:
      return sum ? &SumDoubles : Arithmetic<double>(op);
    case CFX_INT8:
      return Arithmetic<int8_t>(op);
    case CFX_INT16:
      return Arithmetic<int16_t>(op);
    case CFX_INT32:
      return Arithmetic<int32_t>(op);
    case CFX_INT64:
      return Arithmetic<int64_t>(op);
    case CFX_UINT8:
      return Arithmetic<uint8_t>(op);
    case CFX_UINT16:
      return Arithmetic<uint16_t>(op);
    case CFX_UINT32:
      return Arithmetic<uint32_t>(op);
    case CFX_UINT64:
      return Arithmetic<uint64_t>(op);
    case CFX_HALF:
      return Sixteen<&sdk::HalfToFloat, &sdk::FloatToHalf>(op);
    case CFX_BFLOAT16:
      return Sixteen<&sdk::Bfloat16ToFloat, &sdk::FloatToBfloat16>(op);
    case CFX_BOOL:
      return op == CFX_REDUCE_MIN   ? &Combine<uint8_t, And>
             : op == CFX_REDUCE_MAX ? &Combine<uint8_t, Or>
                                    : nullptr;
    default:
      return nullptr;
  }
}

std::string DescribeCall(const CallInfo& c) {
  return sdk::StrCat(c.count, " ", sdk::DTypeName(static_cast<cfx_dtype>(c.dtype)), " (",
                     ReduceOpName(c.op), ")");
}

// What rank 0 tells the others at creation.
struct Setup {
  char name[64] = {};
  int32_t ok = 0;
  char error[192] = {};
};

}  // namespace

bool SharedMemoryAllReduce::Handles(cfx_dtype dtype, cfx_reduce_op op) {
  return CombinerFor(dtype, op) != nullptr;
}

std::unique_ptr<SharedMemoryAllReduce> SharedMemoryAllReduce::Create(MPI_Comm comm,
                                                                     const PeerNames* names,
                                                                     int ranks_per_host,
                                                                     std::string* why) {
  int job_rank = 0, job_size = 0;
  MPI_Comm_rank(comm, &job_rank);
  MPI_Comm_size(comm, &job_size);
  if (job_size < 2) {
    *why = "the job has one rank";
    return nullptr;
  }
  MPI_Comm host;
  if (SplitByHost(comm, ranks_per_host, &host) != MPI_SUCCESS) {
    *why = ranks_per_host > 0 ? "MPI_Comm_split into hosts failed"
                              : "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed";
    return nullptr;
  }
  std::unique_ptr<SharedMemoryAllReduce> s(new SharedMemoryAllReduce());
  MPI_Comm_rank(host, &s->rank_);
  MPI_Comm_size(host, &s->size_);
  s->job_size_ = job_size;
  s->names_ = names;
  // Every host must run as many ranks as the others: local rank r of each reduces the same share.
  int sizes[2] = {s->size_, -s->size_}, least[2] = {0, 0};
  if (MPI_Allreduce(sizes, least, 2, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
    MPI_Comm_free(&host);
    *why = "MPI_Allreduce of the ranks per host failed";
    return nullptr;
  }
  if (-least[1] < 2 || least[0] != -least[1]) {
    MPI_Comm_free(&host);
    *why = -least[1] < 2 ? "no two ranks run on one host"
                         : sdk::StrCat("the hosts run different numbers of ranks (", least[0],
                                       " to ", -least[1], ")");
    return nullptr;
  }
  const int hosts = job_size / s->size_;
  s->job_rank_.resize(s->size_);
  std::string error;
  if (MPI_Allgather(&job_rank, 1, MPI_INT, s->job_rank_.data(), 1, MPI_INT, host) != MPI_SUCCESS)
    error = "MPI_Allgather of the host's ranks failed";
  // Every rank makes each of these calls, whatever failed before, so that none waits for ever.
  if (hosts > 1 && MPI_Comm_split(comm, s->rank_, job_rank, &s->between_) != MPI_SUCCESS &&
      error.empty())
    error = "MPI_Comm_split between hosts failed";
  // One chunk size for the job (the hosts' shares of a chunk must line up), the job's rank 0's.
  uint64_t chunk_bytes = ChunkBytes();
  if (MPI_Bcast(&chunk_bytes, 1, MPI_UINT64_T, 0, comm) != MPI_SUCCESS && error.empty())
    error = "MPI_Bcast of the chunk size failed";

  Setup setup;
  int fd = -1;
  auto layout = [&s](uint64_t chunk_bytes) {
    s->chunk_bytes_ = chunk_bytes;
    s->control_stride_ = (sizeof(Control) + 4095) / 4096 * 4096;
    s->slots_offset_ = s->control_stride_ * s->size_;
    s->mapped_ = s->slots_offset_ + 2 * s->chunk_bytes_ * s->size_;
  };
  layout(chunk_bytes);
  if (s->rank_ == 0) {
    static std::atomic<int> made{0};
    std::snprintf(setup.name, sizeof(setup.name), "/cfx-allreduce-%d-%d",
                  static_cast<int>(getpid()), made.fetch_add(1));
    fd = shm_open(setup.name, O_CREAT | O_EXCL | O_RDWR, 0600);
    int rc = fd >= 0 ? 0 : errno;
    const char* call = "shm_open";
    if (rc == 0) {
      // Reserved now, so that a full /dev/shm is an error here rather than a SIGBUS later.
      rc = posix_fallocate(fd, 0, static_cast<off_t>(s->mapped_));
      call = "posix_fallocate";
    }
    setup.ok = rc == 0;
    if (rc != 0)
      std::snprintf(setup.error, sizeof(setup.error), "%s of %zu bytes (%s): %s", call, s->mapped_,
                    setup.name, std::strerror(rc));
  }
  // The segment has its size before the host's other ranks map it.
  if (MPI_Bcast(&setup, sizeof(setup), MPI_BYTE, 0, host) != MPI_SUCCESS) {
    if (error.empty()) error = "MPI_Bcast of the segment's name failed";
  } else if (!setup.ok && error.empty()) {
    error = setup.error;
  }
  if (error.empty() && s->rank_ != 0) {
    fd = shm_open(setup.name, O_RDWR, 0);
    if (fd < 0) error = sdk::StrCat("shm_open(", setup.name, "): ", std::strerror(errno));
  }
  if (error.empty()) {
    void* p = mmap(nullptr, s->mapped_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      error =
          sdk::StrCat("mmap of ", s->mapped_, " bytes of ", setup.name, ": ", std::strerror(errno));
    } else {
      s->base_ = static_cast<char*>(p);
      Control* mine = new (s->ControlOf(s->rank_)) Control();
      mine->in.value.store(1, std::memory_order_relaxed);
      mine->reduced.value.store(1, std::memory_order_relaxed);
      mine->out.value.store(1, std::memory_order_relaxed);
      mine->pid = static_cast<int64_t>(getpid());
    }
  }
  if (fd >= 0) close(fd);
  // Every rank of the job has mapped its host's segment and set its control block (or failed)
  // past this point: the job uses shared memory everywhere or nowhere.
  int ok = error.empty(), every = 0;
  const int rc = MPI_Allreduce(&ok, &every, 1, MPI_INT, MPI_MIN, comm);
  if (s->rank_ == 0 && setup.ok) shm_unlink(setup.name);
  MPI_Comm_free(&host);
  if (rc != MPI_SUCCESS || !every) {
    *why = error.empty() ? "another rank could not map its host's segment" : error;
    s->FreeComms();
    return nullptr;  // the destructor unmaps
  }
  // Ranks in other pid namespaces (containers sharing /dev/shm) have pids this process cannot
  // see: then no rank's death is inferred from its pid.
  s->pids_visible_ = true;
  for (int r = 0; r < s->size_; ++r) {
    s->pids_.push_back(s->ControlOf(r)->pid);
    if (kill(static_cast<pid_t>(s->pids_.back()), 0) != 0 && errno != EPERM)
      s->pids_visible_ = false;
  }
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  s->yield_at_once_ = cores > 0 && cores < s->size_;
  return s;
}

void SharedMemoryAllReduce::FreeComms() {
  if (between_ != MPI_COMM_NULL) MPI_Comm_free(&between_);
}

SharedMemoryAllReduce::~SharedMemoryAllReduce() {
  if (base_ != nullptr) munmap(base_, mapped_);
}

SharedMemoryAllReduce::Control* SharedMemoryAllReduce::ControlOf(int rank) const {
  return reinterpret_cast<Control*>(base_ + control_stride_ * rank);
}

char* SharedMemoryAllReduce::SlotOf(int rank, int slot) const {
  return base_ + slots_offset_ + (2 * static_cast<size_t>(rank) + slot) * chunk_bytes_;
}

sdk::Status SharedMemoryAllReduce::Wait(Phase phase, uint64_t value, uint64_t count) {
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    Control* c = ControlOf(j);
    const std::atomic<uint64_t>& counter = phase == Phase::kIn        ? c->in.value
                                           : phase == Phase::kReduced ? c->reduced.value
                                                                      : c->out.value;
    int spins = yield_at_once_ ? kSpins : 0;
    Clock::time_point check{};
    while (counter.load(std::memory_order_acquire) < value) {
      if (spins < kSpins) {
        CpuRelax();
        ++spins;
        continue;
      }
      sched_yield();
      const Clock::time_point now = Clock::now();
      if (check == Clock::time_point{}) check = now + kCheckEvery;
      if (now < check) continue;
      check = now + kCheckEvery;
      if (stopped_.load(std::memory_order_acquire))
        return sdk::Status(CFX_CANCELLED,
                           sdk::StrCat("mpi collectives: a shared-memory all-reduce of ", count,
                                       " elements was abandoned: the transport is shutting down"));
      if (pids_visible_ && kill(static_cast<pid_t>(pids_[j]), 0) != 0 && errno == ESRCH)
        return sdk::Status(
            CFX_UNAVAILABLE,
            sdk::StrCat("mpi collectives: shared-memory all-reduce of ", count,
                        " elements: ", names_->Of(job_rank_[j]), " ended (its process, pid ",
                        pids_[j], ", is gone) while this rank waited for it"));
    }
  }
  return sdk::Status();
}

sdk::Status SharedMemoryAllReduce::AllReduce(cfx_dtype dtype, const void* input, void* output,
                                             uint64_t count, cfx_reduce_op op,
                                             const Reduction& between_hosts) {
  if (!broken_.ok()) return broken_;
  const CombineFn combine = CombinerFor(dtype, op);
  if (combine == nullptr)
    return sdk::Unimplemented("mpi collectives: no shared-memory ", ReduceOpName(op), " of ",
                              sdk::DTypeName(dtype));
  const size_t size = sdk::DTypeSize(dtype);
  const uint64_t per_chunk = chunk_bytes_ / size;
  const auto* in = static_cast<const char*>(input);
  auto* out = static_cast<char*>(output);
  Control* mine = ControlOf(rank_);
  uint64_t start = 0;
  // At least one chunk, also for no elements: every rank then checks the others' call.
  do {
    const uint64_t len = std::min(per_chunk, count - start);
    const uint64_t s = next_++;
    const int slot = static_cast<int>(s & 1);
    auto fail = [&](sdk::Status why) {
      broken_ = why;
      return why;
    };
    // Ends this chunk without data, so that the other ranks' waits for it end too.
    auto skip_chunk = [&] {
      mine->reduced.value.store(s, std::memory_order_release);
      mine->out.value.store(s, std::memory_order_release);
    };
    if (sdk::Status w = Wait(Phase::kOut, s - 2, count); !w.ok()) return fail(w);
    char* own = SlotOf(rank_, slot);
    // The others' shares of this rank's input go to its slot; its own share is read from the
    // input where it is, unless the reduction overwrites it before the last use (in place, with
    // more than two ranks).
    const uint64_t lo = len * rank_ / size_, hi = len * (rank_ + 1) / size_;
    const bool own_in_slot = input == output && size_ > 2;
    const uint64_t skip_from = own_in_slot ? len : lo, skip_to = own_in_slot ? len : hi;
    if (skip_from > 0) std::memcpy(own, in + start * size, skip_from * size);
    if (len > skip_to)
      std::memcpy(own + skip_to * size, in + (start + skip_to) * size, (len - skip_to) * size);
    const CallInfo call{s, count, static_cast<int32_t>(dtype), static_cast<int32_t>(op)};
    mine->call[slot] = call;
    mine->in.value.store(s, std::memory_order_release);
    if (sdk::Status w = Wait(Phase::kIn, s, count); !w.ok()) return fail(w);
    std::string differs;
    for (int j = 0; j < size_ && differs.empty(); ++j) {
      const CallInfo theirs = ControlOf(j)->call[slot];
      if (theirs == call) continue;
      differs = sdk::StrCat(names_->Of(job_rank_[j]), " reduces ", DescribeCall(theirs),
                            ", this rank ", DescribeCall(call));
    }
    // The first chunk also compares the call with the other hosts' (their ranks compared theirs
    // among themselves): every member of each communicator between hosts sees the same minima.
    if (between_ != MPI_COMM_NULL && start == 0) {
      const int64_t mine_and_negated[7] = {differs.empty() ? 1 : 0,
                                           static_cast<int64_t>(count),
                                           dtype,
                                           op,
                                           -static_cast<int64_t>(count),
                                           -static_cast<int64_t>(dtype),
                                           -static_cast<int64_t>(op)};
      int64_t least[7];
      const int rc = MPI_Allreduce(mine_and_negated, least, 7, MPI_INT64_T, MPI_MIN, between_);
      if (rc != MPI_SUCCESS) {
        skip_chunk();
        return fail(MpiError("MPI_Allreduce", rc, "comparing the all-reduce with other hosts'"));
      }
      if (differs.empty() && (least[0] == 0 || least[1] != -least[4] || least[2] != -least[5] ||
                              least[3] != -least[6]))
        differs = sdk::StrCat("a rank on another host makes another call than this rank's ",
                              DescribeCall(call));
    }
    if (!differs.empty()) {
      // Every rank sees a difference: each finishes the chunk without data and fails the call.
      skip_chunk();
      return sdk::InvalidArgument("mpi collectives: all-reduce over all ", job_size_,
                                  " ranks: ", differs, ": every member must make the same call");
    }
    // This rank's share, reduced in rank order, into its output and back into its own slot
    // (with other hosts: all-reduced with theirs first).
    if (hi > lo) {
      char* share = out + (start + lo) * size;
      char* own_share = own + lo * size;
      auto operand = [&](int j) -> const void* {
        if (j == rank_ && !own_in_slot) return in + (start + lo) * size;
        return SlotOf(j, slot) + lo * size;
      };
      const bool mean = op == CFX_REDUCE_MEAN;
      const bool done_here = !mean && between_ == MPI_COMM_NULL;
      for (int j = 1; j < size_; ++j) {
        void* also = j == size_ - 1 && done_here ? own_share : nullptr;
        combine(share, also, j == 1 ? operand(0) : share, operand(j), hi - lo);
      }
      if (between_ != MPI_COMM_NULL) {
        const int rc = MPI_Allreduce(MPI_IN_PLACE, share, static_cast<int>(hi - lo),
                                     between_hosts.type, between_hosts.op, between_);
        if (rc != MPI_SUCCESS) {
          skip_chunk();
          return fail(MpiError("MPI_Allreduce", rc, "between hosts"));
        }
      }
      if (mean) DivideBy(dtype, share, hi - lo, job_size_);
      if (!done_here) std::memcpy(own_share, share, (hi - lo) * size);
    }
    mine->reduced.value.store(s, std::memory_order_release);
    if (sdk::Status w = Wait(Phase::kReduced, s, count); !w.ok()) return fail(w);
    for (int j = 0; j < size_; ++j) {
      if (j == rank_) continue;
      const uint64_t from = len * j / size_, to = len * (j + 1) / size_;
      if (to > from)
        std::memcpy(out + (start + from) * size, SlotOf(j, slot) + from * size, (to - from) * size);
    }
    mine->out.value.store(s, std::memory_order_release);
    start += len;
  } while (start < count);
  return sdk::Status();
}

}  // namespace cfx::mpi
