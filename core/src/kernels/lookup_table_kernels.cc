// Lookup-table kernels with TensorFlow's semantics (lookup_table_op.cc, lookup_table_init_op.cc,
// lookup_util.cc): HashTableV2, MutableHashTableV2 and MutableHashTableOfTensorsV2 make or find a
// LookupTable in the device's ResourceMgr and output its handle; InitializeTableV2 and
// InitializeTableFromTextFileV2 fill a HashTable once; LookupTableFindV2, InsertV2, RemoveV2,
// SizeV2, ExportV2 and ImportV2 work on the table a handle names. CPU kernels; every table method
// is thread-safe (lookup_table.h), so the kernels hold no lock of their own.
//
// The table's name is shared_name; when that is empty, the node's name, whatever
// use_node_name_sharing says. TensorFlow makes such a table private to the node's kernel (its
// ContainerInfo), which its session shares between the executors of all its signatures (the
// OpSegment). Conflux builds kernels per executor and has no such cache, so a kernel-private
// table would not survive from the signature that initializes it to the one that looks it up;
// named by the node, it is shared like the variables and queues without a shared name, by every
// session of the process (Session::Reset with a container clears it). Text files are read whole
// through the file layer; their errors name the file and the line (counted from 1; TensorFlow's
// messages count from 0).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/builtin.h"
#include "kernels/lookup_table.h"
#include "util/file.h"

namespace cfx::internal {
namespace {

using TableKind = LookupTable::Kind;

// The table the handle at input `i` names, on this kernel's device.
StatusOr<RefPtr<LookupTable>> LookupTableFromInput(const KernelContext* c, int i = 0) {
  CFX_ASSIGN_OR_RETURN(ResourceHandle h, HandleFromInput(c, i));
  if (h.device != c->device->full_name())
    return errors::InvalidArgument("lookup table ", h.name, " lives on ", h.device,
                                   "; ops on it must run there, not on ", c->device->full_name());
  return c->device->resource_mgr()->Lookup<LookupTable>(h.container, h.name);
}

// HashTableV2, MutableHashTableV2, MutableHashTableOfTensorsV2.
class LookupTableHandleKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    kind_ = node.op == "HashTableV2"          ? TableKind::kHashTable
            : node.op == "MutableHashTableV2" ? TableKind::kMutableHashTable
                                              : TableKind::kMutableHashTableOfTensors;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "container", &container_));
    std::string shared_name;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "shared_name", &shared_name));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "key_dtype", &key_dtype_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "value_dtype", &value_dtype_));
    PartialTensorShape value_shape(std::vector<int64_t>{});
    if (kind_ == TableKind::kMutableHashTableOfTensors)
      CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "value_shape", &value_shape));
    CFX_RETURN_IF_ERROR(
        LookupTable::CheckSupported(kind_, key_dtype_, value_dtype_, value_shape));
    value_shape_ = TensorShape(value_shape.dims());
    // use_node_name_sharing is not read: without a shared name Conflux always names the table
    // by the node (see the top of the file).
    name_ = shared_name.empty() ? node.name : shared_name;
    return Status();
  }

  void Compute(KernelContext* c) override { c->SetStatus(MakeHandle(c)); }

 private:
  Status MakeHandle(KernelContext* c) const {
    ResourceMgr* resources = c->device->resource_mgr();
    CFX_ASSIGN_OR_RETURN(RefPtr<LookupTable> table,
                         resources->LookupOrCreate<LookupTable>(
                             container_, name_, [&]() -> StatusOr<LookupTable*> {
                               return LookupTable::Create(name_, kind_, key_dtype_, value_dtype_,
                                                          value_shape_);
                             }));
    if (table->key_dtype() != key_dtype_ || table->value_dtype() != value_dtype_)
      return errors::InvalidArgument(
          "Conflicting key/value dtypes ", DataTypeString(key_dtype_), "->",
          DataTypeString(value_dtype_), " with ", DataTypeString(table->key_dtype()), "-",
          DataTypeString(table->value_dtype()), " for table ", name_, " (it exists as ",
          table->DebugString(), ")");
    ResourceHandle h;
    h.device = c->device->full_name();
    h.container = container_;
    h.name = name_;
    h.type = LookupTable::kTypeName;
    SetOutput(c, 0, MakeResourceTensor(h));
    return Status();
  }

  TableKind kind_ = TableKind::kHashTable;
  std::string container_, name_;
  DataType key_dtype_ = DT_INVALID, value_dtype_ = DT_INVALID;
  TensorShape value_shape_;
};

// A kernel on the table named by input 0: Run gets the table and returns the op's status.
class LookupTableOpKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) final {
    c->SetStatus([&]() -> Status {
      CFX_ASSIGN_OR_RETURN(RefPtr<LookupTable> table, LookupTableFromInput(c));
      return Run(c, *table);
    }());
  }

 protected:
  virtual Status Run(KernelContext* c, LookupTable& table) = 0;
};

class InitializeTableKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override {
    const Tensor& keys = c->input(1);
    const Tensor& values = c->input(2);
    CFX_RETURN_IF_ERROR(table.CheckInitializable());
    if (keys.rank() != 1)
      return errors::InvalidArgument("Keys must be a vector, but received shape ",
                                     keys.shape().ToString(), " (table ", table.name(), ")");
    if (values.rank() != 1)
      return errors::InvalidArgument("Values must be a vector, but received shape ",
                                     values.shape().ToString(), " (table ", table.name(), ")");
    if (keys.num_elements() != values.num_elements())
      return errors::InvalidArgument("Keys and values must have the same size ",
                                     keys.num_elements(), " vs ", values.num_elements(),
                                     " (table ", table.name(), ")");
    return table.Initialize(keys, values);
  }
};

// What a column index of InitializeTableFromTextFileV2 selects.
constexpr int64_t kLineNumber = -1;
constexpr int64_t kWholeLine = -2;

std::string_view LookupTableTrimSpace(std::string_view s) {
  auto space = [](char ch) { return ch == ' ' || (ch >= '\t' && ch <= '\r'); };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// TensorFlow's safe_strto64: optional spaces around an optionally signed decimal integer.
bool LookupTableParseInt64(std::string_view token, int64_t* out) {
  std::string_view s = LookupTableTrimSpace(token);
  if (s.empty()) return false;
  bool negative = false;
  if (s.front() == '+' || s.front() == '-') {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  uint64_t value = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(ch - '0');
    if (value > (limit - digit) / 10) return false;
    value = value * 10 + digit;
  }
  *out = negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
  return true;
}

// TensorFlow's safe_strtof / safe_strtod: spaces around a decimal number, inf or nan (not hex).
template <typename T>
bool LookupTableParseFloat(std::string_view token, T* out) {
  const std::string s(LookupTableTrimSpace(token));
  if (s.empty() || s.find_first_of("xX") != std::string::npos) return false;
  char* end = nullptr;
  errno = 0;
  const T value = std::is_same_v<T, float> ? std::strtof(s.c_str(), &end)
                                            : static_cast<T>(std::strtod(s.c_str(), &end));
  if (end != s.c_str() + s.size()) return false;
  *out = value;
  return true;
}

// Element i of `t` from `line` (the line's fields are `tokens`) by `index` (a column,
// kLineNumber or kWholeLine), as TensorFlow's TextFileLineIterator::SetValue: int32 fields and
// line numbers get `offset` added, int64 fields do not.
Status LookupTableSetField(const std::string& path, int64_t line_number, std::string_view line,
                           const std::vector<std::string_view>& tokens, int64_t index,
                           int64_t offset, Tensor* t, int64_t i) {
  if (index == kLineNumber) {
    t->data<int64_t>()[i] = line_number + offset;
    return Status();
  }
  const std::string_view token = index == kWholeLine ? line : tokens[index];
  auto invalid = [&](const char* what) {
    return errors::InvalidArgument("Field ", token, " in line ", line_number + 1, " of ", path,
                                   " is not a valid ", what, ".");
  };
  switch (t->dtype()) {
    case DT_INT32: {
      int64_t v = 0;
      if (!LookupTableParseInt64(token, &v) || v < INT32_MIN || v > INT32_MAX)
        return invalid("int32");
      t->data<int32_t>()[i] = static_cast<int32_t>(v + offset);
      return Status();
    }
    case DT_INT64: {
      int64_t v = 0;
      if (!LookupTableParseInt64(token, &v)) return invalid("int64");
      t->data<int64_t>()[i] = v;
      return Status();
    }
    case DT_FLOAT: {
      float v = 0;
      if (!LookupTableParseFloat(token, &v)) return invalid("float");
      t->data<float>()[i] = v;
      return Status();
    }
    case DT_DOUBLE: {
      double v = 0;
      if (!LookupTableParseFloat(token, &v)) return invalid("double");
      t->data<double>()[i] = v;
      return Status();
    }
    case DT_STRING:
      t->data<std::string>()[i] = std::string(token);
      return Status();
    default:
      return errors::InvalidArgument("Data type ", DataTypeString(t->dtype()),
                                     " not supported. (a text file holds no ",
                                     DataTypeString(t->dtype()), " fields)");
  }
}

class InitializeTableFromTextFileKernel final : public LookupTableOpKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "key_index", &key_index_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "value_index", &value_index_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "vocab_size", &vocab_size_));
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "offset", &offset_));
    std::string delimiter;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "delimiter", &delimiter));
    if (delimiter.size() != 1)
      return errors::InvalidArgument("delimiter should be only 1 char, got \"", delimiter, "\"");
    delimiter_ = delimiter[0];
    return Status();
  }

 private:
  Status Run(KernelContext* c, LookupTable& table) override {
    const Tensor& filename = c->input(1);
    if (filename.rank() != 0)
      return errors::InvalidArgument("filename should be a single string, but got ",
                                     filename.shape().ToString());
    const std::string& path = filename.at<std::string>(0);
    if (path.empty()) return errors::InvalidArgument("filename cannot be empty.");
    CFX_RETURN_IF_ERROR(table.CheckInitializable());
    CFX_RETURN_IF_ERROR(CheckIndices(table));
    // TensorFlow ignores a text-file initialization of an initialized table (its shared name
    // should hold the file's, so that one table is not filled from two files).
    if (table.initialized()) return Status();
    CFX_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(path));
    Tensor keys, values;
    CFX_RETURN_IF_ERROR(Parse(path, contents, table, &keys, &values));
    return table.Initialize(keys, values, /*ok_if_initialized=*/true);
  }

  // TensorFlow's checks of what the indices select against the table's dtypes.
  Status CheckIndices(const LookupTable& table) const {
    const DataType k = table.key_dtype(), v = table.value_dtype();
    auto integer_or_string = [](DataType t) { return IsIntegerType(t) || t == DT_STRING; };
    if (key_index_ == kLineNumber && k != DT_INT64)
      return errors::InvalidArgument(
          "Key index for line number requires table key dtype of int64, got ",
          DataTypeString(k), " (table ", table.name(), ")");
    if (key_index_ == kWholeLine && !integer_or_string(k))
      return errors::InvalidArgument(
          "Key index for whole line requires string or integer table key, got ",
          DataTypeString(k), " (table ", table.name(), ")");
    if (value_index_ == kLineNumber && v != DT_INT64)
      return errors::InvalidArgument(
          "Value index for line number requires table value dtype of int64, got ",
          DataTypeString(v), " (table ", table.name(), ")");
    if (value_index_ == kWholeLine && !integer_or_string(v))
      return errors::InvalidArgument(
          "Value index for whole line requires table value dtype of integer or string, got ",
          DataTypeString(v), " (table ", table.name(), ")");
    return Status();
  }

  // The keys and values of the file's lines (up to vocab_size of them, when given).
  Status Parse(const std::string& path, std::string_view contents, const LookupTable& table,
               Tensor* keys, Tensor* values) const {
    // The lines, as TensorFlow's InputBuffer::ReadLine cuts them: at '\n', without a '\r'
    // before it, the last one without a '\n' of its own.
    std::vector<std::string_view> lines;
    while (!contents.empty() && (vocab_size_ < 0 || static_cast<int64_t>(lines.size()) < vocab_size_)) {
      const size_t eol = contents.find('\n');
      std::string_view line = contents.substr(0, eol);
      contents.remove_prefix(eol == std::string_view::npos ? contents.size() : eol + 1);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines.push_back(line);
    }
    const int64_t n = static_cast<int64_t>(lines.size());
    if (vocab_size_ >= 0 && n < vocab_size_)
      return errors::InvalidArgument("Invalid vocab_size in ", path, ": expected ", vocab_size_,
                                     " but got ", n);
    if (n == 0)
      return errors::OutOfRange(path, " has no lines to initialize table ", table.name(),
                                " with");
    CFX_ASSIGN_OR_RETURN(*keys, Tensor::Allocate(HostAllocator(), table.key_dtype(), TensorShape({n})));
    CFX_ASSIGN_OR_RETURN(*values,
                         Tensor::Allocate(HostAllocator(), table.value_dtype(), TensorShape({n})));
    const int64_t columns = std::max(key_index_, value_index_) + 1;
    std::vector<std::string_view> tokens;
    for (int64_t i = 0; i < n; ++i) {
      const std::string_view line = lines[i];
      if (line.empty())
        return errors::InvalidArgument("Invalid content in ", path, ": empty line found at line ",
                                       i + 1, ".");
      tokens.clear();
      if (columns > 0) {
        for (size_t start = 0;;) {
          const size_t end = line.find(delimiter_, start);
          tokens.push_back(line.substr(start, end - start));
          if (end == std::string_view::npos) break;
          start = end + 1;
        }
        if (static_cast<int64_t>(tokens.size()) < columns)
          return errors::InvalidArgument("Invalid number of columns in ", path, " line ", i + 1,
                                         " (", line, ") : expected at least ", columns, " got ",
                                         tokens.size());
      }
      CFX_RETURN_IF_ERROR(
          LookupTableSetField(path, i, line, tokens, key_index_, offset_, keys, i));
      CFX_RETURN_IF_ERROR(
          LookupTableSetField(path, i, line, tokens, value_index_, offset_, values, i));
    }
    return Status();
  }

  int64_t key_index_ = 0, value_index_ = 0, vocab_size_ = -1, offset_ = 0;
  char delimiter_ = '\t';
};

class LookupTableFindKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override {
    CFX_ASSIGN_OR_RETURN(Tensor values, table.Find(c->input(1), c->input(2)));
    SetOutput(c, 0, std::move(values));
    return Status();
  }
};

class LookupTableInsertKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override {
    return table.Insert(c->input(1), c->input(2));
  }
};

class LookupTableRemoveKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override { return table.Remove(c->input(1)); }
};

class LookupTableSizeKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override {
    SetOutput(c, 0, Tensor::Scalar<int64_t>(DT_INT64, table.size()));
    return Status();
  }
};

class LookupTableExportKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override {
    if (c->output_type(0) != table.key_dtype() || c->output_type(1) != table.value_dtype())
      return errors::InvalidArgument(
          "table ", table.name(), " has ", DataTypeString(table.key_dtype()), " keys and ",
          DataTypeString(table.value_dtype()), " values; this node exports Tkeys ",
          DataTypeString(c->output_type(0)), " and Tvalues ", DataTypeString(c->output_type(1)));
    CFX_ASSIGN_OR_RETURN(auto exported, table.Export());
    SetOutput(c, 0, std::move(exported.first));
    SetOutput(c, 1, std::move(exported.second));
    return Status();
  }
};

class LookupTableImportKernel final : public LookupTableOpKernel {
  Status Run(KernelContext* c, LookupTable& table) override {
    return table.Import(c->input(1), c->input(2));
  }
};

}  // namespace

void RegisterLookupTableKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  const uint32_t cheap = kKernelInexpensive;
  for (const char* op : {"HashTableV2", "MutableHashTableV2", "MutableHashTableOfTensorsV2"})
    reg(BuiltinKernelDef<LookupTableHandleKernel>(op, "CPU", false, cheap, {"table_handle"}));
  reg(BuiltinKernelDef<InitializeTableKernel>("InitializeTableV2", "CPU", false, 0,
                                              {"table_handle"}));
  // Reads a file: not inexpensive.
  reg(BuiltinKernelDef<InitializeTableFromTextFileKernel>("InitializeTableFromTextFileV2", "CPU",
                                                          false, 0, {"table_handle"}));
  reg(BuiltinKernelDef<LookupTableFindKernel>("LookupTableFindV2", "CPU", false, 0,
                                              {"table_handle"}));
  reg(BuiltinKernelDef<LookupTableInsertKernel>("LookupTableInsertV2", "CPU", false, 0,
                                                {"table_handle"}));
  reg(BuiltinKernelDef<LookupTableRemoveKernel>("LookupTableRemoveV2", "CPU", false, 0,
                                                {"table_handle"}));
  reg(BuiltinKernelDef<LookupTableSizeKernel>("LookupTableSizeV2", "CPU", false, cheap,
                                              {"table_handle"}));
  reg(BuiltinKernelDef<LookupTableExportKernel>("LookupTableExportV2", "CPU", false, 0,
                                                {"table_handle"}));
  reg(BuiltinKernelDef<LookupTableImportKernel>("LookupTableImportV2", "CPU", false, 0,
                                                {"table_handle"}));
}

}  // namespace cfx::internal
