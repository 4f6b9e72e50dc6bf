// String kernels with TensorFlow's semantics (string_join_op.cc, string_length_op.cc,
// string_lower_op.cc, string_upper_op.cc, regex_full_match_op.cc): StringJoin, StringLength,
// StringLower, StringUpper, StaticRegexFullMatch and RegexFullMatch, and Select, SelectV2 and
// Pack of strings, on the CPU. Case mapping
// with encoding "utf-8" is ICU's, from generated tables (util/unicode.h); regexes have RE2's
// syntax, matched by std::wregex (util/regex.h says what is covered). Kernels hold no per-call
// state; RegexFullMatch keeps its last compiled pattern under a lock.
#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/builtin.h"
#include "util/regex.h"
#include "util/unicode.h"

namespace cfx::internal {
namespace {

// A string output of `shape`, or the allocation's error.
StatusOr<Tensor> StringOpOutput(DataType dtype, const TensorShape& shape) {
  return Tensor::Allocate(HostAllocator(), dtype, shape);
}

class StringJoinKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "separator", &separator_);
  }
  void Compute(KernelContext* c) override { c->SetStatus(Join(c)); }

 private:
  // Scalars broadcast; every other input has the same shape (TensorFlow broadcasts nothing
  // else).
  Status Join(KernelContext* c) const {
    const Tensor* shaped = nullptr;
    for (int i = 0; i < c->num_inputs; ++i) {
      const Tensor& t = c->input(i);
      if (t.rank() == 0) continue;
      if (shaped == nullptr) {
        shaped = &t;
      } else if (t.shape() != shaped->shape()) {
        return errors::InvalidArgument("Input shapes do not match: ", shaped->shape().ToString(),
                                       " vs. ", t.shape().ToString(), " (input ", i,
                                       "; only scalars broadcast)");
      }
    }
    CFX_ASSIGN_OR_RETURN(Tensor out, StringOpOutput(DT_STRING, shaped != nullptr
                                                                   ? shaped->shape()
                                                                   : TensorShape()));
    for (int64_t k = 0; k < out.num_elements(); ++k) {
      std::string& s = out.data<std::string>()[k];
      for (int i = 0; i < c->num_inputs; ++i) {
        const Tensor& t = c->input(i);
        if (i > 0) s += separator_;
        s += t.data<std::string>()[t.rank() == 0 ? 0 : k];
      }
    }
    SetOutput(c, 0, std::move(out));
    return Status();
  }

  std::string separator_;
};

class StringLengthKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    std::string unit;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "unit", &unit));
    utf8_chars_ = unit == "UTF8_CHAR";
    return Status();
  }
  void Compute(KernelContext* c) override {
    const Tensor& in = c->input(0);
    auto out = StringOpOutput(DT_INT32, in.shape());
    if (!out.ok()) return c->SetStatus(out.status());
    for (int64_t k = 0; k < in.num_elements(); ++k) {
      const std::string& s = in.data<std::string>()[k];
      int64_t length = static_cast<int64_t>(s.size());
      if (utf8_chars_) {
        // TensorFlow counts the bytes that start a character: all but continuation bytes, so an
        // ill-formed byte counts as one character.
        length = 0;
        for (char ch : s) length += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
      }
      out->data<int32_t>()[k] = static_cast<int32_t>(length);
    }
    SetOutput(c, 0, *std::move(out));
  }

 private:
  bool utf8_chars_ = false;
};

// StringLower and StringUpper.
class StringCaseKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    upper_ = node.op == "StringUpper";
    std::string encoding;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "encoding", &encoding));
    if (!encoding.empty() && encoding != "utf-8")
      return errors::InvalidArgument(
          "only utf-8 or '' (no encoding) is supported, received ", encoding);
    utf8_ = !encoding.empty();
    return Status();
  }
  void Compute(KernelContext* c) override {
    const Tensor& in = c->input(0);
    auto out = StringOpOutput(DT_STRING, in.shape());
    if (!out.ok()) return c->SetStatus(out.status());
    for (int64_t k = 0; k < in.num_elements(); ++k) {
      const std::string& s = in.data<std::string>()[k];
      std::string& r = out->data<std::string>()[k];
      if (utf8_) {
        r = upper_ ? Utf8ToUpper(s) : Utf8ToLower(s);
        continue;
      }
      // No encoding: ASCII letters only; every other byte is kept.
      r = s;
      for (char& ch : r) {
        if (upper_ && ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
        if (!upper_ && ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
      }
    }
    SetOutput(c, 0, *std::move(out));
  }

 private:
  bool upper_ = false, utf8_ = false;
};

// out[k] = whether input[k] matches `regex` as a whole.
Status StringOpFullMatch(KernelContext* c, const FullMatchRegex& regex) {
  const Tensor& in = c->input(0);
  CFX_ASSIGN_OR_RETURN(Tensor out, StringOpOutput(DT_BOOL, in.shape()));
  for (int64_t k = 0; k < in.num_elements(); ++k) {
    CFX_ASSIGN_OR_RETURN(bool match, regex.FullMatch(in.data<std::string>()[k]));
    out.data<bool>()[k] = match;
  }
  SetOutput(c, 0, std::move(out));
  return Status();
}

class StaticRegexFullMatchKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    std::string pattern;
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "pattern", &pattern));
    CFX_ASSIGN_OR_RETURN(regex_, FullMatchRegex::Compile(pattern));
    return Status();
  }
  void Compute(KernelContext* c) override { c->SetStatus(StringOpFullMatch(c, *regex_)); }

 private:
  std::unique_ptr<FullMatchRegex> regex_;
};

class RegexFullMatchKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override { c->SetStatus(Match(c)); }

 private:
  Status Match(KernelContext* c) {
    const Tensor& pattern = c->input(1);
    if (pattern.rank() != 0)
      return errors::InvalidArgument("Pattern must be scalar, but received ",
                                     pattern.shape().ToString());
    CFX_ASSIGN_OR_RETURN(std::shared_ptr<const FullMatchRegex> regex,
                         Compiled(pattern.at<std::string>(0)));
    return StringOpFullMatch(c, *regex);
  }

  // The compiled `pattern`: the last one when it is the same (a graph's pattern rarely changes).
  StatusOr<std::shared_ptr<const FullMatchRegex>> Compiled(const std::string& pattern) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (last_ != nullptr && last_->pattern() == pattern) return last_;
    }
    CFX_ASSIGN_OR_RETURN(std::unique_ptr<FullMatchRegex> compiled, FullMatchRegex::Compile(pattern));
    std::shared_ptr<const FullMatchRegex> shared = std::move(compiled);
    std::lock_guard<std::mutex> lock(mu_);
    last_ = shared;
    return shared;
  }

  std::mutex mu_;
  std::shared_ptr<const FullMatchRegex> last_;  // under mu_
};

// Select and SelectV2 of strings (the CPU plugin's kernels move fixed-size elements; a
// SavedModel's save graph picks its temporary file name with a string SelectV2). Select's
// condition is a scalar, the shape of t and e, or a vector picking their rows; SelectV2
// broadcasts all three NumPy-style.
template <bool kV2>
class StringSelectKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override { c->SetStatus(Select(c)); }

 private:
  static Status Select(KernelContext* c) {
    const Tensor &cond = c->input(0), &t = c->input(1), &e = c->input(2);
    if (cond.dtype() != DT_BOOL || t.dtype() != DT_STRING || e.dtype() != DT_STRING)
      return errors::InvalidArgument("Select of strings takes a bool condition and string t, e");
    std::vector<int64_t> shape;
    std::vector<std::vector<int64_t>> strides;  // per input, per output dimension (0: broadcast)
    if (kV2) {
      CFX_RETURN_IF_ERROR(Broadcast({&cond, &t, &e}, &shape, &strides));
    } else {
      if (t.shape() != e.shape())
        return errors::InvalidArgument("'t' and 'e' must have the same shape, got ",
                                       t.shape().ToString(), " and ", e.shape().ToString());
      const bool rows = cond.rank() == 1 && t.rank() > 1 && cond.dim(0) == t.dim(0);
      if (cond.rank() != 0 && cond.shape() != t.shape() && !(cond.rank() == 1 && rows))
        return errors::InvalidArgument("condition must be a scalar, of t's shape ",
                                       t.shape().ToString(), " or a vector of its first "
                                       "dimension; got ", cond.shape().ToString());
      shape = t.shape().dims();
      std::vector<int64_t> full(shape.size());
      for (size_t d = shape.size(), step = 1; d-- > 0;) {
        full[d] = static_cast<int64_t>(step);
        step *= static_cast<size_t>(shape[d]);
      }
      std::vector<int64_t> of_cond(shape.size(), 0);
      if (cond.rank() != 0) of_cond = rows ? std::vector<int64_t>(shape.size(), 0) : full;
      if (rows) of_cond[0] = 1;
      strides = {of_cond, full, full};
    }
    CFX_ASSIGN_OR_RETURN(Tensor out, StringOpOutput(DT_STRING, TensorShape(shape)));
    const int64_t n = out.num_elements();
    const int rank = static_cast<int>(shape.size());
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    for (int64_t k = 0; k < n; ++k) {
      int64_t at[3] = {0, 0, 0};
      for (int d = 0; d < rank; ++d)
        for (int i = 0; i < 3; ++i) at[i] += index[static_cast<size_t>(d)] * strides[static_cast<size_t>(i)][static_cast<size_t>(d)];
      out.data<std::string>()[k] =
          cond.data<bool>()[at[0]] ? t.data<std::string>()[at[1]] : e.data<std::string>()[at[2]];
      for (int d = rank; d-- > 0;) {  // the next output index
        if (++index[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
    SetOutput(c, 0, std::move(out));
    return Status();
  }

  // The broadcast shape of `inputs` (aligned on the right) and each input's element strides per
  // output dimension, 0 where it broadcasts.
  static Status Broadcast(const std::vector<const Tensor*>& inputs, std::vector<int64_t>* shape,
                          std::vector<std::vector<int64_t>>* strides) {
    size_t rank = 0;
    for (const Tensor* t : inputs) rank = std::max(rank, static_cast<size_t>(t->rank()));
    shape->assign(rank, 1);
    for (const Tensor* t : inputs)
      for (int d = 0; d < t->rank(); ++d) {
        int64_t& o = (*shape)[rank - static_cast<size_t>(t->rank()) + static_cast<size_t>(d)];
        const int64_t v = t->dim(d);
        if (v == o || v == 1) continue;
        if (o != 1)
          return errors::InvalidArgument("condition, t and e do not broadcast: ",
                                         inputs[0]->shape().ToString(), ", ",
                                         inputs[1]->shape().ToString(), ", ",
                                         inputs[2]->shape().ToString());
        o = v;
      }
    for (const Tensor* t : inputs) {
      std::vector<int64_t> st(rank, 0);
      int64_t step = 1;
      for (int d = t->rank(); d-- > 0;) {
        if (t->dim(d) != 1) st[rank - static_cast<size_t>(t->rank()) + static_cast<size_t>(d)] = step;
        step *= t->dim(d);
      }
      strides->push_back(std::move(st));
    }
    return Status();
  }
};

// Pack of strings (a save graph packs its shard prefixes for MergeV2Checkpoints): the N inputs,
// of one shape, stacked along a new dimension `axis`.
class StringPackKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    return GetNodeAttr(node, op, "axis", &axis_);
  }
  void Compute(KernelContext* c) override { c->SetStatus(Pack(c)); }

 private:
  Status Pack(KernelContext* c) const {
    const int n = c->num_inputs;
    const TensorShape& first = c->input(0).shape();
    for (int i = 0; i < n; ++i) {
      if (c->input(i).dtype() != DT_STRING)
        return errors::InvalidArgument("values[", i, "] is ", DataTypeString(c->input(i).dtype()),
                                       "; expected string");
      if (c->input(i).shape() != first)
        return errors::InvalidArgument("Shapes of all inputs must match: values[0].shape = ",
                                       first.ToString(), " != values[", i, "].shape = ",
                                       c->input(i).shape().ToString());
    }
    const int64_t rank = first.rank();
    int64_t axis = axis_ < 0 ? axis_ + rank + 1 : axis_;
    if (axis < 0 || axis > rank)
      return errors::InvalidArgument("axis = ", axis_, " not in [", -rank - 1, ", ", rank + 1, ")");
    std::vector<int64_t> dims = first.dims();
    dims.insert(dims.begin() + axis, n);
    CFX_ASSIGN_OR_RETURN(Tensor out, StringOpOutput(DT_STRING, TensorShape(dims)));
    int64_t inner = 1;
    for (int64_t d = axis; d < rank; ++d) inner *= first.dim(static_cast<int>(d));
    const int64_t outer = inner == 0 ? 0 : first.num_elements() / inner;
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < n; ++i)
        for (int64_t k = 0; k < inner; ++k)
          out.data<std::string>()[(o * n + i) * inner + k] =
              c->input(i).data<std::string>()[o * inner + k];
    SetOutput(c, 0, std::move(out));
    return Status();
  }

  int64_t axis_ = 0;
};

}  // namespace

void RegisterStringKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  reg(BuiltinKernelDef<StringJoinKernel>("StringJoin", "CPU", false, 0));
  reg(BuiltinKernelDef<StringLengthKernel>("StringLength", "CPU", false, 0));
  reg(BuiltinKernelDef<StringCaseKernel>("StringLower", "CPU", false, 0));
  reg(BuiltinKernelDef<StringCaseKernel>("StringUpper", "CPU", false, 0));
  reg(BuiltinKernelDef<StaticRegexFullMatchKernel>("StaticRegexFullMatch", "CPU", false, 0));
  reg(BuiltinKernelDef<RegexFullMatchKernel>("RegexFullMatch", "CPU", false, 0));
  for (bool v2 : {false, true}) {
    KernelDef def = v2 ? BuiltinKernelDef<StringSelectKernel<true>>("SelectV2", "CPU", false, 0)
                       : BuiltinKernelDef<StringSelectKernel<false>>("Select", "CPU", false, 0);
    def.type_constraints["T"] = {DT_STRING};
    reg(std::move(def));
  }
  KernelDef pack = BuiltinKernelDef<StringPackKernel>("Pack", "CPU", false, 0);
  pack.type_constraints["T"] = {DT_STRING};
  reg(std::move(pack));
}

}  // namespace cfx::internal
