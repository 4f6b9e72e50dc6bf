// FuseContractions and CpuOnlyPredicate (remapper.h).
#include "passes/remapper.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "conflux/graph.h"
#include "graph/graph_shapes.h"

namespace cfx {
namespace {

constexpr const char* kActivations[] = {"Relu", "Relu6", "Elu", "LeakyRelu"};

// 1/sqrt(2) rounded to float: the factor of TensorFlow's exact GELU, 0.5 x erfc(-x / sqrt(2)),
// the same as the CPU kernel's GeluExact (sdk::kGeluErfcScale, a layer above the passes).
constexpr float kGeluErfcScale = 0.70710678118654752f;
// sqrt(2/pi) and 0.044715 rounded to float: the factors of its tanh approximation,
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (sdk::kGeluTanhScale, sdk::kGeluTanhCubic).
constexpr float kGeluTanhScale = 0.7978845608028654f;
constexpr float kGeluTanhCubic = 0.044715f;

// The fused op of each contraction, and the contraction's attrs that it also has (MatMul's
// grad_a/grad_b hints are not among them; DepthwiseConv2dNative's fused op has no explicit
// paddings); internal `_` attrs are copied as well.
struct FusedForm {
  const char* op;
  std::set<std::string> attrs;
};

const FusedForm* FusedFormOf(const std::string& contraction) {
  static const std::map<std::string, FusedForm> forms = {
      {"Conv2D",
       {"_FusedConv2D",
        {"T", "strides", "padding", "explicit_paddings", "data_format", "dilations",
         "use_cudnn_on_gpu"}}},
      {"DepthwiseConv2dNative",
       {"_FusedDepthwiseConv2dNative", {"T", "strides", "padding", "data_format", "dilations"}}},
      {"MatMul", {"_FusedMatMul", {"T", "transpose_a", "transpose_b"}}},
  };
  auto it = forms.find(contraction);
  return it == forms.end() ? nullptr : &it->second;
}

bool IsControl(const std::string& input) { return !input.empty() && input[0] == '^'; }

// The producer's name of a data input ("node" or "node:1") and whether it is output 0.
std::string ProducerName(const std::string& input, bool* output_zero) {
  const size_t colon = input.rfind(':');
  *output_zero = colon == std::string::npos || input.substr(colon + 1) == "0";
  return input.substr(0, colon);
}

std::string StringAttrOr(const NodeDef& n, const char* name, const std::string& fallback) {
  auto it = n.attr.find(name);
  return it == n.attr.end() ? fallback : it->second.s;
}

std::optional<DataType> TypeAttr(const NodeDef& n) {
  auto it = n.attr.find("T");
  if (it == n.attr.end() || it->second.kind != AttrValue::Kind::kType) return std::nullopt;
  return it->second.type;
}

// Appends to `to` every control input of `parts` that is not an edge from one of `skip` (nodes
// the rewrite removes), each once.
void AppendControlInputs(NodeDef* to, const std::vector<const NodeDef*>& parts,
                         const std::vector<const NodeDef*>& skip) {
  for (const NodeDef* p : parts)
    for (const std::string& input : p->input) {
      const bool skipped = std::any_of(skip.begin(), skip.end(),
                                       [&](const NodeDef* q) { return input == "^" + q->name; });
      if (IsControl(input) && !skipped &&
          std::find(to->input.begin(), to->input.end(), input) == to->input.end())
        to->input.push_back(input);
    }
}

// The `leakyrelu_alpha` of a fused node whose pattern ends at `last`: a LeakyRelu's alpha, else
// TensorFlow's default.
float LeakyReluAlpha(const NodeDef& last) {
  auto alpha = last.attr.find("alpha");
  return last.op == "LeakyRelu" && alpha != last.attr.end() ? alpha->second.f : 0.2f;
}

// Whether `n` is a fused contraction `op` that only adds its bias (fused_ops [BiasAdd]).
bool FusedBiasOnly(const NodeDef& n, const char* op) {
  if (n.op != op) return false;
  auto ops = n.attr.find("fused_ops");
  return ops != n.attr.end() && ops->second.list.s == std::vector<std::string>{"BiasAdd"};
}

// The value of a Const node, when it has one.
const Tensor* ConstValue(const NodeDef& n) {
  if (n.op != "Const") return nullptr;
  auto it = n.attr.find("value");
  if (it == n.attr.end() || it->second.kind != AttrValue::Kind::kTensor ||
      !it->second.tensor.IsInitialized())
    return nullptr;
  return &it->second.tensor;
}

// Contractions whose output channels a per-channel scale can be folded into, and the rank of
// their output.
int ScalableOutputRank(const NodeDef& n) {
  if (n.op == "Conv2D" || n.op == "DepthwiseConv2dNative") return 4;
  if (n.op == "MatMul") return 2;
  return 0;
}

// The output channels of contraction `n` with filter `w` (HWIO; depthwise [kh, kw, c, m] gives
// c * m; MatMul [k, n], or [n, k] with transpose_b), and the channel of filter element e.
struct ChannelLayout {
  int64_t channels = 0;
  int64_t inner = 1;  // elements per channel run: channel(e) = (e / inner) % channels
};

std::optional<ChannelLayout> FilterChannels(const NodeDef& n, const Tensor& w) {
  if (n.op == "MatMul") {
    if (w.rank() != 2) return std::nullopt;
    auto t = n.attr.find("transpose_b");
    const bool transposed = t != n.attr.end() && t->second.b;
    return transposed ? ChannelLayout{w.dim(0), w.dim(1)} : ChannelLayout{w.dim(1), 1};
  }
  if (w.rank() != 4) return std::nullopt;
  if (n.op == "DepthwiseConv2dNative") return ChannelLayout{w.dim(2) * w.dim(3), 1};
  return ChannelLayout{w.dim(3), 1};
}

// True when `t`, broadcast against an output of rank `rank` whose last dim has `channels`
// values, leaves the output's shape as it is and varies at most along that last dim: a scalar,
// or [channels] / [1, ..., 1, channels] of at most that rank.
bool IsChannelVector(const Tensor& t, int rank, int64_t channels, bool allow_scalar) {
  if (t.rank() > rank) return false;
  for (int d = 0; d + 1 < t.rank(); ++d)
    if (t.dim(d) != 1) return false;
  if (t.num_elements() == 1) return allow_scalar || (t.rank() >= 1 && channels == 1);
  return t.rank() >= 1 && t.dim(t.rank() - 1) == channels;
}

class Remapper {
 public:
  Remapper(GraphDef* graph, const std::set<std::string>& keep, const FusionPredicate& predicate,
           const TensorShapes& shapes)
      : graph_(*graph),
        keep_(keep),
        predicate_(predicate),
        shapes_(shapes),
        removed_(graph->node.size(), false) {
    // Room for the Consts that PrivateConst adds (at most two per fold, a fold per two nodes).
    graph_.node.reserve(3 * graph_.node.size() + 2);
    for (size_t i = 0; i < graph_.node.size(); ++i) {
      const NodeDef& n = graph_.node[i];
      index_[n.name] = i;
      for (const std::string& input : n.input) {
        bool unused;
        if (IsControl(input)) {
          ++control_consumers_[input.substr(1)];
        } else {
          ++data_consumers_[ProducerName(input, &unused)];
        }
      }
    }
  }

  int Run() {
    int fused = 0;
    // Zero padding before a convolution (Keras' ZeroPadding2D) becomes its explicit padding.
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && TryFoldPad(i)) ++fused;
    // Scales next: Conv2D -> Mul -> AddV2 (a Keras BatchNormalization in inference) becomes
    // Conv2D -> AddV2, which the patterns below then fuse.
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && graph_.node[i].op == "Mul" && TryFoldScale(i)) ++fused;
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && (graph_.node[i].op == "AddV2" || graph_.node[i].op == "Add") &&
          TryMergeOffset(i))
        ++fused;
    // Keras' Dense on a rank-3 input (its Tensordot): MatMul -> Reshape -> BiasAdd (-> an
    // activation). The Reshape moves below the BiasAdd, then below the activation, so that the
    // patterns below see them after the MatMul.
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && graph_.node[i].op == "BiasAdd") TrySinkReshape(i);
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && IsActivation(graph_.node[i].op)) TrySinkReshape(i);
    // Three-node patterns first, so that a BiasAdd followed by an activation is not taken alone.
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && IsActivation(graph_.node[i].op) && TryFuse(i, /*with_activation=*/true))
        ++fused;
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && IsBiasAddLike(graph_.node[i].op) && TryFuse(i, false)) ++fused;
    // Residual connections: a fused convolution's output plus a tensor of its shape, then
    // optionally an activation, as one _FusedConv2D (activations first, as above).
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && IsActivation(graph_.node[i].op) && TryFuseAddend(i, true)) ++fused;
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && (graph_.node[i].op == "AddV2" || graph_.node[i].op == "Add") &&
          TryFuseAddend(i, false))
        ++fused;
    // Mul(x, Sigmoid(x)) -> _MklSwish(x), after the contractions took what they could.
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && graph_.node[i].op == "Mul" && TryFuseSwish(i)) ++fused;
    // GELU after a dense layer's _FusedMatMul (directly or through its Reshape).
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i] && graph_.node[i].op == "Mul" && TryFuseGelu(i)) ++fused;
    std::vector<NodeDef> kept;
    kept.reserve(graph_.node.size());
    for (size_t i = 0; i < graph_.node.size(); ++i)
      if (!removed_[i]) kept.push_back(std::move(graph_.node[i]));
    graph_.node = std::move(kept);
    return fused;
  }

 private:
  // The node behind data input `input` when that input is output 0 of a node that exactly
  // `readers` data inputs read (and no control input) and which may disappear; else null.
  NodeDef* ProducerReadBy(const std::string& input, int readers) {
    if (IsControl(input)) return nullptr;
    bool output_zero = false;
    const std::string name = ProducerName(input, &output_zero);
    auto it = index_.find(name);
    if (!output_zero || it == index_.end() || removed_[it->second] || keep_.count(name) ||
        data_consumers_[name] != readers || control_consumers_.count(name))
      return nullptr;
    return &graph_.node[it->second];
  }

  // ProducerReadBy(input, 1): the node whose only consumer `input` is.
  NodeDef* SoleProducer(const std::string& input) { return ProducerReadBy(input, 1); }

  static bool IsActivation(const std::string& op) {
    return std::any_of(std::begin(kActivations), std::end(kActivations),
                       [&](const char* a) { return op == a; });
  }

  static bool IsBiasAddLike(const std::string& op) {
    return op == "BiasAdd" || op == "AddV2" || op == "Add";
  }

  // The Const behind data input `input` (output 0, not kept), or null.
  const Tensor* ConstInput(const std::string& input) {
    if (IsControl(input)) return nullptr;
    bool output_zero = false;
    const std::string name = ProducerName(input, &output_zero);
    auto it = index_.find(name);
    if (!output_zero || it == index_.end() || removed_[it->second] || keep_.count(name))
      return nullptr;
    return ConstValue(graph_.node[it->second]);
  }

  // For an Add fused as a BiasAdd: true when `*bias_input` is a float Const that varies only
  // along `contraction`'s output channels (known from its Const filter), so that the add
  // leaves the contraction's shape as it is. A 1-D one is used as it is; a [1, ..., 1,
  // channels] one is reshaped to a vector (in a copy of its own when others read it) when the
  // fusion happens (pending_bias_).
  bool OneDimensionalBias(const NodeDef& contraction, const std::string* bias_input) {
    const Tensor* bias = ConstInput(*bias_input);
    const Tensor* w = ConstInput(contraction.input[1]);
    if (bias == nullptr || w == nullptr || bias->dtype() != DT_FLOAT) return false;
    std::optional<ChannelLayout> layout = FilterChannels(contraction, *w);
    const int rank = ScalableOutputRank(contraction);
    if (!layout || !IsChannelVector(*bias, rank, layout->channels, /*allow_scalar=*/false))
      return false;
    if (bias->rank() == 1) return true;
    StatusOr<Tensor> vector = bias->Reshaped(TensorShape({bias->num_elements()}));
    if (!vector.ok()) return false;
    pending_bias_ = *std::move(vector);
    return true;
  }

  // A contraction that a per-channel scale or bias can be folded into: Conv2D (NHWC),
  // DepthwiseConv2dNative (NHWC) or MatMul of float, with a Const filter that is not kept, and
  // no control consumer; optionally followed by a BiasAdd (NHWC) of a Const vector. `head` is
  // the last node (the BiasAdd or the contraction), read only by the node being folded. The
  // Consts may have other readers (CSE merges equal ones, such as the zero biases of a model
  // before training): PrivateConst gives the chain a copy before anything writes to them.
  struct FoldableChain {
    NodeDef* head = nullptr;
    NodeDef* contraction = nullptr;
    NodeDef* filter = nullptr;
    NodeDef* bias = nullptr;  // the BiasAdd's Const, when there is a BiasAdd
    ChannelLayout layout;
    int rank = 0;  // of the output
  };

  std::optional<FoldableChain> Foldable(const std::string& input, const std::string& device) {
    FoldableChain c;
    c.head = SoleProducer(input);
    if (c.head == nullptr || c.head->device != device || TypeAttr(*c.head) != DT_FLOAT ||
        c.head->input.size() < 2 || IsControl(c.head->input[1]) ||
        StringAttrOr(*c.head, "data_format", "NHWC") != "NHWC")
      return std::nullopt;
    c.contraction = c.head;
    if (c.head->op == "BiasAdd") {
      c.bias = ConstNode(c.head->input[1]);
      c.contraction = SoleProducer(c.head->input[0]);
      if (c.bias == nullptr || c.contraction == nullptr || c.contraction->device != device ||
          TypeAttr(*c.contraction) != DT_FLOAT || c.contraction->input.size() < 2 ||
          IsControl(c.contraction->input[1]) ||
          StringAttrOr(*c.contraction, "data_format", "NHWC") != "NHWC")
        return std::nullopt;
    }
    c.rank = ScalableOutputRank(*c.contraction);
    c.filter = ConstNode(c.contraction->input[1]);
    const Tensor* w = c.filter != nullptr ? ConstValue(*c.filter) : nullptr;
    if (c.rank == 0 || w == nullptr || w->dtype() != DT_FLOAT) return std::nullopt;
    std::optional<ChannelLayout> layout = FilterChannels(*c.contraction, *w);
    if (!layout) return std::nullopt;
    c.layout = *layout;
    if (c.bias != nullptr) {
      const Tensor* b = ConstValue(*c.bias);
      if (b == nullptr || b->dtype() != DT_FLOAT || b->rank() != 1 ||
          b->dim(0) != c.layout.channels)
        return std::nullopt;
    }
    return c;
  }

  // `node` (the Mul or Add being folded) becomes `replacement` (a copy of the chain's head),
  // under its own name, with every control input of itself and of `operand` (its Const): the
  // head goes, and so does the Const when nothing else reads it.
  void ReplaceWithHead(NodeDef& node, const NodeDef& head, const std::string& operand_name) {
    const NodeDef& operand = graph_.node[index_.at(operand_name)];
    NodeDef replacement = head;
    replacement.name = node.name;
    AppendControlInputs(&replacement, {&node, &operand}, {&head});
    removed_[index_.at(head.name)] = true;
    DropRead(operand_name);
    node = std::move(replacement);
  }

  // One data read of `name` fewer: the node goes when that was its last reader and no node waits
  // for it.
  void DropRead(const std::string& name) {
    if (data_consumers_[name] == 1 && !control_consumers_.count(name))
      removed_[index_.at(name)] = true;
    --data_consumers_[name];
  }

  // The Const operand of a binary node: its name and value, when input `input` is output 0 of
  // a float Const that is not kept.
  const Tensor* ConstOperand(const std::string& input, std::string* name) {
    bool output_zero = false;
    *name = ProducerName(input, &output_zero);
    auto it = index_.find(*name);
    if (IsControl(input) || !output_zero || it == index_.end() || removed_[it->second] ||
        keep_.count(*name))
      return nullptr;
    const Tensor* t = ConstValue(graph_.node[it->second]);
    return t != nullptr && t->dtype() == DT_FLOAT ? t : nullptr;
  }

  // Mul(x, Sigmoid(x)) (either order), the Sigmoid read by nothing else: one _MklSwish(x) under
  // the Mul's name (one pass over x instead of three), where the predicate says a CPU runs it.
  bool TryFuseSwish(size_t mul_index) {
    NodeDef& mul = graph_.node[mul_index];
    if (TypeAttr(mul) != DT_FLOAT || mul.input.size() < 2 || IsControl(mul.input[1])) return false;
    for (int side = 0; side < 2; ++side) {
      NodeDef* sigmoid = SoleProducer(mul.input[side]);
      if (sigmoid == nullptr || sigmoid->op != "Sigmoid" || sigmoid->input.empty() ||
          IsControl(sigmoid->input[0]) || sigmoid->device != mul.device ||
          TypeAttr(*sigmoid) != DT_FLOAT)
        continue;
      // Keras writes x * sigmoid(beta * x); with beta 1 the optimizer made beta * x an
      // Identity of x (OptimizeGraph), which the Sigmoid may read instead of x.
      NodeDef* identity = SoleProducer(sigmoid->input[0]);
      if (identity != nullptr && (identity->op != "Identity" || identity->input.empty() ||
                                  identity->input[0] != mul.input[1 - side]))
        identity = nullptr;
      if (identity == nullptr && sigmoid->input[0] != mul.input[1 - side]) continue;
      NodeDef swish;
      swish.name = mul.name;
      swish.op = "_MklSwish";
      swish.device = mul.device;
      swish.input = {mul.input[1 - side]};
      std::vector<const NodeDef*> parts = {sigmoid, &mul};
      if (identity != nullptr) parts.insert(parts.begin(), identity);
      AppendControlInputs(&swish, parts, parts);
      swish.attr["T"] = AttrValue::Type(DT_FLOAT);
      if (!predicate_(swish, {sigmoid, &mul})) return false;
      removed_[index_.at(sigmoid->name)] = true;
      if (identity != nullptr) removed_[index_.at(identity->name)] = true;
      // x was read by both (or by the Identity and the Mul); now only by the swish.
      bool unused;
      --data_consumers_[ProducerName(swish.input[0], &unused)];
      mul = std::move(swish);
      return true;
    }
    return false;
  }

  // A name that no node of the graph has, from `base`.
  std::string UnusedName(const std::string& base) const {
    std::string name = base;
    for (int k = 1; index_.count(name); ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  // Moves the Reshape that BiasAdd or activation `u` alone reads below it: u(Reshape(x, s))
  // becomes Reshape(u'(x), s), where u' is u under a new name and the Reshape takes u's name
  // (u's consumers are unchanged). Only where the patterns below then fuse u' into a MatMul: x
  // is a MatMul (for a BiasAdd) or a BiasAdd of one (for an activation), read only by the
  // Reshape. A BiasAdd moves only when its bias is a Const vector over the MatMul's columns (the
  // columns of its Const filter) and the Reshape's Const shape ends with that many (the bias
  // then adds to the same values); an activation is elementwise and moves over any Reshape.
  bool TrySinkReshape(size_t u_index) {
    NodeDef& u = graph_.node[u_index];
    const bool bias_add = u.op == "BiasAdd";
    if (u.input.empty() || TypeAttr(u) != DT_FLOAT ||
        (bias_add && (u.input.size() < 2 || IsControl(u.input[1]) ||
                      StringAttrOr(u, "data_format", "NHWC") != "NHWC")))
      return false;
    NodeDef* reshape = SoleProducer(u.input[0]);
    if (reshape == nullptr || reshape->op != "Reshape" || reshape->input.size() < 2 ||
        IsControl(reshape->input[1]) || reshape->device != u.device ||
        TypeAttr(*reshape) != DT_FLOAT)
      return false;
    NodeDef* source = SoleProducer(reshape->input[0]);
    NodeDef* product = source;
    if (!bias_add && source != nullptr && source->op == "BiasAdd")
      product = source->input.empty() ? nullptr : SoleProducer(source->input[0]);
    if (source == nullptr || product == nullptr || product->op != "MatMul" ||
        (source == product) != bias_add || source->device != u.device)
      return false;
    if (bias_add) {
      const Tensor* w = product->input.size() < 2 ? nullptr : ConstInput(product->input[1]);
      const Tensor* bias = ConstInput(u.input[1]);
      const Tensor* shape = ConstInput(reshape->input[1]);
      std::optional<ChannelLayout> layout;
      if (w != nullptr) layout = FilterChannels(*product, *w);
      if (!layout || bias == nullptr || bias->dtype() != DT_FLOAT || bias->rank() != 1 ||
          bias->dim(0) != layout->channels || shape == nullptr || shape->rank() != 1 ||
          shape->num_elements() == 0)
        return false;
      const int64_t last = shape->num_elements() - 1;
      const int64_t columns = shape->dtype() == DT_INT32   ? shape->at<int32_t>(last)
                              : shape->dtype() == DT_INT64 ? shape->at<int64_t>(last)
                                                           : -1;
      if (columns != layout->channels) return false;
    }
    const size_t r = index_.at(reshape->name);
    NodeDef moved = u;
    moved.name = UnusedName(u.name + "/_before_reshape");
    moved.input[0] = reshape->input[0];
    AppendControlInputs(&moved, {reshape}, {});
    NodeDef after = *reshape;
    after.name = u.name;
    after.input = {moved.name, reshape->input[1]};
    index_.erase(reshape->name);
    data_consumers_.erase(reshape->name);
    index_[moved.name] = r;
    data_consumers_[moved.name] = 1;
    graph_.node[r] = std::move(moved);
    u = std::move(after);
    return true;
  }

  // Whether Mul `mul` multiplies by a float Const scalar (not kept) equal to `factor`: then
  // `*other` is its other input and `*factor_name` the Const's name.
  bool MulByScalar(const NodeDef& mul, float factor, std::string* other, std::string* factor_name) {
    return WithScalar(mul, "Mul", factor, other, factor_name);
  }

  // One of TensorFlow's GELU compositions, matched at its outer Mul: its input x (read
  // `x_reads` times, all by the pattern), the nodes it removes besides the outer Mul, the Consts
  // whose reads they drop, and the fused_ops activation that computes it.
  struct GeluMatch {
    std::string x;
    int x_reads = 0;
    std::vector<const NodeDef*> inner;
    std::vector<std::string> consts;
    const char* activation = nullptr;
  };

  // Op `op` (or, for "AddV2", also "Add") of float with a Const scalar `value` on one side: the
  // other input in `*other`, the Const's name in `*const_name`.
  bool WithScalar(const NodeDef& n, const char* op, float value, std::string* other,
                  std::string* const_name) {
    const bool add = std::string(op) == "AddV2";
    if ((n.op != op && !(add && n.op == "Add")) || n.input.size() < 2 || IsControl(n.input[1]) ||
        TypeAttr(n) != DT_FLOAT)
      return false;
    for (int side = 0; side < 2; ++side) {
      const Tensor* t = ConstOperand(n.input[side], const_name);
      if (t == nullptr || t->rank() != 0 || t->at<float>(0) != value) continue;
      *other = n.input[1 - side];
      return true;
    }
    return false;
  }

  // The exact GELU (tf.nn.gelu(x, approximate=False), Keras' "gelu"):
  //   Mul(Mul(0.5, x), Erfc(Mul(Neg(x), 0.70710677)))   (every Mul in either order).
  bool MatchGeluExact(const NodeDef& mul, GeluMatch* m) {
    for (int side = 0; side < 2; ++side) {
      NodeDef* erfc = SoleProducer(mul.input[side]);
      NodeDef* half = SoleProducer(mul.input[1 - side]);
      std::string x, half_name, scaled_x, scale_name;
      if (erfc == nullptr || erfc->op != "Erfc" || erfc->input.empty() ||
          TypeAttr(*erfc) != DT_FLOAT || half == nullptr ||
          !MulByScalar(*half, 0.5f, &x, &half_name))
        continue;
      NodeDef* scaled = SoleProducer(erfc->input[0]);
      if (scaled == nullptr || !MulByScalar(*scaled, kGeluErfcScale, &scaled_x, &scale_name))
        continue;
      NodeDef* neg = SoleProducer(scaled_x);
      if (neg == nullptr || neg->op != "Neg" || neg->input.empty() || neg->input[0] != x ||
          TypeAttr(*neg) != DT_FLOAT)
        continue;
      *m = {x, 2, {neg, scaled, erfc, half}, {half_name, scale_name}, "GeluExact"};
      return true;
    }
    return false;
  }

  // The tanh approximation (tf.nn.gelu(x, approximate=True), BERT's and GPT-2's gelu):
  //   Mul(Mul(0.5, x), t) or Mul(x, Mul(0.5, t)), with
  //   t = AddV2(1, Tanh(Mul(0.7978846, AddV2(x, Mul(0.044715, Pow(x, 3))))))
  // (every Mul and AddV2 in either order; Add as AddV2).
  bool MatchGeluTanh(const NodeDef& mul, GeluMatch* m) {
    for (int side = 0; side < 2; ++side) {
      NodeDef* half = SoleProducer(mul.input[side]);
      std::string halved, half_name;
      if (half == nullptr || !MulByScalar(*half, 0.5f, &halved, &half_name)) continue;
      // Either the half Mul reads x and the other operand is t, or it reads t and the other
      // operand is x.
      for (int form = 0; form < 2; ++form) {
        const std::string x = form == 0 ? halved : mul.input[1 - side];
        NodeDef* plus_one = SoleProducer(form == 0 ? mul.input[1 - side] : halved);
        std::string tanh_out, one_name, scaled_out, scale_name, sum_a, cubic_name, cube_out;
        if (plus_one == nullptr || !WithScalar(*plus_one, "AddV2", 1.0f, &tanh_out, &one_name))
          continue;
        NodeDef* tanh = SoleProducer(tanh_out);
        if (tanh == nullptr || tanh->op != "Tanh" || tanh->input.empty() ||
            TypeAttr(*tanh) != DT_FLOAT)
          continue;
        NodeDef* scaled = SoleProducer(tanh->input[0]);
        if (scaled == nullptr || !MulByScalar(*scaled, kGeluTanhScale, &scaled_out, &scale_name))
          continue;
        NodeDef* sum = SoleProducer(scaled_out);
        if (sum == nullptr || (sum->op != "AddV2" && sum->op != "Add") || sum->input.size() < 2 ||
            IsControl(sum->input[1]) || TypeAttr(*sum) != DT_FLOAT ||
            (sum->input[0] != x && sum->input[1] != x))
          continue;
        NodeDef* cubic = SoleProducer(sum->input[sum->input[0] == x ? 1 : 0]);
        if (cubic == nullptr || !MulByScalar(*cubic, kGeluTanhCubic, &cube_out, &cubic_name))
          continue;
        NodeDef* pow = SoleProducer(cube_out);
        std::string three_name;
        const Tensor* three = pow == nullptr || pow->op != "Pow" || pow->input.size() < 2 ||
                                      pow->input[0] != x || TypeAttr(*pow) != DT_FLOAT
                                  ? nullptr
                                  : ConstOperand(pow->input[1], &three_name);
        if (three == nullptr || three->rank() != 0 || three->at<float>(0) != 3.0f) continue;
        *m = {x,
              3,
              {pow, cubic, sum, scaled, tanh, plus_one, half},
              {half_name, one_name, scale_name, cubic_name, three_name},
              "GeluApproximate"};
        return true;
      }
    }
    return false;
  }

  // GELU as TensorFlow writes it, exact or approximate (MatchGeluExact, MatchGeluTanh), where x
  // is a _FusedMatMul that only adds its bias, or a Reshape of one (a Dense layer on a rank-3
  // input, after TrySinkReshape), and the GELU's nodes are x's only readers: the product takes
  // the GELU as fused_ops [BiasAdd, GeluExact] or [BiasAdd, GeluApproximate], and the outer
  // Mul's name goes to the product (or to the Reshape, which then reads it). The fused kernel
  // computes the same ops in the same order (GeluExact with the same vectorized erfc;
  // GeluApproximate with x * x * x for Pow(x, 3), within an ulp of it, and the same tanh).
  bool TryFuseGelu(size_t mul_index) {
    NodeDef& mul = graph_.node[mul_index];
    if (mul.input.size() < 2 || IsControl(mul.input[1]) || TypeAttr(mul) != DT_FLOAT) return false;
    GeluMatch m;
    if (!MatchGeluExact(mul, &m) && !MatchGeluTanh(mul, &m)) return false;
    NodeDef* reshape = ProducerReadBy(m.x, m.x_reads);
    if (reshape == nullptr) return false;
    NodeDef* product = reshape;
    if (reshape->op == "Reshape") {
      product = reshape->input.size() == 2 ? SoleProducer(reshape->input[0]) : nullptr;
    } else {
      reshape = nullptr;
    }
    if (product == nullptr || !FusedBiasOnly(*product, "_FusedMatMul")) return false;
    std::vector<const NodeDef*> removed = m.inner;
    if (reshape == nullptr) removed.push_back(&mul);
    std::vector<const NodeDef*> parts = {product};
    parts.insert(parts.end(), removed.begin(), removed.end());
    if (reshape != nullptr) parts.push_back(&mul);
    if (std::any_of(parts.begin(), parts.end(),
                    [&](const NodeDef* p) { return p->device != product->device; }) ||
        (reshape != nullptr && reshape->device != product->device))
      return false;
    NodeDef fused = *product;
    fused.attr["fused_ops"] = AttrValue::StringList({"BiasAdd", m.activation});
    AppendControlInputs(&fused, removed, parts);
    if (!predicate_(fused, parts)) return false;

    for (const NodeDef* p : m.inner) removed_[index_.at(p->name)] = true;
    for (const std::string& c : m.consts) DropRead(c);
    if (reshape == nullptr) {
      removed_[index_.at(product->name)] = true;
      fused.name = mul.name;
      mul = std::move(fused);
      return true;
    }
    // The Reshape moves to the outer Mul's place and name; x's reads become its one.
    *product = std::move(fused);
    NodeDef after = *reshape;
    after.name = mul.name;
    AppendControlInputs(&after, {&mul}, m.inner);
    removed_[index_.at(reshape->name)] = true;
    mul = std::move(after);
    return true;
  }

  // Folds Pad(x, paddings) into the Conv2D or DepthwiseConv2dNative (NHWC, padding VALID or
  // EXPLICIT) that alone reads it: the convolution reads x with the paddings added to its
  // explicit ones. Only a Pad (zeros: not PadV2, not MirrorPad) of the two spatial dimensions by
  // a Const that is not kept, amounts >= 0, of the convolution's T.
  bool TryFoldPad(size_t conv_index) {
    NodeDef& conv = graph_.node[conv_index];
    if ((conv.op != "Conv2D" && conv.op != "DepthwiseConv2dNative") || conv.input.size() < 2 ||
        StringAttrOr(conv, "data_format", "NHWC") != "NHWC")
      return false;
    const std::string padding = StringAttrOr(conv, "padding", "");
    if (padding != "VALID" && padding != "EXPLICIT") return false;
    NodeDef* pad = SoleProducer(conv.input[0]);
    if (pad == nullptr || pad->op != "Pad" || pad->input.size() < 2 || IsControl(pad->input[1]) ||
        pad->device != conv.device || TypeAttr(*pad) != TypeAttr(conv))
      return false;
    bool unused;
    const std::string amounts_name = ProducerName(pad->input[1], &unused);
    NodeDef* amounts_node = ConstNode(pad->input[1]);
    const Tensor* amounts = amounts_node != nullptr ? ConstValue(*amounts_node) : nullptr;
    if (amounts == nullptr || amounts->rank() != 2 || amounts->dim(0) != 4 ||
        amounts->dim(1) != 2 || (amounts->dtype() != DT_INT32 && amounts->dtype() != DT_INT64))
      return false;
    std::vector<int64_t> p(8);
    for (int k = 0; k < 8; ++k)
      p[k] = amounts->dtype() == DT_INT32 ? amounts->at<int32_t>(k) : amounts->at<int64_t>(k);
    if (p[0] != 0 || p[1] != 0 || p[6] != 0 || p[7] != 0 ||
        std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; }))
      return false;
    std::vector<int64_t> explicit_pad(8, 0);
    auto it = conv.attr.find("explicit_paddings");
    if (padding == "EXPLICIT") {
      if (it == conv.attr.end() || it->second.list.i.size() != 8) return false;
      explicit_pad = it->second.list.i;
    }
    for (int k = 2; k < 6; ++k)
      if (__builtin_add_overflow(explicit_pad[k], p[k], &explicit_pad[k])) return false;

    conv.input[0] = pad->input[0];
    AppendControlInputs(&conv, {pad}, {});
    conv.attr["padding"] = AttrValue::String("EXPLICIT");
    conv.attr["explicit_paddings"] = AttrValue::IntList(explicit_pad);
    removed_[index_.at(pad->name)] = true;
    DropRead(amounts_name);
    // The convolution now reads x: x's reader count is unchanged (the Pad read it before).
    return true;
  }

  // Folds Mul(chain, scale) (either order), the scale a Const scalar or vector over the
  // chain's output channels, into the chain (FoldableChain): the filter Const becomes
  // filter * scale per output channel, the bias Const (if any) bias * scale, and the chain's
  // head takes the Mul's place and name. TensorFlow's constant folding does the same
  // (FoldMultiplyIntoConv) for the batch normalization that Keras writes as x * scale + offset.
  bool TryFoldScale(size_t mul_index) {
    NodeDef& mul = graph_.node[mul_index];
    if (TypeAttr(mul) != DT_FLOAT || mul.input.size() < 2 || IsControl(mul.input[1])) return false;
    for (int side = 0; side < 2; ++side) {
      std::optional<FoldableChain> c = Foldable(mul.input[side], mul.device);
      std::string scale_name;
      const Tensor* scale = ConstOperand(mul.input[1 - side], &scale_name);
      if (!c || scale == nullptr ||
          !IsChannelVector(*scale, c->rank, c->layout.channels, /*allow_scalar=*/true))
        continue;
      const float* factors = scale->data<float>();
      const bool per_channel = scale->num_elements() != 1;
      auto scaled = [&](const Tensor& t, int64_t inner, int64_t channels) {
        Tensor out(DT_FLOAT, t.shape());
        for (int64_t e = 0; e < t.num_elements(); ++e)
          out.at<float>(e) = t.at<float>(e) * factors[per_channel ? (e / inner) % channels : 0];
        return out;
      };
      NodeDef* filter = PrivateConst(c->contraction, 1);
      filter->attr["value"] =
          AttrValue::TensorValue(scaled(*ConstValue(*filter), c->layout.inner, c->layout.channels));
      if (c->bias != nullptr) {
        NodeDef* bias = PrivateConst(c->head, 1);
        bias->attr["value"] =
            AttrValue::TensorValue(scaled(*ConstValue(*bias), 1, c->layout.channels));
      }
      ReplaceWithHead(mul, *c->head, scale_name);
      return true;
    }
    return false;
  }

  // Folds Add(BiasAdd(contraction, bias), offset) (either order), the offset a Const vector
  // over the channels, into the BiasAdd: the bias Const becomes bias + offset and the BiasAdd
  // takes the Add's place and name (Keras' Conv2D with a bias, then BatchNormalization).
  bool TryMergeOffset(size_t add_index) {
    NodeDef& add = graph_.node[add_index];
    if (TypeAttr(add) != DT_FLOAT || add.input.size() < 2 || IsControl(add.input[1])) return false;
    for (int side = 0; side < 2; ++side) {
      std::optional<FoldableChain> c = Foldable(add.input[side], add.device);
      std::string offset_name;
      const Tensor* offset = ConstOperand(add.input[1 - side], &offset_name);
      if (!c || c->bias == nullptr || offset == nullptr ||
          !IsChannelVector(*offset, c->rank, c->layout.channels, /*allow_scalar=*/false))
        continue;
      NodeDef* bias = PrivateConst(c->head, 1);
      const Tensor& b = *ConstValue(*bias);
      Tensor sum(DT_FLOAT, b.shape());
      for (int64_t e = 0; e < b.num_elements(); ++e)
        sum.at<float>(e) = b.at<float>(e) + offset->at<float>(e);
      bias->attr["value"] = AttrValue::TensorValue(std::move(sum));
      ReplaceWithHead(add, *c->head, offset_name);
      return true;
    }
    return false;
  }

  // The Const node behind data input `input` (output 0, with a value, not kept), or null.
  NodeDef* ConstNode(const std::string& input) {
    if (IsControl(input)) return nullptr;
    bool output_zero = false;
    const std::string name = ProducerName(input, &output_zero);
    auto it = index_.find(name);
    if (!output_zero || it == index_.end() || removed_[it->second] || keep_.count(name) ||
        ConstValue(graph_.node[it->second]) == nullptr)
      return nullptr;
    return &graph_.node[it->second];
  }

  // The Const behind `reader`'s data input `i` (a ConstNode), made `reader`'s alone: when others
  // read it too, a copy under a new name, which `reader` then reads. The node vector has room
  // reserved for these copies (the constructor), so no pointer into it moves.
  NodeDef* PrivateConst(NodeDef* reader, int i) {
    bool unused;
    const std::string name = ProducerName(reader->input[i], &unused);
    if (data_consumers_[name] == 1) return &graph_.node[index_.at(name)];
    NodeDef copy = graph_.node[index_.at(name)];
    copy.name = reader->name + "/_folded_const";
    for (int k = 1; index_.count(copy.name); ++k)
      copy.name = reader->name + "/_folded_const_" + std::to_string(k);
    --data_consumers_[name];
    data_consumers_[copy.name] = 1;
    reader->input[i] = copy.name;
    index_[copy.name] = graph_.node.size();
    removed_.push_back(false);
    graph_.node.push_back(std::move(copy));
    return &graph_.node.back();
  }

  // Fuses the pattern ending at node `last` (an activation, or a BiasAdd when
  // !with_activation); false when it does not match or the predicate refuses.
  bool TryFuse(size_t last, bool with_activation) {
    NodeDef& tail = graph_.node[last];
    if (tail.input.empty()) return false;
    NodeDef* bias_add = with_activation ? SoleProducer(tail.input[0]) : &tail;
    if (bias_add == nullptr || !IsBiasAddLike(bias_add->op) || bias_add->input.size() < 2 ||
        IsControl(bias_add->input[1]))
      return false;
    // BiasAdd(contraction, bias); Add/AddV2 with the contraction on either side and a Const
    // vector over its output channels on the other (TensorFlow's "bias-semantic" add).
    pending_bias_ = Tensor();
    const bool add = bias_add->op != "BiasAdd";
    auto is_contraction = [](const NodeDef* n) {
      return n != nullptr && FusedFormOf(n->op) != nullptr;
    };
    int side = 0;
    NodeDef* contraction = SoleProducer(bias_add->input[0]);
    if (add && !is_contraction(contraction)) {
      side = 1;
      contraction = SoleProducer(bias_add->input[1]);
    }
    if (contraction == nullptr || contraction->input.size() < 2 || IsControl(contraction->input[1]))
      return false;
    const FusedForm* form = FusedFormOf(contraction->op);
    if (form == nullptr) return false;
    const bool conv = contraction->op != "MatMul";
    // TensorFlow's fused depthwise convolution has SAME and VALID padding only.
    if (contraction->op == "DepthwiseConv2dNative" &&
        StringAttrOr(*contraction, "padding", "") == "EXPLICIT")
      return false;
    std::string bias_input = bias_add->input[1 - side];
    if (add && !OneDimensionalBias(*contraction, &bias_input)) return false;
    std::vector<const NodeDef*> parts = {contraction, bias_add};
    if (with_activation) parts.push_back(&tail);
    for (const NodeDef* p : parts)
      if (p->device != contraction->device || !TypeAttr(*p) || TypeAttr(*p) != TypeAttr(tail))
        return false;
    if (conv && (StringAttrOr(*contraction, "data_format", "NHWC") != "NHWC" ||
                 StringAttrOr(*bias_add, "data_format", "NHWC") != "NHWC"))
      return false;

    NodeDef fused;
    fused.name = tail.name;
    fused.op = form->op;
    fused.device = contraction->device;
    fused.input = {contraction->input[0], contraction->input[1], bias_input};
    AppendControlInputs(&fused, parts, parts);
    for (const auto& [name, value] : contraction->attr)
      if (name[0] == '_' || form->attrs.count(name)) fused.attr[name] = value;
    std::vector<std::string> fused_ops = {"BiasAdd"};
    if (with_activation) fused_ops.push_back(tail.op);
    fused.attr["fused_ops"] = AttrValue::StringList(fused_ops);
    fused.attr["num_args"] = AttrValue::Int(1);
    if (contraction->op == "Conv2D") fused.attr["TArgs"] = AttrValue::TypeList({*TypeAttr(tail)});
    fused.attr["epsilon"] = AttrValue::Float(0.0001f);
    fused.attr["leakyrelu_alpha"] = AttrValue::Float(LeakyReluAlpha(tail));
    if (!predicate_(fused, parts)) return false;

    if (pending_bias_.IsInitialized()) {
      // The add's [1, ..., 1, channels] Const, as the fused op's vector.
      NodeDef* vector = PrivateConst(bias_add, 1 - side);
      vector->attr["value"] = AttrValue::TensorValue(std::move(pending_bias_));
      pending_bias_ = Tensor();
      fused.input[2] = vector->name;
    }
    removed_[index_.at(contraction->name)] = true;
    if (with_activation) removed_[index_.at(bias_add->name)] = true;
    tail = std::move(fused);
    return true;
  }

  // Whether inputs `a` and `b` have one shape as far as static shapes prove it: rank 4, the
  // same known height, width and channels, and the same known batch or both unknown (a model's
  // batch dim, unknown in a frozen graph, is the same one along a residual block).
  bool SameConvOutputShape(const std::string& a, const std::string& b) const {
    if (!shapes_) return false;
    const std::optional<PartialTensorShape> sa = shapes_(a), sb = shapes_(b);
    if (!sa || !sb || sa->rank() != 4 || sb->rank() != 4) return false;
    for (int d = 0; d < 4; ++d) {
      const int64_t x = sa->dim(d), y = sb->dim(d);
      if (x != y || (x < 0 && d != 0)) return false;
    }
    return true;
  }

  // Fuses Add(conv, addend) (either order), where conv is a _FusedConv2D that only adds its
  // bias and that only the Add reads and the addend a tensor of the convolution's output shape,
  // optionally followed by an activation (node `last`), into one _FusedConv2D with fused_ops
  // [BiasAdd, Add(, activation)] and args (bias, addend): TensorFlow's oneDNN remapper does the
  // same for a residual connection (ResNet's Add and Relu after each block's last convolution).
  bool TryFuseAddend(size_t last, bool with_activation) {
    NodeDef& tail = graph_.node[last];
    if (tail.input.empty()) return false;
    NodeDef* add = with_activation ? SoleProducer(tail.input[0]) : &tail;
    if (add == nullptr || (add->op != "AddV2" && add->op != "Add") || add->input.size() < 2 ||
        IsControl(add->input[1]))
      return false;
    auto bias_only_conv = [](const NodeDef* n) {
      return n != nullptr && n->input.size() >= 3 && FusedBiasOnly(*n, "_FusedConv2D");
    };
    int side = 0;
    NodeDef* conv = SoleProducer(add->input[0]);
    if (!bias_only_conv(conv)) {
      side = 1;
      conv = SoleProducer(add->input[1]);
    }
    if (!bias_only_conv(conv) || IsControl(conv->input[2])) return false;
    const std::string& addend = add->input[1 - side];
    if (!SameConvOutputShape(add->input[side], addend)) return false;
    std::vector<const NodeDef*> parts = {conv, add};
    if (with_activation) parts.push_back(&tail);
    for (const NodeDef* p : parts)
      if (p->device != conv->device || TypeAttr(*p) != DT_FLOAT) return false;

    NodeDef fused = *conv;
    fused.name = tail.name;
    fused.input = {conv->input[0], conv->input[1], conv->input[2], addend};
    AppendControlInputs(&fused, parts, parts);
    std::vector<std::string> fused_ops = {"BiasAdd", "Add"};
    if (with_activation) fused_ops.push_back(tail.op);
    fused.attr["fused_ops"] = AttrValue::StringList(fused_ops);
    fused.attr["num_args"] = AttrValue::Int(2);
    fused.attr["TArgs"] = AttrValue::TypeList({DT_FLOAT, DT_FLOAT});
    fused.attr["leakyrelu_alpha"] = AttrValue::Float(LeakyReluAlpha(tail));
    if (!predicate_(fused, parts)) return false;
    removed_[index_.at(conv->name)] = true;
    if (with_activation) removed_[index_.at(add->name)] = true;
    tail = std::move(fused);
    return true;
  }

  GraphDef& graph_;
  const std::set<std::string>& keep_;
  const FusionPredicate& predicate_;
  const TensorShapes& shapes_;
  std::vector<bool> removed_;
  std::map<std::string, size_t> index_;
  std::map<std::string, int> data_consumers_, control_consumers_;
  // The value of an add's bias Const as a vector, to write once its fusion is decided.
  Tensor pending_bias_;
};

}  // namespace

int FuseContractions(GraphDef* graph, const std::set<std::string>& keep,
                     const FusionPredicate& runs_fused_on_cpu, const TensorShapes& shapes) {
  return Remapper(graph, keep, runs_fused_on_cpu, shapes).Run();
}

FusionPredicate CpuOnlyPredicate(const std::vector<Device*>& devices, const OpRegistry& ops,
                                 const KernelRegistry& kernels) {
  return
      [&devices, &ops, &kernels](const NodeDef& fused, const std::vector<const NodeDef*>& parts) {
        const OpRegistration* fused_op = ops.LookUp(fused.op);
        if (fused_op == nullptr) return false;
        std::optional<DeviceName> request;
        if (!fused.device.empty()) {
          StatusOr<DeviceName> parsed = DeviceName::Parse(fused.device);
          if (!parsed.ok()) return false;
          request = *parsed;
        }
        bool cpu_kernel = false;
        for (const Device* d : devices) {
          if (request && !request->Matches(d->name())) continue;
          if (d->type() == "CPU") {
            cpu_kernel = cpu_kernel || kernels.HasKernel(fused, fused_op->def, "CPU");
            continue;
          }
          for (const NodeDef* part : parts) {
            const OpRegistration* op = ops.LookUp(part->op);
            if (op != nullptr && kernels.HasKernel(*part, op->def, d->type())) return false;
          }
        }
        return cpu_kernel;
      };
}

TensorShapes InferTensorShapes(const GraphDef& graph, const OpRegistry& ops) {
  // Only residual adds after convolutions ask for shapes: a graph without one is not inferred.
  if (std::none_of(graph.node.begin(), graph.node.end(),
                   [](const NodeDef& n) { return n.op == "Conv2D" || n.op == "_FusedConv2D"; }))
    return {};
  StatusOr<std::unique_ptr<Graph>> g = Graph::FromGraphDef(graph, &ops);
  if (!g.ok()) return {};
  auto outputs = std::make_shared<std::map<std::string, std::vector<PartialTensorShape>>>();
  std::vector<NodeShapes> shapes = InferGraphShapes(**g);
  for (const auto& n : (*g)->nodes())
    if (n != nullptr) (*outputs)[n->name()] = std::move(shapes[n->id()].outputs);
  return [outputs](const std::string& tensor) -> std::optional<PartialTensorShape> {
    StatusOr<TensorId> id = ParseTensorName(tensor);
    if (!id.ok()) return std::nullopt;
    auto it = outputs->find(id->node);
    // A control input has port -1.
    if (it == outputs->end() || id->port < 0 || id->port >= static_cast<int>(it->second.size()))
      return std::nullopt;
    return it->second[id->port];
  };
}

}  // namespace cfx
