// TensorFlow's tensor-bundle checkpoint format (docs/checkpoint-format.md), read and written as
// TensorFlow does, so that `tf.train.load_checkpoint` reads what SaveV2 writes here and RestoreV2
// restores what TensorFlow's savers wrote:
//
//   <prefix>.index                   a sorted key/value table (LevelDB's table layout, blocks
//                                    with masked CRC-32C trailers); key "" holds the
//                                    BundleHeaderProto, every other key a BundleEntryProto
//   <prefix>.data-00000-of-00001     the tensors' bytes, back to back
//
//   BundleWriter w(env, "logs/model.ckpt-100");
//   CFX_RETURN_IF_ERROR(w.Add("dense/kernel", kernel));
//   CFX_RETURN_IF_ERROR(w.Finish());                      // data file, then the index
//   CFX_ASSIGN_OR_RETURN(auto r, BundleReader::Open("logs/model.ckpt-100"));
//   CFX_ASSIGN_OR_RETURN(Tensor t, r->Read("dense/kernel"));
//
// Writes go through an Env: each file is written aside, synced and renamed into place, the data
// file before the index, so a checkpoint exists once its index does. Every read checks the
// checksum of what it read (table blocks, tensor bytes, string lengths) and every length and
// offset against the file it points into; errors name the file and the tensor.
// Thread-safety: a BundleReader's const methods may run concurrently.
#ifndef CONFLUX_CORE_SRC_CHECKPOINT_TENSOR_BUNDLE_H_
#define CONFLUX_CORE_SRC_CHECKPOINT_TENSOR_BUNDLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint_list.h"
#include "conflux/env.h"
#include "conflux/status.h"
#include "conflux/tensor.h"
#include "proto/tensor_bundle.pb.h"

namespace cfx::internal::bundle {

// "<prefix>.index" and "<prefix>.data-<shard>-of-<num_shards>" (five digits each).
std::string MetaFilename(std::string_view prefix);
std::string DataFilename(std::string_view prefix, int shard, int num_shards);

// ---- The table (tensorflow/core/lib/io/table_builder, format) ----

// The bytes of a table holding `entries`, which must be sorted by key (bytewise) and unique:
// uncompressed blocks of about `block_size` bytes, as TensorFlow's TableBuilder lays them out.
std::string BuildTable(const std::vector<std::pair<std::string, std::string>>& entries,
                       size_t block_size = 262144);
// The entries of the table `file` (the bytes of `path`, named in errors), in key order.
// DataLoss for a truncated or corrupted table; Unimplemented for a compressed block.
StatusOr<std::vector<std::pair<std::string, std::string>>> ParseTable(std::string_view file,
                                                                     const std::string& path);

// ---- Slices (tensorflow/core/framework/tensor_slice) ----

// One extent per dimension: (start, length), length -1 for the whole dimension.
struct TensorSlice {
  std::vector<std::pair<int64_t, int64_t>> extents;
  int rank() const { return static_cast<int>(extents.size()); }
  bool IsFullAt(int d) const { return extents[d].second == -1; }
  // The start and length of dimension d within a tensor whose dimension is `size`.
  int64_t start(int d) const { return IsFullAt(d) ? 0 : extents[d].first; }
  int64_t length(int d, int64_t size) const { return IsFullAt(d) ? size : extents[d].second; }
};

// A `shape_and_slices` element of SaveV2/RestoreV2: "" (the whole tensor), or the full shape's
// dims and a slice spec, "6 4 0,2:-" (rows 0-1 of a 6x4 tensor; "-" is a whole dimension).
struct ShapeAndSlice {
  bool whole = true;
  TensorShape full_shape;
  TensorSlice slice;
  TensorShape slice_shape;  // the shape of the slice's values
};
StatusOr<ShapeAndSlice> ParseShapeAndSlice(std::string_view spec);
// The key a slice's values are stored under (checkpoint::EncodeTensorNameSlice: OrderedCode).
std::string EncodeTensorNameSlice(const std::string& name, const TensorSlice& slice);
// "0,2:-"
std::string SliceString(const TensorSlice& slice);

// ---- Writing ----

class BundleWriter {
 public:
  BundleWriter(Env* env, std::string prefix);
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // Appends `t` (host memory; numeric, bool or string) under `key`. InvalidArgument for a
  // duplicate or empty key, or a dtype a checkpoint cannot hold.
  Status Add(const std::string& key, const Tensor& t);
  // Appends the values `t` of `slice` of the tensor `key` whose full shape is `full_shape`.
  Status AddSlice(const std::string& key, const TensorShape& full_shape, const TensorSlice& slice,
                  const Tensor& t);
  // Writes the data file and then the index (each aside, synced, renamed); the first error of
  // Add or of the writes. The writer is spent afterwards.
  Status Finish();

 private:
  Status Append(std::string_view bytes);

  Env* env_;
  std::string prefix_;
  std::string data_tmp_;
  std::unique_ptr<WritableFile> data_;
  int64_t size_ = 0;
  uint32_t crc_ = 0;  // of the tensor being appended
  Status status_;
  std::map<std::string, conflux::BundleEntryProto> entries_;
};

// ---- Reading ----

using BundleVariable = CheckpointVariable;

class BundleReader {
 public:
  // NotFound when `<prefix>.index` does not exist; DataLoss for a corrupt index; Unimplemented
  // for a big-endian bundle or a newer format version.
  static StatusOr<std::unique_ptr<BundleReader>> Open(const std::string& prefix);
  ~BundleReader();
  BundleReader(const BundleReader&) = delete;
  BundleReader& operator=(const BundleReader&) = delete;

  const std::string& prefix() const { return prefix_; }
  const conflux::BundleHeaderProto& header() const { return header_; }
  // The entry of `key`; NotFound naming the index file and a few of the keys it holds.
  StatusOr<const conflux::BundleEntryProto*> Find(const std::string& key) const;
  // The tensor `key`, whole (a tensor saved as slices is assembled from them).
  StatusOr<Tensor> Read(const std::string& key) const;
  // The values of `slice` of tensor `key`, whose full shape must be `full_shape`.
  StatusOr<Tensor> ReadSlice(const std::string& key, const TensorShape& full_shape,
                             const TensorSlice& slice) const;
  // Every tensor, sorted by name (the keys of slices left out), with dtype and full shape.
  std::vector<BundleVariable> List() const;
  // Every entry, the header's key "" left out, slice keys included (for merges and tests).
  const std::map<std::string, conflux::BundleEntryProto>& entries() const { return entries_; }

 private:
  BundleReader() = default;
  StatusOr<Tensor> ReadEntry(const std::string& key, const conflux::BundleEntryProto& e) const;
  StatusOr<int> DataFile(int shard) const;

  std::string prefix_;
  conflux::BundleHeaderProto header_;
  std::map<std::string, conflux::BundleEntryProto> entries_;
  mutable std::mutex mu_;
  mutable std::vector<int> fds_;  // per shard, -1 until opened
  mutable std::vector<int64_t> sizes_;
};

// Merges the bundles `prefixes` into one at `merged` (MergeV2Checkpoints): their data files are
// renamed to `merged`'s, one index is written for all, and the indexes of `prefixes` deleted
// (with their folders, when `delete_old_dirs` and they are empty). A tensor in two bundles is
// an error unless both hold slices of it; `allow_missing_files` skips prefixes without an index.
Status MergeBundles(Env* env, const std::vector<std::string>& prefixes, const std::string& merged,
                    bool delete_old_dirs, bool allow_missing_files);

// True when `prefix` names a tensor bundle (its index exists).
bool BundleExists(const std::string& prefix);

}  // namespace cfx::internal::bundle

#endif  // CONFLUX_CORE_SRC_CHECKPOINT_TENSOR_BUNDLE_H_
