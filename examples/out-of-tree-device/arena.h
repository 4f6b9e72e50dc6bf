// Arena: the device memory of one TOYDEV device. One block, allocated when the device is created
// and owned by the arena, is handed out best-fit from a free list; a freed range merges with its
// free neighbours. A real device would manage its own memory the same way (or leave it to its
// driver); the host only ever sees the pointers, never reads through them (host_addressable = 0).
//
// Thread-safe: Allocate and Free may run concurrently (executor threads allocate, the host frees
// from stream callbacks).
#ifndef TOYDEV_ARENA_H_
#define TOYDEV_ARENA_H_

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace toydev {

class Arena {
 public:
  // Every block starts at a multiple of this (as cudaMalloc's 256 bytes).
  static constexpr size_t kAlignment = 256;

  // An arena of `capacity` bytes (rounded up to kAlignment). The block is reserved here; the
  // caller checks ok() (false when the host has no memory for it).
  explicit Arena(size_t capacity);
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  bool ok() const { return base_ != nullptr; }
  size_t capacity() const { return capacity_; }

  // A block of at least `bytes` (at least one byte, so that empty tensors get a unique pointer),
  // or nullptr when no free range is large enough.
  void* Allocate(size_t bytes);
  // Returns a block from Allocate(bytes), with the same `bytes`.
  void Free(void* ptr, size_t bytes);
  // Whether [ptr + offset, ptr + offset + bytes) lies inside the arena: a check for copies.
  bool Contains(const void* ptr, size_t offset, size_t bytes) const;

  size_t bytes_in_use() const;
  size_t largest_free_block() const;

 private:
  struct FreeWithStd {
    void operator()(std::byte* p) const;
  };
  const size_t capacity_;
  const std::unique_ptr<std::byte, FreeWithStd> base_;

  mutable std::mutex mu_;
  std::map<size_t, size_t> free_;  // offset -> size of each free range; no two touch
  size_t in_use_ = 0;
};

}  // namespace toydev

#endif  // TOYDEV_ARENA_H_
