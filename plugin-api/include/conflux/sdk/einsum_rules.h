// Einsum's equation: parsing, and the shape rule shared by the core's shape function (partial
// shapes, kUnknown dims) and the kernels (concrete shapes). Same conventions as shape_rules.h
// (which see): "" when acceptable, else the reason. Header-only, standard library only, pure.
//
// An equation is "<input>,<input>-><output>" (one or two inputs, as TensorFlow's Einsum takes):
// each subscript is letters (a-z, A-Z), each naming one dimension, and at most one "..." that
// stands for the dimensions the letters leave over, broadcast between the inputs NumPy-style.
// A letter repeated in one input takes a diagonal; letters that the output leaves out are summed.
#ifndef CONFLUX_SDK_EINSUM_RULES_H_
#define CONFLUX_SDK_EINSUM_RULES_H_

#include <algorithm>
#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"

namespace cfx::shape_rules {

// An equation's subscripts as written.
struct EinsumSubscripts {
  std::vector<std::string> inputs;
  std::string output;
};

// Label ids: letters are 0-51; the dimensions of "..." get kEllipsisLabel + g, g counting the
// broadcast ellipsis dimensions from the left.
inline constexpr int kEllipsisLabel = 52;

// An equation applied to input shapes: the labels of each input's and the output's dimensions,
// and each label's size (kUnknown while inference does not know it).
struct EinsumPlan {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<int64_t> size;  // by label id; 1 for labels that name no dimension
};

namespace internal {
inline int LetterLabel(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// Checks one subscript: letters and at most one "...". `what` names it in the message.
inline std::string CheckSubscript(const std::string& sub, const std::string& what) {
  bool ellipsis = false;
  for (size_t i = 0; i < sub.size(); ++i) {
    if (sub.compare(i, 3, "...") == 0) {
      if (ellipsis) return Msg(what, " \"", sub, "\" has more than one ellipsis");
      ellipsis = true;
      i += 2;
    } else if (LetterLabel(sub[i]) < 0) {
      return Msg(what, " \"", sub, "\" has '", sub[i], "'; expected letters and one \"...\"");
    }
  }
  return "";
}

// The number of letters of a subscript and whether it has an ellipsis.
inline size_t Letters(const std::string& sub, bool* ellipsis) {
  const size_t at = sub.find("...");
  *ellipsis = at != std::string::npos;
  return sub.size() - (*ellipsis ? 3 : 0);
}
}  // namespace internal

// Splits `equation` into subscripts and checks their syntax for `num_inputs` inputs (1 or 2),
// and that every output letter is an input's and none repeats in the output.
inline std::string ParseEinsum(const std::string& equation, size_t num_inputs,
                               EinsumSubscripts* out) {
  const size_t arrow = equation.find("->");
  if (arrow == std::string::npos || equation.find("->", arrow + 2) != std::string::npos)
    return Msg("equation \"", equation, "\" must have exactly one \"->\"");
  out->inputs.clear();
  const std::string lhs = equation.substr(0, arrow);
  for (size_t begin = 0;;) {
    const size_t comma = lhs.find(',', begin);
    out->inputs.push_back(lhs.substr(begin, comma == std::string::npos ? comma : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  out->output = equation.substr(arrow + 2);
  if (out->inputs.size() != num_inputs)
    return Msg("equation \"", equation, "\" has ", out->inputs.size(), " input subscripts for ",
               num_inputs, " inputs");
  if (num_inputs < 1 || num_inputs > 2) return Msg("Einsum takes 1 or 2 inputs, got ", num_inputs);
  for (size_t i = 0; i < out->inputs.size(); ++i) {
    std::string error = internal::CheckSubscript(out->inputs[i], Msg("input subscript ", i));
    if (!error.empty()) return error;
  }
  std::string error = internal::CheckSubscript(out->output, "output subscript");
  if (!error.empty()) return error;
  std::vector<bool> seen(kEllipsisLabel, false);
  for (char c : out->output) {
    const int label = internal::LetterLabel(c);
    if (label < 0) continue;
    if (seen[label]) return Msg("output subscript \"", out->output, "\" names '", c, "' twice");
    seen[label] = true;
    bool found = false;
    for (const std::string& in : out->inputs) found = found || in.find(c) != std::string::npos;
    if (!found)
      return Msg("output subscript \"", out->output, "\" names '", c, "', which no input has");
  }
  return "";
}

// Einsum on inputs of shapes `inputs`: checks that each input's rank fits its subscript, that
// the dimensions one letter names agree (exactly) and that the ellipsis dimensions broadcast;
// fills `plan` and the output's shape.
inline std::string EinsumShape(const std::string& equation, const std::vector<Dims>& inputs,
                               Dims* out, EinsumPlan* plan) {
  EinsumSubscripts subs;
  std::string error = ParseEinsum(equation, inputs.size(), &subs);
  if (!error.empty()) return error;
  // The width of each input's ellipsis, and of the broadcast one.
  std::vector<int64_t> width(inputs.size(), 0);
  int64_t widest = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool ellipsis = false;
    const size_t letters = internal::Letters(subs.inputs[i], &ellipsis);
    const int64_t rank = static_cast<int64_t>(inputs[i].size());
    if (ellipsis ? rank < static_cast<int64_t>(letters) : rank != static_cast<int64_t>(letters))
      return Msg("input ", i, " has shape ", ShapeStr(inputs[i]), " but its subscript \"",
                 subs.inputs[i], "\" names ", ellipsis ? "at least " : "", letters, " dimensions");
    width[i] = rank - static_cast<int64_t>(letters);
    widest = std::max(widest, width[i]);
  }
  plan->size.assign(kEllipsisLabel + static_cast<size_t>(widest), 1);
  std::vector<bool> sized(plan->size.size(), false);
  plan->inputs.assign(inputs.size(), {});
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& sub = subs.inputs[i];
    size_t dim = 0;
    for (size_t c = 0; c < sub.size(); ++c) {
      std::vector<int> labels;
      if (sub.compare(c, 3, "...") == 0) {
        for (int64_t j = 0; j < width[i]; ++j)
          labels.push_back(kEllipsisLabel + static_cast<int>(widest - width[i] + j));
        c += 2;
      } else {
        labels.push_back(internal::LetterLabel(sub[c]));
      }
      for (int label : labels) {
        const int64_t d = inputs[i][dim++];
        plan->inputs[i].push_back(label);
        int64_t& size = plan->size[label];
        const bool broadcast = label >= kEllipsisLabel;
        if (!sized[label] || (broadcast && size == 1)) {
          size = d;
        } else if (d >= 0 && size >= 0 && d != size && !(broadcast && d == 1)) {
          return Msg(broadcast ? Msg("the ellipsis dimensions of the inputs (shapes ")
                               : Msg("label '", sub[c], "' names dimensions of different sizes, ",
                                     "in inputs of shapes "),
                     ShapeStr(inputs[0]), inputs.size() > 1 ? " and " : "",
                     inputs.size() > 1 ? ShapeStr(inputs[1]) : "",
                     broadcast ? ") do not broadcast" : "", " (equation \"", equation, "\")");
        } else if (size < 0 && !(broadcast && d == 1)) {
          size = d;
        }
        sized[label] = true;
      }
    }
  }
  plan->output.clear();
  for (size_t c = 0; c < subs.output.size(); ++c) {
    if (subs.output.compare(c, 3, "...") == 0) {
      for (int64_t g = 0; g < widest; ++g)
        plan->output.push_back(kEllipsisLabel + static_cast<int>(g));
      c += 2;
    } else {
      plan->output.push_back(internal::LetterLabel(subs.output[c]));
    }
  }
  out->clear();
  for (int label : plan->output) out->push_back(plan->size[label]);
  return "";
}

}  // namespace cfx::shape_rules

#endif  // CONFLUX_SDK_EINSUM_RULES_H_
