// LookupTable (see lookup_table.h): the argument checks shared by every table, and
// HashLookupTable<K, V, kVector>, an unordered_map from K to one V (or, kVector, to a vector of
// V) for each supported pair of dtypes.
#include "kernels/lookup_table.h"

#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace cfx::internal {
namespace {

// A key or value as TensorFlow's messages print it.
template <typename T>
std::string LookupTableElementString(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else {
    return StrCat(v);
  }
}

template <typename K, typename V, bool kVector>
class HashLookupTable final : public LookupTable {
 public:
  HashLookupTable(std::string name, Kind kind, DataType key_dtype, DataType value_dtype,
                  TensorShape value_shape)
      : LookupTable(std::move(name), kind, key_dtype, value_dtype, std::move(value_shape)),
        initialized_(kind != Kind::kHashTable) {}

  int64_t size() const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return static_cast<int64_t>(map_.size());
  }
  bool initialized() const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return initialized_;
  }

 protected:
  void DoFind(const Tensor& keys, const Tensor& default_value, bool default_per_key,
              Tensor* values) const override {
    const K* k = keys.data<K>();
    const V* defaults = default_value.data<V>();
    V* out = values->data<V>();
    const int64_t n = keys.num_elements(), width = value_size();
    std::shared_lock<std::shared_mutex> lock(mu_);
    for (int64_t i = 0; i < n; ++i) {
      V* dst = out + i * width;
      auto it = map_.find(k[i]);
      if (it != map_.end()) {
        CopyOut(it->second, dst);
      } else {
        const V* src = defaults + (default_per_key ? i * width : 0);
        for (int64_t j = 0; j < width; ++j) dst[j] = src[j];
      }
    }
  }

  void DoInsert(const Tensor& keys, const Tensor& values, bool clear) override {
    const K* k = keys.data<K>();
    const V* v = values.data<V>();
    const int64_t n = keys.num_elements();
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (clear) map_.clear();
    for (int64_t i = 0; i < n; ++i) map_.insert_or_assign(k[i], MakeEntry(v + i * value_size()));
  }

  void DoRemove(const Tensor& keys) override {
    const K* k = keys.data<K>();
    std::unique_lock<std::shared_mutex> lock(mu_);
    for (int64_t i = 0; i < keys.num_elements(); ++i) map_.erase(k[i]);
  }

  Status DoInitialize(const Tensor& keys, const Tensor& values, bool ok_if_initialized) override {
    const K* k = keys.data<K>();
    const V* v = values.data<V>();
    const int64_t n = keys.num_elements();
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      if (initialized_) return AlreadyInitialized(n, ok_if_initialized);
    }
    // Built aside, so that a failed initialization leaves the table as it was.
    Map map;
    map.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      auto [it, inserted] = map.try_emplace(k[i], MakeEntry(v + i * value_size()));
      if (!inserted && !SameEntry(it->second, v + i * value_size()))
        return errors::FailedPrecondition(
            "HashTable has different value for same key. Key ", LookupTableElementString(k[i]),
            " has ", EntryString(it->second), " and trying to add value ",
            EntryString(MakeEntry(v + i * value_size())), " (table ", name(), ")");
    }
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (initialized_) return AlreadyInitialized(n, ok_if_initialized);  // another won the race
    map_ = std::move(map);
    initialized_ = true;
    return Status();
  }

  Status DoExport(Tensor* keys, Tensor* values) const override {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (!initialized_)
      return errors::Aborted("HashTable is not initialized. (table ", name(),
                             ": run its initializer before exporting it)");
    const int64_t n = static_cast<int64_t>(map_.size());
    TensorShape values_shape({n});
    for (int64_t d : value_shape().dims()) CFX_RETURN_IF_ERROR(values_shape.AddDim(d));
    CFX_ASSIGN_OR_RETURN(*keys, Tensor::Allocate(HostAllocator(), key_dtype(), TensorShape({n})));
    CFX_ASSIGN_OR_RETURN(*values, Tensor::Allocate(HostAllocator(), value_dtype(), values_shape));
    K* k = keys->data<K>();
    V* v = values->data<V>();
    int64_t i = 0;
    for (const auto& [key, entry] : map_) {
      k[i] = key;
      CopyOut(entry, v + i * value_size());
      ++i;
    }
    return Status();
  }

 private:
  using Entry = std::conditional_t<kVector, std::vector<V>, V>;
  using Map = std::unordered_map<K, Entry>;

  Entry MakeEntry(const V* src) const {
    if constexpr (kVector) {
      return Entry(src, src + value_size());
    } else {
      return *src;
    }
  }
  void CopyOut(const Entry& e, V* dst) const {
    if constexpr (kVector) {
      for (int64_t j = 0; j < value_size(); ++j) dst[j] = e[j];
    } else {
      *dst = e;
    }
  }
  bool SameEntry(const Entry& e, const V* src) const {
    if constexpr (kVector) {
      for (int64_t j = 0; j < value_size(); ++j)
        if (!(e[j] == src[j])) return false;
      return true;
    } else {
      return e == *src;
    }
  }
  static std::string EntryString(const Entry& e) {
    if constexpr (kVector) {
      std::string s = "[";
      for (size_t j = 0; j < e.size(); ++j)
        s += (j ? ", " : "") + LookupTableElementString(static_cast<V>(e[j]));
      return s + "]";
    } else {
      return LookupTableElementString(e);
    }
  }
  // TensorFlow's rule for a second initialization (AreEntriesSame): as many pairs as entries.
  Status AlreadyInitialized(int64_t pairs, bool ok_if_initialized) const {
    if (ok_if_initialized || pairs == static_cast<int64_t>(map_.size())) return Status();
    return errors::FailedPrecondition("Table was already initialized with different data. (table ",
                                      name(), " holds ", map_.size(), " entries; this "
                                      "initialization brings ", pairs, ")");
  }

  Map map_;           // under mu_
  bool initialized_;  // under mu_; a mutable table is always initialized
};

// HashLookupTable<K, V, kVector> for the kind and value dtype, K fixed.
template <typename K>
StatusOr<LookupTable*> LookupTableWithKey(std::string name, LookupTable::Kind kind,
                                          DataType key_dtype, DataType value_dtype,
                                          const TensorShape& value_shape) {
  auto make = [&]<typename V>() -> LookupTable* {
    if (kind == LookupTable::Kind::kMutableHashTableOfTensors)
      return new HashLookupTable<K, V, true>(std::move(name), kind, key_dtype, value_dtype,
                                             value_shape);
    return new HashLookupTable<K, V, false>(std::move(name), kind, key_dtype, value_dtype,
                                            value_shape);
  };
  switch (value_dtype) {
    case DT_STRING:
      return make.template operator()<std::string>();
    case DT_INT32:
      return make.template operator()<int32_t>();
    case DT_INT64:
      return make.template operator()<int64_t>();
    case DT_FLOAT:
      return make.template operator()<float>();
    case DT_DOUBLE:
      return make.template operator()<double>();
    case DT_BOOL:
      return make.template operator()<bool>();
    default:
      return errors::Internal("unchecked lookup table value dtype ", DataTypeString(value_dtype));
  }
}

bool IsLookupTableKeyType(DataType t) {
  return t == DT_STRING || t == DT_INT32 || t == DT_INT64;
}
bool IsLookupTableValueType(DataType t) {
  return t == DT_STRING || t == DT_INT32 || t == DT_INT64 || t == DT_FLOAT || t == DT_DOUBLE ||
         t == DT_BOOL;
}

}  // namespace

const char* LookupTableKindName(LookupTable::Kind kind) {
  switch (kind) {
    case LookupTable::Kind::kHashTable:
      return "HashTableV2";
    case LookupTable::Kind::kMutableHashTable:
      return "MutableHashTableV2";
    case LookupTable::Kind::kMutableHashTableOfTensors:
      return "MutableHashTableOfTensorsV2";
  }
  return "?";
}

Status LookupTable::CheckSupported(Kind kind, DataType key_dtype, DataType value_dtype,
                                   const PartialTensorShape& value_shape) {
  if (!IsLookupTableKeyType(key_dtype) || !IsLookupTableValueType(value_dtype))
    return errors::InvalidArgument(
        "lookup tables with ", DataTypeString(key_dtype), " keys and ",
        DataTypeString(value_dtype),
        " values are not supported (keys: string, int32, int64; values: string, int32, int64, "
        "float, double, bool)");
  if (kind == Kind::kMutableHashTableOfTensors) {
    // TensorFlow's MutableHashTableOfTensors holds vectors only.
    if (value_shape.rank() != 1 || value_shape.dim(0) < 0)
      return errors::InvalidArgument("Default value must be a vector, got shape ",
                                     value_shape.ToString(),
                                     " (value_shape of a MutableHashTableOfTensorsV2 must be a "
                                     "vector of known length)");
  } else if (value_shape.rank() != 0) {
    return errors::Internal("a ", LookupTableKindName(kind), " has scalar values");
  }
  return Status();
}

StatusOr<LookupTable*> LookupTable::Create(std::string name, Kind kind, DataType key_dtype,
                                           DataType value_dtype, const TensorShape& value_shape) {
  CFX_RETURN_IF_ERROR(CheckSupported(kind, key_dtype, value_dtype, value_shape));
  switch (key_dtype) {
    case DT_STRING:
      return LookupTableWithKey<std::string>(std::move(name), kind, key_dtype, value_dtype,
                                             value_shape);
    case DT_INT32:
      return LookupTableWithKey<int32_t>(std::move(name), kind, key_dtype, value_dtype,
                                         value_shape);
    default:
      return LookupTableWithKey<int64_t>(std::move(name), kind, key_dtype, value_dtype,
                                         value_shape);
  }
}

LookupTable::LookupTable(std::string name, Kind kind, DataType key_dtype, DataType value_dtype,
                         TensorShape value_shape)
    : name_(std::move(name)),
      kind_(kind),
      key_dtype_(key_dtype),
      value_dtype_(value_dtype),
      value_shape_(std::move(value_shape)),
      value_size_(value_shape_.num_elements()) {}

std::string LookupTable::DebugString() const {
  return StrCat(LookupTableKindName(kind_), " ", name_, " (", DataTypeString(key_dtype_), " -> ",
                DataTypeString(value_dtype_),
                value_shape_.rank() > 0 ? " " + value_shape_.ToString() : std::string(), ")");
}

TensorShape LookupTable::ValuesShapeFor(const TensorShape& keys_shape) const {
  TensorShape shape = keys_shape;
  for (int64_t d : value_shape_.dims()) (void)shape.AddDim(d);
  return shape;
}

Status LookupTable::CheckKeys(const Tensor& keys) const {
  if (keys.dtype() != key_dtype_)
    return errors::InvalidArgument("table ", name_, " has ", DataTypeString(key_dtype_),
                                   " keys; got ", DataTypeString(keys.dtype()), " keys");
  return Status();
}

Status LookupTable::CheckKeysAndValues(const Tensor& keys, const Tensor& values) const {
  CFX_RETURN_IF_ERROR(CheckKeys(keys));
  if (values.dtype() != value_dtype_)
    return errors::InvalidArgument("table ", name_, " has ", DataTypeString(value_dtype_),
                                   " values; got ", DataTypeString(values.dtype()), " values");
  const TensorShape expected = ValuesShapeFor(keys.shape());
  if (values.shape() != expected)
    return errors::InvalidArgument("Expected shape ", expected.ToString(), " for value, got ",
                                   values.shape().ToString(), " (table ", name_, ", keys of shape ",
                                   keys.shape().ToString(), ")");
  return Status();
}

Status LookupTable::CheckMutable(const char* what) const {
  if (!initializable()) return Status();
  return errors::Unimplemented(what, " not supported by InitializableLookupTable implementations "
                               "(table ", name_, " is a HashTable, which its initializer fills "
                               "once; use a MutableHashTable)");
}

StatusOr<Tensor> LookupTable::Find(const Tensor& keys, const Tensor& default_value) const {
  CFX_RETURN_IF_ERROR(CheckKeys(keys));
  if (default_value.dtype() != value_dtype_)
    return errors::InvalidArgument("table ", name_, " has ", DataTypeString(value_dtype_),
                                   " values; got a ", DataTypeString(default_value.dtype()),
                                   " default value");
  const TensorShape out_shape = ValuesShapeFor(keys.shape());
  const bool per_key = default_value.shape() != value_shape_;
  if (per_key && default_value.shape() != out_shape)
    return errors::InvalidArgument("Expected shape ", value_shape_.ToString(), " or ",
                                   out_shape.ToString(), " for default value, got ",
                                   default_value.shape().ToString(), " (table ", name_, ")");
  if (!initialized())
    return errors::FailedPrecondition("Table not initialized. (table ", name_,
                                      ": run its initializer, e.g. InitializeTableV2, first)");
  CFX_ASSIGN_OR_RETURN(Tensor values, Tensor::Allocate(HostAllocator(), value_dtype_, out_shape));
  DoFind(keys, default_value, per_key, &values);
  return values;
}

Status LookupTable::Insert(const Tensor& keys, const Tensor& values) {
  CFX_RETURN_IF_ERROR(CheckMutable("Insert"));
  CFX_RETURN_IF_ERROR(CheckKeysAndValues(keys, values));
  DoInsert(keys, values, /*clear=*/false);
  return Status();
}

Status LookupTable::Remove(const Tensor& keys) {
  CFX_RETURN_IF_ERROR(CheckMutable("Remove"));
  CFX_RETURN_IF_ERROR(CheckKeys(keys));
  DoRemove(keys);
  return Status();
}

Status LookupTable::Import(const Tensor& keys, const Tensor& values) {
  if (initializable()) return Initialize(keys, values);
  CFX_RETURN_IF_ERROR(CheckKeysAndValues(keys, values));
  DoInsert(keys, values, /*clear=*/true);
  return Status();
}

StatusOr<std::pair<Tensor, Tensor>> LookupTable::Export() const {
  std::pair<Tensor, Tensor> out;
  CFX_RETURN_IF_ERROR(DoExport(&out.first, &out.second));
  return out;
}

Status LookupTable::CheckInitializable() const {
  if (initializable()) return Status();
  return errors::InvalidArgument("Table ", name_, " is not initializable (a ",
                                 LookupTableKindName(kind_), "; only a HashTableV2 takes an "
                                 "initializer)");
}

Status LookupTable::Initialize(const Tensor& keys, const Tensor& values, bool ok_if_initialized) {
  CFX_RETURN_IF_ERROR(CheckInitializable());
  CFX_RETURN_IF_ERROR(CheckKeysAndValues(keys, values));
  if (keys.num_elements() == 0)
    return errors::InvalidArgument("keys and values cannot be empty tensors. (table ", name_, ")");
  return DoInitialize(keys, values, ok_if_initialized);
}

}  // namespace cfx::internal
