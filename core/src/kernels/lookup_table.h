// LookupTable: the resource behind TensorFlow's lookup-table handles (HashTableV2,
// MutableHashTableV2, MutableHashTableOfTensorsV2), held by a device's ResourceMgr under
// (container, shared name) like variables and queues. All three kinds share one resource type, as
// TensorFlow's LookupInterface, so a handle of one op may name a table another op made when their
// dtypes agree.
//
// Keys are scalars of string, int32 or int64; values are scalars (or, for the tables of tensors,
// vectors of value_shape) of string, int32, int64, float, double or bool. A HashTable is filled
// once by an initializer and read-only after it; the mutable kinds take Insert, Remove and Import
// at any time. Every method is thread-safe: lookups share the table's lock, updates hold it
// alone.
//
// Errors name the table and what was expected; the kernels prefix the node.
#ifndef CONFLUX_CORE_SRC_KERNELS_LOOKUP_TABLE_H_
#define CONFLUX_CORE_SRC_KERNELS_LOOKUP_TABLE_H_

#include <shared_mutex>
#include <string>
#include <utility>

#include "conflux/status.h"
#include "conflux/tensor.h"
#include "state/resource_mgr.h"

namespace cfx::internal {

class LookupTable : public ResourceBase {
 public:
  static constexpr const char* kTypeName = "LookupTable";
  enum class Kind { kHashTable, kMutableHashTable, kMutableHashTableOfTensors };

  // A new empty table (the caller owns its one reference). value_shape is [] for the scalar kinds
  // and a vector shape for kMutableHashTableOfTensors. InvalidArgument for an unsupported dtype
  // or value shape.
  static StatusOr<LookupTable*> Create(std::string name, Kind kind, DataType key_dtype,
                                       DataType value_dtype, const TensorShape& value_shape);
  // OK when tables of these dtypes (and value shape, for `kind`) can be made.
  static Status CheckSupported(Kind kind, DataType key_dtype, DataType value_dtype,
                               const PartialTensorShape& value_shape);

  std::string DebugString() const override;
  const std::string& name() const { return name_; }
  Kind kind() const { return kind_; }
  DataType key_dtype() const { return key_dtype_; }
  DataType value_dtype() const { return value_dtype_; }
  const TensorShape& value_shape() const { return value_shape_; }
  // Whether an initializer fills this table (a HashTable).
  bool initializable() const { return kind_ == Kind::kHashTable; }
  // OK for a HashTable; InvalidArgument "Table <name> is not initializable" for the others.
  Status CheckInitializable() const;

  // The number of entries (0 for a HashTable not initialized yet).
  virtual int64_t size() const = 0;
  // Whether a HashTable's initializer has run (true for the mutable kinds).
  virtual bool initialized() const = 0;

  // The value of every key: keys.shape + value_shape, from `default_value` for absent keys.
  // default_value has shape value_shape (one default for all) or keys.shape + value_shape (one
  // per key). FailedPrecondition "Table not initialized." for a HashTable before its initializer.
  StatusOr<Tensor> Find(const Tensor& keys, const Tensor& default_value) const;
  // table[keys[i]] = values[i] (the last of equal keys wins); values.shape = keys.shape +
  // value_shape. Unimplemented for a HashTable.
  Status Insert(const Tensor& keys, const Tensor& values);
  // Removes `keys`; absent ones are ignored. Unimplemented for a HashTable.
  Status Remove(const Tensor& keys);
  // Replaces the contents with keys -> values (a checkpoint's restore). For a HashTable it is
  // an initialization (see Initialize).
  Status Import(const Tensor& keys, const Tensor& values);
  // Every key ([size]) and its value ([size] + value_shape), in no particular order. Aborted for
  // a HashTable not initialized yet.
  StatusOr<std::pair<Tensor, Tensor>> Export() const;
  // A HashTable's initialization with keys[i] -> values[i], all or nothing: FailedPrecondition
  // when two equal keys have different values, InvalidArgument when there are none. Once
  // initialized, the table stays as it is: as TensorFlow's, a later call succeeds without effect
  // when it brings as many pairs as the table has entries, and fails with FailedPrecondition
  // otherwise, unless `ok_if_initialized` (the text-file initializer, which TensorFlow lets
  // succeed on an initialized table).
  Status Initialize(const Tensor& keys, const Tensor& values, bool ok_if_initialized = false);

 protected:
  LookupTable(std::string name, Kind kind, DataType key_dtype, DataType value_dtype,
              TensorShape value_shape);

  // The typed operations, arguments checked. value_size is value_shape's element count.
  virtual void DoFind(const Tensor& keys, const Tensor& default_value, bool default_per_key,
                      Tensor* values) const = 0;
  virtual void DoInsert(const Tensor& keys, const Tensor& values, bool clear) = 0;
  virtual void DoRemove(const Tensor& keys) = 0;
  virtual Status DoInitialize(const Tensor& keys, const Tensor& values, bool ok_if_initialized) = 0;
  virtual Status DoExport(Tensor* keys, Tensor* values) const = 0;

  int64_t value_size() const { return value_size_; }
  // Lock order: only this lock; it is never held while calling out.
  mutable std::shared_mutex mu_;

 private:
  Status CheckKeys(const Tensor& keys) const;
  // Dtypes of both and values.shape == keys.shape + value_shape.
  Status CheckKeysAndValues(const Tensor& keys, const Tensor& values) const;
  Status CheckMutable(const char* what) const;
  TensorShape ValuesShapeFor(const TensorShape& keys_shape) const;

  const std::string name_;
  const Kind kind_;
  const DataType key_dtype_, value_dtype_;
  const TensorShape value_shape_;
  const int64_t value_size_;
};

// The op name of each kind ("HashTableV2", ...), for messages.
const char* LookupTableKindName(LookupTable::Kind kind);

}  // namespace cfx::internal

#endif  // CONFLUX_CORE_SRC_KERNELS_LOOKUP_TABLE_H_
