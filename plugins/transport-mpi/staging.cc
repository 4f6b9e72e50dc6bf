// StagingArea: the segments, first-fit blocks, and the copies in and out.
#include "staging.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "hosts.h"

namespace cfx::mpi {
namespace {

std::string SegmentName(int64_t pid) {
  char name[64];
  std::snprintf(name, sizeof(name), "/cfx-staging-%lld", static_cast<long long>(pid));
  return name;
}

}  // namespace

uint64_t StagingArea::FlagBytes(uint64_t units) {
  return (units * sizeof(uint32_t) + kUnit - 1) / kUnit * kUnit;
}

char* StagingArea::Segment::data() const { return base + FlagBytes(units); }

std::unique_ptr<StagingArea> StagingArea::Create(MPI_Comm comm, int ranks_per_host, uint64_t bytes,
                                                 std::vector<std::string>* problems) {
  std::unique_ptr<StagingArea> s(new StagingArea);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  s->peers_.resize(size);
  s->can_stage_.assign(size, 0);
  MPI_Comm host;
  if (SplitByHost(comm, ranks_per_host, &host) != MPI_SUCCESS) {
    problems->push_back("splitting the ranks by host failed");
    return s;
  }
  int local = 0, on_host = 0;
  MPI_Comm_rank(host, &local);
  MPI_Comm_size(host, &on_host);
  // At most a quarter of what /dev/shm has free, shared by the host's ranks: the rest is left to
  // the all-reduce's segment and to other programs (a container's /dev/shm may hold 64 MiB).
  struct statvfs shm {};
  if (statvfs("/dev/shm", &shm) == 0) {
    const uint64_t free_bytes = static_cast<uint64_t>(shm.f_bavail) * shm.f_frsize;
    bytes = std::min(bytes, free_bytes / 4 / static_cast<uint64_t>(on_host));
  }
  const int64_t pid = getpid();
  const std::string name = SegmentName(pid);
  uint64_t units = on_host > 1 && bytes >= kMinBytes ? bytes / kUnit : 0;
  if (units > 0) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST) {  // left by a process that had this pid and died early
      shm_unlink(name.c_str());
      fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    }
    const uint64_t mapped = FlagBytes(units) + units * kUnit;
    std::string failed;
    if (fd < 0) {
      failed = sdk::StrCat("shm_open(", name, "): ", std::strerror(errno));
    } else if (int rc = posix_fallocate(fd, 0, static_cast<off_t>(mapped)); rc != 0) {
      // Reserved now, so that a full /dev/shm shows here rather than as a SIGBUS later.
      failed =
          sdk::StrCat("posix_fallocate of ", mapped, " bytes (", name, "): ", std::strerror(rc));
    } else {
      void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED) {
        failed = sdk::StrCat("mmap of ", mapped, " bytes (", name, "): ", std::strerror(errno));
      } else {
        s->own_ = Segment{static_cast<char*>(p), units, mapped};  // the flags start zeroed
        s->free_[0] = units;
      }
    }
    if (fd >= 0) close(fd);
    if (!failed.empty()) {
      problems->push_back("this rank's staging segment: " + failed);
      if (fd >= 0) shm_unlink(name.c_str());
      units = 0;
    }
  }
  // Every rank of the host has made its segment, or has none, past this point. By local rank:
  // (rank in `comm`, pid, units).
  const int64_t mine[3] = {rank, pid, static_cast<int64_t>(units)};
  std::vector<int64_t> all(3 * static_cast<size_t>(on_host), 0);
  if (MPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, host) != MPI_SUCCESS) {
    problems->push_back("MPI_Allgather of the staging segments failed");
    all.assign(all.size(), 0);
  }
  std::vector<char> mapped_theirs(on_host, 0), they_mapped(on_host, 0);
  for (int l = 0; l < on_host; ++l) {
    const int r = static_cast<int>(all[3 * l]);
    const uint64_t their_units = static_cast<uint64_t>(all[3 * l + 2]);
    if (l == local || their_units == 0) continue;
    const std::string theirs = SegmentName(all[3 * l + 1]);
    const uint64_t mapped = FlagBytes(their_units) + their_units * kUnit;
    const int fd = shm_open(theirs.c_str(), O_RDWR, 0);
    void* p =
        fd >= 0 ? mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
      problems->push_back(
          sdk::StrCat("rank ", r, "'s staging segment (", theirs, "): ", std::strerror(errno)));
    } else {
      s->peers_[r] = Segment{static_cast<char*>(p), their_units, mapped};
      mapped_theirs[l] = 1;
    }
    if (fd >= 0) close(fd);
  }
  // Every rank of the host has mapped what it could past this point: the names can go.
  if (MPI_Alltoall(mapped_theirs.data(), 1, MPI_CHAR, they_mapped.data(), 1, MPI_CHAR, host) !=
      MPI_SUCCESS) {
    problems->push_back("MPI_Alltoall of the mapped staging segments failed");
    they_mapped.assign(on_host, 0);
  }
  if (units > 0) shm_unlink(name.c_str());
  for (int l = 0; l < on_host; ++l) s->can_stage_[all[3 * l]] = units > 0 && they_mapped[l] != 0;
  MPI_Comm_free(&host);
  return s;
}

StagingArea::~StagingArea() {
  if (own_.base != nullptr) munmap(own_.base, own_.mapped);
  for (Segment& p : peers_)
    if (p.base != nullptr) munmap(p.base, p.mapped);
}

int64_t StagingArea::Stage(int peer, const void* data, uint64_t bytes) {
  // Above a quarter of the segment, MPI's single copy (CMA) is as fast as two at memory speed,
  // and one such payload would hold up many smaller ones.
  if (peer < 0 || peer >= static_cast<int>(can_stage_.size()) || !can_stage_[peer] || bytes == 0 ||
      bytes > own_.units * kUnit / 4)
    return -1;
  const uint64_t need = (bytes + kUnit - 1) / kUnit;
  uint64_t unit = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Reclaim();
    auto fit = free_.begin();
    while (fit != free_.end() && fit->second < need) ++fit;
    if (fit == free_.end()) return -1;
    unit = fit->first;
    const uint64_t left = fit->second - need;
    free_.erase(fit);
    if (left > 0) free_[unit + need] = left;
    outstanding_[unit] = need;
  }
  std::memcpy(own_.data() + unit * kUnit, data, bytes);
  // The copy (which may use non-temporal stores) is visible before the header that points at it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return static_cast<int64_t>(unit * kUnit);
}

void StagingArea::Unstage(int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = outstanding_.find(static_cast<uint64_t>(offset) / kUnit);
  if (it == outstanding_.end()) return;
  Free(it->first, it->second);
  outstanding_.erase(it);
}

void StagingArea::Reclaim() {
  for (auto it = outstanding_.begin(); it != outstanding_.end();) {
    std::atomic<uint32_t>& flag = own_.flags()[it->first];
    if (flag.load(std::memory_order_acquire) == 0) {
      ++it;
      continue;
    }
    flag.store(0, std::memory_order_relaxed);
    Free(it->first, it->second);
    it = outstanding_.erase(it);
  }
}

void StagingArea::Free(uint64_t unit, uint64_t units) {
  auto next = free_.lower_bound(unit);
  if (next != free_.end() && unit + units == next->first) {
    units += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto before = std::prev(next);
    if (before->first + before->second == unit) {
      before->second += units;
      return;
    }
  }
  free_[unit] = units;
}

const StagingArea::Segment* StagingArea::Mapped(int source) const {
  if (source < 0 || source >= static_cast<int>(peers_.size())) return nullptr;
  return peers_[source].base != nullptr ? &peers_[source] : nullptr;
}

sdk::Status StagingArea::Take(int source, int64_t offset, uint64_t bytes, void* out) {
  const Segment* seg = Mapped(source);
  if (seg == nullptr)
    return sdk::Internal("mpi transport: a payload from rank ", source,
                         " staged in a shared segment that this rank has not mapped");
  const uint64_t unit = static_cast<uint64_t>(offset) / kUnit;
  if (offset < 0 || offset % kUnit != 0 || unit >= seg->units ||
      bytes > (seg->units - unit) * kUnit)
    return sdk::Internal("mpi transport: a payload of ", bytes, " bytes from rank ", source,
                         " at offset ", offset, " lies outside its staging segment of ",
                         seg->units * kUnit, " bytes");
  std::atomic_thread_fence(std::memory_order_acquire);
  std::memcpy(out, seg->data() + offset, bytes);
  seg->flags()[unit].store(1, std::memory_order_release);
  return sdk::Status();
}

void StagingArea::Release(int source, int64_t offset) {
  const Segment* seg = Mapped(source);
  const uint64_t unit = static_cast<uint64_t>(offset) / kUnit;
  if (seg == nullptr || offset < 0 || unit >= seg->units) return;
  seg->flags()[unit].store(1, std::memory_order_release);
}

uint64_t StagingArea::TEST_BytesInUse() {
  std::lock_guard<std::mutex> lock(mu_);
  Reclaim();
  uint64_t units = 0;
  for (const auto& [unit, n] : outstanding_) units += n;
  return units * kUnit;
}

}  // namespace cfx::mpi
