// String kernels with TensorFlow's semantics (string_join_op.cc, string_length_op.cc,
// string_lower_op.cc, string_upper_op.cc, regex_full_match_op.cc): StringJoin, StringLength,
// StringLower, StringUpper, StaticRegexFullMatch and RegexFullMatch, on the CPU. Case mapping
// with encoding "utf-8" is ICU's, from generated tables (util/unicode.h); regexes have RE2's
// syntax, matched by std::wregex (util/regex.h says what is covered). Kernels hold no per-call
// state; RegexFullMatch keeps its last compiled pattern under a lock.
#include <memory>
#include <mutex>

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

}  // namespace

void RegisterStringKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef def) { RegisterBuiltin(r, std::move(def)); };
  reg(BuiltinKernelDef<StringJoinKernel>("StringJoin", "CPU", false, 0));
  reg(BuiltinKernelDef<StringLengthKernel>("StringLength", "CPU", false, 0));
  reg(BuiltinKernelDef<StringCaseKernel>("StringLower", "CPU", false, 0));
  reg(BuiltinKernelDef<StringCaseKernel>("StringUpper", "CPU", false, 0));
  reg(BuiltinKernelDef<StaticRegexFullMatchKernel>("StaticRegexFullMatch", "CPU", false, 0));
  reg(BuiltinKernelDef<RegexFullMatchKernel>("RegexFullMatch", "CPU", false, 0));
}

}  // namespace cfx::internal
