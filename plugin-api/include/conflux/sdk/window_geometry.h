// Sliding-window geometry shared by Conv2D, its backprops and the pooling ops (NHWC) of every
// device's kernels and the op packs' shape functions: TensorFlow's rules for the output size and
// the padding of SAME, VALID and EXPLICIT windows. Pure: thread-safe.
//
//   effective kernel  k' = (k - 1) * dilation + 1
//   VALID:    out = ceil((in - k' + 1) / stride), no padding
//   SAME:     out = ceil(in / stride), pad_total = max((out - 1) * stride + k' - in, 0),
//             pad_before = pad_total / 2 (the extra one goes after)
//   EXPLICIT: out = (in + before + after - k') / stride + 1, the paddings given
#ifndef CONFLUX_SDK_WINDOW_GEOMETRY_H_
#define CONFLUX_SDK_WINDOW_GEOMETRY_H_

#include <algorithm>
#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"
#include "conflux/sdk/status.h"
#include "conflux/sdk/tensor.h"

namespace cfx::sdk {

enum class Padding { kSame, kValid, kExplicit };

// One spatial dimension of a window.
struct WindowDim {
  int64_t in = 0, kernel = 1, stride = 1, dilation = 1;
  int64_t out = 0, pad_before = 0, pad_after = 0;
};

// The attrs of a 2-D window op (strides, dilations, padding, explicit_paddings, data_format).
struct WindowAttrs {
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  Padding padding = Padding::kValid;
  int64_t explicit_pad[4] = {0, 0, 0, 0};  // top, bottom, left, right
};

inline Status ReadPadding(const Attrs& a, Padding* out) {
  std::string p;
  CFX_SDK_RETURN_IF_ERROR(a.Get("padding", &p));
  if (p == "SAME")
    *out = Padding::kSame;
  else if (p == "VALID")
    *out = Padding::kValid;
  else if (p == "EXPLICIT")
    *out = Padding::kExplicit;
  else
    return InvalidArgument("padding must be SAME, VALID or EXPLICIT, got \"", p, "\"");
  return Status();
}

// A 4-element NHWC attr (strides, dilations, ksize) whose batch and channel entries must be 1.
inline Status ReadNhwcList(const Attrs& a, const char* name, bool required, int64_t* h,
                           int64_t* w) {
  std::vector<int64_t> v;
  if (!a.Has(name) && !required) return Status();
  CFX_SDK_RETURN_IF_ERROR(a.Get(name, &v));
  if (v.size() != 4) return InvalidArgument(name, " must have 4 elements (NHWC), got ", v.size());
  if (v[0] != 1 || v[3] != 1)
    return Unimplemented(name, " over the batch or channel dimension is not supported: ", name,
                         " = [", v[0], ", ", v[1], ", ", v[2], ", ", v[3],
                         "] must start and end with 1");
  if (v[1] < 1 || v[2] < 1)
    return InvalidArgument(name, " must be positive, got [", v[0], ", ", v[1], ", ", v[2], ", ",
                           v[3], "]");
  *h = v[1];
  *w = v[2];
  return Status();
}

inline Status ReadNhwcFormat(const Attrs& a) {
  std::string f;
  CFX_SDK_RETURN_IF_ERROR(a.GetOr<std::string>("data_format", &f, "NHWC"));
  if (f != "NHWC") return Unimplemented("data_format ", f, " is not supported on CPU; use NHWC");
  return Status();
}

// Reads the attrs of a convolution (`conv`: dilations) or a pooling op; both take padding
// EXPLICIT where their OpDef allows it.
inline Status ReadWindowAttrs(const Attrs& a, bool conv, WindowAttrs* w) {
  CFX_SDK_RETURN_IF_ERROR(ReadNhwcFormat(a));
  CFX_SDK_RETURN_IF_ERROR(ReadNhwcList(a, "strides", true, &w->stride_h, &w->stride_w));
  if (conv)
    CFX_SDK_RETURN_IF_ERROR(ReadNhwcList(a, "dilations", false, &w->dilation_h, &w->dilation_w));
  CFX_SDK_RETURN_IF_ERROR(ReadPadding(a, &w->padding));
  if (w->padding == Padding::kExplicit) {
    std::vector<int64_t> p;
    CFX_SDK_RETURN_IF_ERROR(a.Get("explicit_paddings", &p));
    if (p.size() != 8)
      return InvalidArgument(
          "explicit_paddings must have 8 elements with padding EXPLICIT, "
          "got ",
          p.size());
    if (p[0] != 0 || p[1] != 0 || p[6] != 0 || p[7] != 0)
      return Unimplemented("explicit_paddings over the batch or channel dimension");
    for (int i = 0; i < 4; ++i) {
      if (p[2 + i] < 0) return InvalidArgument("explicit_paddings must be >= 0");
      w->explicit_pad[i] = p[2 + i];
    }
  }
  return Status();
}

// The attrs of a pooling op: its window (ksize) besides the common ones.
struct PoolAttrs {
  WindowAttrs window;
  int64_t kernel_h = 1, kernel_w = 1;
};

// With padding EXPLICIT each padding must be smaller than the window (TensorFlow's rule), so
// that every window holds at least one element of the input.
inline Status ReadPoolAttrs(const Attrs& a, PoolAttrs* p) {
  CFX_SDK_RETURN_IF_ERROR(ReadWindowAttrs(a, /*conv=*/false, &p->window));
  CFX_SDK_RETURN_IF_ERROR(ReadNhwcList(a, "ksize", true, &p->kernel_h, &p->kernel_w));
  if (p->window.padding != Padding::kExplicit) return Status();
  const int64_t* pad = p->window.explicit_pad;
  if (pad[0] >= p->kernel_h || pad[1] >= p->kernel_h || pad[2] >= p->kernel_w ||
      pad[3] >= p->kernel_w)
    return InvalidArgument("explicit_paddings (rows ", pad[0], ", ", pad[1], ", columns ", pad[2],
                           ", ", pad[3], ") must be smaller than the window (", p->kernel_h, " x ",
                           p->kernel_w, ")");
  return Status();
}

// Fills out/pad of `d` (in, kernel, stride, dilation set); `before`/`after` for EXPLICIT.
// kUnknown `in` gives an unknown `out`. Kernel sizes, strides, dilations and paddings are attrs or
// input values of any size: every step is checked, and a window whose arithmetic (or padded
// input) does not fit int64 is an InvalidArgument.
inline Status ComputeWindow(WindowDim* d, Padding padding, int64_t before, int64_t after,
                            const char* dim_name) {
  bool overflow = false;
  auto add = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    overflow = __builtin_add_overflow(a, b, &r) || overflow;
    return r;
  };
  auto sub = [&](int64_t a, int64_t b) {
    int64_t r = 0;
    overflow = __builtin_sub_overflow(a, b, &r) || overflow;
    return r;
  };
  int64_t span = 0;
  overflow = __builtin_mul_overflow(d->kernel - 1, d->dilation, &span);
  const int64_t k = add(span, 1);
  if (overflow)
    return InvalidArgument("the ", dim_name, " window of ", d->kernel, " with dilation ",
                           d->dilation, " spans more than 2^63-1 elements");
  if (d->in < 0) {
    d->out = kUnknown;
    return Status();
  }
  // ceil(a / b) is written a / b + (a % b != 0) and (a - k + stride) / stride as
  // (a - k) / stride + 1: the same values without the sums that can overflow.
  switch (padding) {
    case Padding::kValid:
      if (d->in < k)
        return InvalidArgument("the ", dim_name, " window (", k, " with dilation) is larger ",
                               "than the input (", d->in, ") with padding VALID");
      d->out = sub(d->in, k) / d->stride + 1;
      d->pad_before = d->pad_after = 0;
      break;
    case Padding::kSame: {
      d->out = d->in / d->stride + (d->in % d->stride != 0 ? 1 : 0);
      // (out - 1) * stride + k - in, where (out - 1) * stride < in.
      const int64_t total = std::max<int64_t>(sub(k, d->in - (d->out - 1) * d->stride), 0);
      d->pad_before = total / 2;
      d->pad_after = total - d->pad_before;
      add(d->in, total);  // the padded input, which window positions are taken in
      break;
    }
    case Padding::kExplicit: {
      const int64_t padded = add(add(d->in, before), after);
      if (!overflow && padded < k)
        return InvalidArgument("the ", dim_name, " window (", k, ") is larger than the ",
                               "padded input (", padded, ")");
      d->out = sub(padded, k) / d->stride + 1;
      d->pad_before = before;
      d->pad_after = after;
      break;
    }
  }
  if (overflow)
    return InvalidArgument("the ", dim_name, " window (", k, ", stride ", d->stride,
                           ") over an input of ", d->in, " with padding ", d->pad_before, " + ",
                           d->pad_after, " does not fit int64 arithmetic");
  // The convolution libraries (oneDNN, cuDNN) take 32-bit window geometry, as TensorFlow's
  // kernels do.
  constexpr int64_t kMax32 = 2147483647;
  if (k > kMax32 || d->stride > kMax32 || d->pad_before > kMax32 || d->pad_after > kMax32)
    return InvalidArgument("the ", dim_name, " window (", k, " with dilation ", d->dilation,
                           ", stride ", d->stride, ", padding ", d->pad_before, " + ",
                           d->pad_after, ") exceeds 2^31-1, the most a window op takes");
  return Status();
}

// Both spatial dims of a window over an NHWC input [*, in_h, in_w, *].
inline Status ComputeWindows(const WindowAttrs& a, int64_t in_h, int64_t in_w, int64_t kernel_h,
                             int64_t kernel_w, WindowDim* h, WindowDim* w) {
  *h = WindowDim{in_h, kernel_h, a.stride_h, a.dilation_h};
  *w = WindowDim{in_w, kernel_w, a.stride_w, a.dilation_w};
  CFX_SDK_RETURN_IF_ERROR(ComputeWindow(h, a.padding, a.explicit_pad[0], a.explicit_pad[1], "row"));
  return ComputeWindow(w, a.padding, a.explicit_pad[2], a.explicit_pad[3], "column");
}

// The groups of a convolution (TensorFlow's grouped Conv2D): the input's channels split into
// in_channels / filter_in_channels groups, each convolved with its own out_channels / groups
// filters. Unknown dims (< 0) give unknown groups (-1); channels that do not split evenly into at
// least one group are InvalidArgument naming both shapes.
inline Status ConvGroups(const Shape& input, const Shape& filter, int64_t* groups) {
  const int64_t in_c = input[3], filter_c = filter[2], out_c = filter[3];
  *groups = -1;
  if (in_c < 0 || filter_c < 0) return Status();
  if (in_c == filter_c) {
    *groups = 1;
    return Status();
  }
  // Zero channels on one side only is no grouping either: 0 / filter_c groups would divide the
  // output channels by zero.
  if (filter_c == 0 || in_c == 0 || in_c % filter_c != 0)
    return InvalidArgument("input has ", in_c, " channels (shape ", shape_rules::ShapeStr(input),
                           "), not a positive multiple of the filter's ", filter_c,
                           " input channels (shape ", shape_rules::ShapeStr(filter), ")");
  *groups = in_c / filter_c;
  if (out_c >= 0 && out_c % *groups != 0)
    return InvalidArgument("the filter's ", out_c, " output channels (shape ",
                           shape_rules::ShapeStr(filter), ") are not a multiple of the ", *groups,
                           " groups of the input's ", in_c, " channels (shape ",
                           shape_rules::ShapeStr(input), ")");
  return Status();
}

// Geometry of one convolution: input [n, h, w, c], filter [kh, kw, c / groups, o], output
// [n, oh, ow, o]. With groups > 1, output channels [k * o / groups, (k + 1) * o / groups) see
// only input channels [k * c / groups, (k + 1) * c / groups).
struct ConvGeometry {
  int64_t n = 0, c = 0, o = 0, groups = 1;
  WindowDim h, w;
  Shape input() const { return {n, h.in, w.in, c}; }
  Shape filter() const { return {h.kernel, w.kernel, c / groups, o}; }
  Shape output() const { return {n, h.out, w.out, o}; }
  std::vector<int64_t> Key() const { return {n, c, o, groups, h.in, w.in, h.kernel, w.kernel}; }
};

inline Status MakeConvGeometry(const WindowAttrs& a, const Shape& input, const Shape& filter,
                               ConvGeometry* g) {
  if (input.size() != 4)
    return InvalidArgument("input must have rank 4 (NHWC), got shape ",
                           shape_rules::ShapeStr(input));
  if (filter.size() != 4)
    return InvalidArgument("filter must have rank 4 (HWIO), got shape ",
                           shape_rules::ShapeStr(filter));
  CFX_SDK_RETURN_IF_ERROR(ConvGroups(input, filter, &g->groups));
  g->n = input[0];
  g->c = input[3];
  g->o = filter[3];
  return ComputeWindows(a, input[1], input[2], filter[0], filter[1], &g->h, &g->w);
}

// A convolution gradient's out_backprop must have the convolution's output shape.
inline Status CheckOutBackprop(const Shape& out_backprop, const ConvGeometry& g) {
  if (out_backprop == g.output()) return Status();
  return InvalidArgument("out_backprop has shape ", shape_rules::ShapeStr(out_backprop),
                         " but the convolution of ", shape_rules::ShapeStr(g.input()), " by ",
                         shape_rules::ShapeStr(g.filter()), " gives ",
                         shape_rules::ShapeStr(g.output()));
}

// Reads a shape from a 1-D int32/int64 tensor of 4 elements (input_sizes, filter_sizes).
inline Status ConvSizesFromTensor(const Tensor& t, const char* name, Shape* out) {
  if (t.rank() != 1 || t.num_elements() != 4)
    return InvalidArgument(name, " must be a vector of 4 elements, got shape ",
                           shape_rules::ShapeStr(t.shape()));
  out->resize(4);
  for (int i = 0; i < 4; ++i) {
    (*out)[i] = t.dtype() == CFX_INT64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
    if ((*out)[i] < 0) return InvalidArgument(name, " has a negative dimension");
  }
  return Status();
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_WINDOW_GEOMETRY_H_
