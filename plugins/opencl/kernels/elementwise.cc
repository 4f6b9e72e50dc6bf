// Element-wise ops on OpenCL, all from one program ("elementwise"): binary arithmetic with NumPy
// broadcasting (Add, AddV2, Sub, Mul, Div, RealDiv, Maximum, Minimum, SquaredDifference, Pow,
// Xlog1py, DivNoNan, MulNoNan),
// comparisons (Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual -> bool), unary math (Neg,
// Abs, Square, Relu, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos, Reciprocal, Floor, Ceil,
// Log1p, Expm1, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Lgamma), Cast between
// float, int32 and bool, Select / SelectV2, and AddN (Add's kernel once per further input).
//
// Semantics follow the CPU plugin: integer arithmetic wraps around; Maximum, Minimum and Relu
// keep NaN; float -> int32 saturates and maps NaN to 0 (convert_int_sat); x -> bool is x != 0.
// Kernel names are <Op>_<OpenCL type>: Add_float, Less_int, Cast_float_uchar, Select_float.
#include <climits>
#include <string>
#include <vector>

#include "conflux/sdk/shape_rules.h"
#include "kernels/kernels.h"
#include "opencl_runtime.h"

namespace cfx::ocl {
namespace {

const ProgramSource kElementwise = {"elementwise", R"CLC(
#define BINARY(NAME, T, OUT, EXPR)                                                          \
  __kernel void NAME(__global OUT* z, __global const T* xs, __global const T* ys,           \
                     cfx_bcast b, int n) {                                                  \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    int o0, o1, o2;                                                                         \
    cfx_bcast_offsets(&b, i, &o0, &o1, &o2);                                                \
    T x = xs[o0];                                                                           \
    T y = ys[o1];                                                                           \
    z[i] = (EXPR);                                                                          \
  }
#define UNARY(NAME, T, EXPR)                                      \
  __kernel void NAME(__global T* ys, __global const T* xs, int n) { \
    int i = get_global_id(0);                                     \
    if (i >= n) return;                                           \
    T x = xs[i];                                                  \
    ys[i] = (EXPR);                                               \
  }
#define CAST(NAME, S, D, EXPR)                                    \
  __kernel void NAME(__global D* ys, __global const S* xs, int n) { \
    int i = get_global_id(0);                                     \
    if (i >= n) return;                                           \
    S x = xs[i];                                                  \
    ys[i] = (EXPR);                                               \
  }
#define SELECT(NAME, T)                                                                     \
  __kernel void NAME(__global T* z, __global const uchar* cs, __global const T* ts,         \
                     __global const T* es, cfx_bcast b, int n) {                            \
    int i = get_global_id(0);                                                               \
    if (i >= n) return;                                                                     \
    int o0, o1, o2;                                                                         \
    cfx_bcast_offsets(&b, i, &o0, &o1, &o2);                                                \
    z[i] = cs[o0] ? ts[o1] : es[o2];                                                        \
  }

/* Wrapping int32 arithmetic (signed overflow is undefined in OpenCL C as in C). */
#define WADD(a, b) as_int(as_uint(a) + as_uint(b))
#define WSUB(a, b) as_int(as_uint(a) - as_uint(b))
#define WMUL(a, b) as_int(as_uint(a) * as_uint(b))

BINARY(Add_float, float, float, x + y)
BINARY(Sub_float, float, float, x - y)
BINARY(Mul_float, float, float, x * y)
BINARY(RealDiv_float, float, float, x / y)
BINARY(Div_float, float, float, x / y)
BINARY(Maximum_float, float, float, (x > y || isnan(x)) ? x : y)
BINARY(Minimum_float, float, float, (x < y || isnan(x)) ? x : y)
BINARY(SquaredDifference_float, float, float, (x - y) * (x - y))
BINARY(Pow_float, float, float, pow(x, y))
BINARY(Xlog1py_float, float, float, x == 0.0f ? 0.0f : x * log1p(y))
BINARY(DivNoNan_float, float, float, y == 0.0f ? 0.0f : x / y)
BINARY(MulNoNan_float, float, float, y == 0.0f ? 0.0f : x * y)
BINARY(Add_int, int, int, WADD(x, y))
BINARY(Sub_int, int, int, WSUB(x, y))
BINARY(Mul_int, int, int, WMUL(x, y))
BINARY(Maximum_int, int, int, max(x, y))
BINARY(Minimum_int, int, int, min(x, y))
BINARY(SquaredDifference_int, int, int, WMUL(WSUB(x, y), WSUB(x, y)))

#define COMPARISONS(T)                                  \
  BINARY(Less_##T, T, uchar, x < y ? 1 : 0)             \
  BINARY(LessEqual_##T, T, uchar, x <= y ? 1 : 0)       \
  BINARY(Greater_##T, T, uchar, x > y ? 1 : 0)          \
  BINARY(GreaterEqual_##T, T, uchar, x >= y ? 1 : 0)    \
  BINARY(Equal_##T, T, uchar, x == y ? 1 : 0)           \
  BINARY(NotEqual_##T, T, uchar, x != y ? 1 : 0)
COMPARISONS(float)
COMPARISONS(int)
BINARY(Equal_uchar, uchar, uchar, (x != 0) == (y != 0) ? 1 : 0)
BINARY(NotEqual_uchar, uchar, uchar, (x != 0) != (y != 0) ? 1 : 0)

UNARY(Neg_float, float, -x)
UNARY(Abs_float, float, fabs(x))
UNARY(Square_float, float, x * x)
UNARY(Relu_float, float, (x > 0.0f || isnan(x)) ? x : 0.0f)
UNARY(Exp_float, float, exp(x))
UNARY(Sin_float, float, sin(x))
UNARY(Cos_float, float, cos(x))
UNARY(Reciprocal_float, float, 1.0f / x)
UNARY(Log_float, float, log(x))
UNARY(Sqrt_float, float, sqrt(x))
UNARY(Rsqrt_float, float, 1.0f / sqrt(x))
UNARY(Tanh_float, float, tanh(x))
UNARY(Sigmoid_float, float, 1.0f / (1.0f + exp(-x)))
UNARY(Floor_float, float, floor(x))
UNARY(Ceil_float, float, ceil(x))
UNARY(Log1p_float, float, log1p(x))
UNARY(Expm1_float, float, expm1(x))
UNARY(Tan_float, float, tan(x))
UNARY(Asin_float, float, asin(x))
UNARY(Acos_float, float, acos(x))
UNARY(Atan_float, float, atan(x))
UNARY(Sinh_float, float, sinh(x))
UNARY(Cosh_float, float, cosh(x))
UNARY(Asinh_float, float, asinh(x))
UNARY(Acosh_float, float, acosh(x))
UNARY(Atanh_float, float, atanh(x))
UNARY(Lgamma_float, float, lgamma(x))
UNARY(Neg_int, int, WSUB(0, x))
UNARY(Abs_int, int, x < 0 ? WSUB(0, x) : x)
UNARY(Square_int, int, WMUL(x, x))
UNARY(Relu_int, int, x > 0 ? x : 0)

CAST(Cast_float_int, float, int, convert_int_sat(x))
CAST(Cast_float_uchar, float, uchar, x != 0.0f ? 1 : 0)
CAST(Cast_int_float, int, float, convert_float(x))
CAST(Cast_int_uchar, int, uchar, x != 0 ? 1 : 0)
CAST(Cast_uchar_float, uchar, float, x != 0 ? 1.0f : 0.0f)
CAST(Cast_uchar_int, uchar, int, x != 0 ? 1 : 0)

SELECT(Select_float, float)
SELECT(Select_int, int)
SELECT(Select_uchar, uchar)
)CLC"};

// The OpenCL C spelling of a dtype in kernel names.
const char* ClType(cfx_dtype t) {
  switch (t) {
    case CFX_FLOAT:
      return "float";
    case CFX_INT32:
      return "int";
    case CFX_BOOL:
      return "uchar";
    default:
      return "unsupported";
  }
}

// Enqueues kernel `name` over `n` > 0 elements with `args` (the element count is appended as the
// last argument).
sdk::Status EnqueueElementwise(sdk::KernelContext& ctx, const std::string& name, int64_t n,
                               std::initializer_list<KernelArg> args) {
  if (n > INT32_MAX)
    return sdk::Unimplemented("element-wise ops on OpenCL take at most 2^31-1 elements, got ", n);
  CFX_SDK_ASSIGN_OR_RETURN(KernelFunction * k, GetKernel(ctx.device(), kElementwise, name.c_str()));
  std::vector<KernelArg> all(args);
  all.emplace_back(static_cast<int32_t>(n));
  return Enqueue(ctx, k, Elementwise1D(ctx.device(), n), all);
}

// EnqueueElementwise, then completes; done at once when empty.
sdk::Status Launch(sdk::KernelContext& ctx, sdk::AsyncDone done, const std::string& name,
                   int64_t n, std::initializer_list<KernelArg> args) {
  if (n == 0) {
    done();
    return sdk::Status();
  }
  CFX_SDK_RETURN_IF_ERROR(EnqueueElementwise(ctx, name, n, args));
  return CompleteAsync(ctx, done);
}

// Binary arithmetic (kBool = false: output T, may reuse an input's buffer) and comparisons
// (kBool = true: output bool). Equal and NotEqual honour incompatible_shape_error = false.
template <bool kBool>
class BinaryKernel {
 public:
  BinaryKernel(const char* base, int incompatible_result)
      : base_(base), incompatible_result_(incompatible_result) {}
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("T", &dtype_));
    if (incompatible_result_ >= 0)
      CFX_SDK_RETURN_IF_ERROR(
          init.attrs().GetOr("incompatible_shape_error", &incompatible_shape_error_, true));
    name_ = std::string(base_) + "_" + ClType(dtype_);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {dtype_, dtype_}));
    sdk::Tensor x = ctx.input(0), y = ctx.input(1);
    auto b = MakeBroadcast({{"x", x.shape()}, {"y", y.shape()}});
    if (!b.ok()) {
      if (incompatible_result_ < 0 || incompatible_shape_error_) return b.status();
      // Shapes that do not broadcast: the scalar "not equal" answer.
      CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.AllocateOutput(0, sdk::Shape()));
      const unsigned char v = static_cast<unsigned char>(incompatible_result_);
      CFX_SDK_RETURN_IF_ERROR(FillBuffer(ctx, Mem(z), &v, 1, 1));
      return CompleteAsync(ctx, done);
    }
    sdk::Tensor z;
    if constexpr (kBool) {
      CFX_SDK_ASSIGN_OR_RETURN(z, ctx.AllocateOutput(0, b->output_shape));
    } else {
      CFX_SDK_ASSIGN_OR_RETURN(z, ctx.ForwardOrAllocateOutput({0, 1}, 0, b->output_shape));
    }
    return Launch(ctx, done, name_, b->num_elements,
                  {Mem(z), Mem(x), Mem(y), KernelArg::Struct(b->index)});
  }

 private:
  const char* base_;
  int incompatible_result_;  // -1: not Equal/NotEqual
  bool incompatible_shape_error_ = true;
  cfx_dtype dtype_ = CFX_INVALID;
  std::string name_;
};

// One kernel class per op name (the SDK default-constructs kernels).
template <const char* kBase, bool kBool, int kIncompatible = -1>
class Binary : public BinaryKernel<kBool> {
 public:
  Binary() : BinaryKernel<kBool>(kBase, kIncompatible) {}
};

class UnaryKernel {
 public:
  explicit UnaryKernel(const char* base) : base_(base) {}
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("T", &dtype_));
    name_ = std::string(base_) + "_" + ClType(dtype_);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {dtype_}));
    sdk::Tensor x = ctx.input(0);
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.ForwardOrAllocateOutput({0}, 0, x.shape()));
    return Launch(ctx, done, name_, x.num_elements(), {Mem(y), Mem(x)});
  }

 private:
  const char* base_;
  cfx_dtype dtype_ = CFX_INVALID;
  std::string name_;
};

template <const char* kBase>
class Unary : public UnaryKernel {
 public:
  Unary() : UnaryKernel(kBase) {}
};

class CastKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("SrcT", &src_));
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("DstT", &dst_));
    name_ = std::string("Cast_") + ClType(src_) + "_" + ClType(dst_);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {src_}));
    sdk::Tensor x = ctx.input(0);
    if (src_ == dst_) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, x));
      done();
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor y, ctx.AllocateOutput(0, x.shape()));
    return Launch(ctx, done, name_, x.num_elements(), {Mem(y), Mem(x)});
  }

 private:
  cfx_dtype src_ = CFX_INVALID, dst_ = CFX_INVALID;
  std::string name_;
};

// Select's (v1) rules: t and e of one shape; the condition a scalar, of that shape, or a vector
// picking rows (seen as [n, 1, ..., 1]).
sdk::Result<Broadcast> SelectV1Broadcast(const sdk::Shape& c, const sdk::Shape& t,
                                         const sdk::Shape& e) {
  if (t != e)
    return sdk::InvalidArgument("'t' and 'e' must have the same shape, got ", sdk::ShapeString(t),
                                " and ", sdk::ShapeString(e));
  sdk::Shape c_as_t = c;
  if (c.size() == 1 && t.size() > 1) {
    if (c[0] != t[0])
      return sdk::InvalidArgument("'condition' is a vector of ", c[0], " elements but 't' has ",
                                  t[0], " rows (shape ", sdk::ShapeString(t),
                                  "); they must match");
    c_as_t.assign(t.size(), 1);
    c_as_t[0] = c[0];
  } else if (!c.empty() && c != t) {
    return sdk::InvalidArgument(
        "'condition' must be a scalar, have the shape of 't', or be a vector as long as the "
        "first dimension of 't'; got condition ",
        sdk::ShapeString(c), " and t ", sdk::ShapeString(t));
  }
  return MakeBroadcast({{"condition", c_as_t}, {"t", t}, {"e", e}});
}

template <bool kV2>
class SelectKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("T", &dtype_));
    name_ = std::string("Select_") + ClType(dtype_);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, {CFX_BOOL, dtype_, dtype_}));
    sdk::Tensor c = ctx.input(0), t = ctx.input(1), e = ctx.input(2);
    CFX_SDK_ASSIGN_OR_RETURN(
        Broadcast b, kV2 ? MakeBroadcast({{"condition", c.shape()}, {"t", t.shape()},
                                          {"e", e.shape()}})
                         : SelectV1Broadcast(c.shape(), t.shape(), e.shape()));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor z, ctx.ForwardOrAllocateOutput({1, 2}, 0, b.output_shape));
    return Launch(ctx, done, name_, b.num_elements,
                  {Mem(z), Mem(c), Mem(t), Mem(e), KernelArg::Struct(b.index)});
  }

 private:
  cfx_dtype dtype_ = CFX_INVALID;
  std::string name_;
};

// AddN: sum = in0 + in1, then sum = sum + in_k for each further input, with Add's kernel over a
// flat broadcast (one shape), all launches enqueued in order before completing once. The sum may
// take the buffer of input 0 or 1: each work-item reads its element before writing it.
class AddNKernel {
 public:
  sdk::Status Init(const sdk::KernelInit& init) {
    CFX_SDK_RETURN_IF_ERROR(init.attrs().Get("T", &dtype_));
    name_ = std::string("Add_") + ClType(dtype_);
    return sdk::Status();
  }
  sdk::Status ComputeAsync(sdk::KernelContext& ctx, sdk::AsyncDone done) {
    const int n = ctx.num_inputs();
    if (n < 1) return sdk::InvalidArgument("AddN needs at least one input");
    CFX_SDK_RETURN_IF_ERROR(ExpectInputs(ctx, std::vector<cfx_dtype>(n, dtype_)));
    std::vector<sdk::Shape> shapes;
    for (int i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape());
    sdk::Shape shape;
    const std::string error = shape_rules::MergeSameShapes(shapes, &shape);
    if (!error.empty()) return sdk::InvalidArgument(error);
    if (n == 1) {
      CFX_SDK_RETURN_IF_ERROR(ctx.SetOutput(0, ctx.input(0)));
      done();
      return sdk::Status();
    }
    CFX_SDK_ASSIGN_OR_RETURN(Broadcast b, MakeBroadcast({{"x", shape}, {"y", shape}}));
    CFX_SDK_ASSIGN_OR_RETURN(sdk::Tensor sum, ctx.ForwardOrAllocateOutput({0, 1}, 0, shape));
    if (b.num_elements == 0) {
      done();
      return sdk::Status();
    }
    for (int k = 1; k < n; ++k) {
      const sdk::Tensor first = k == 1 ? ctx.input(0) : sum;
      CFX_SDK_RETURN_IF_ERROR(EnqueueElementwise(
          ctx, name_, b.num_elements,
          {Mem(sum), Mem(first), Mem(ctx.input(k)), KernelArg::Struct(b.index)}));
    }
    return CompleteAsync(ctx, done);
  }

 private:
  cfx_dtype dtype_ = CFX_INVALID;
  std::string name_;
};

// Op names as template arguments.
#define CFX_OCL_NAME(x) constexpr char k##x[] = #x;
CFX_OCL_NAME(Add)
CFX_OCL_NAME(Sub)
CFX_OCL_NAME(Mul)
CFX_OCL_NAME(RealDiv)
CFX_OCL_NAME(Div)
CFX_OCL_NAME(Maximum)
CFX_OCL_NAME(Minimum)
CFX_OCL_NAME(SquaredDifference)
CFX_OCL_NAME(Pow)
CFX_OCL_NAME(Xlog1py)
CFX_OCL_NAME(DivNoNan)
CFX_OCL_NAME(MulNoNan)
CFX_OCL_NAME(Less)
CFX_OCL_NAME(LessEqual)
CFX_OCL_NAME(Greater)
CFX_OCL_NAME(GreaterEqual)
CFX_OCL_NAME(Equal)
CFX_OCL_NAME(NotEqual)
CFX_OCL_NAME(Neg)
CFX_OCL_NAME(Abs)
CFX_OCL_NAME(Square)
CFX_OCL_NAME(Relu)
CFX_OCL_NAME(Exp)
CFX_OCL_NAME(Sin)
CFX_OCL_NAME(Cos)
CFX_OCL_NAME(Reciprocal)
CFX_OCL_NAME(Log)
CFX_OCL_NAME(Sqrt)
CFX_OCL_NAME(Rsqrt)
CFX_OCL_NAME(Tanh)
CFX_OCL_NAME(Sigmoid)
CFX_OCL_NAME(Floor)
CFX_OCL_NAME(Ceil)
CFX_OCL_NAME(Log1p)
CFX_OCL_NAME(Expm1)
CFX_OCL_NAME(Tan)
CFX_OCL_NAME(Asin)
CFX_OCL_NAME(Acos)
CFX_OCL_NAME(Atan)
CFX_OCL_NAME(Sinh)
CFX_OCL_NAME(Cosh)
CFX_OCL_NAME(Asinh)
CFX_OCL_NAME(Acosh)
CFX_OCL_NAME(Atanh)
CFX_OCL_NAME(Lgamma)
#undef CFX_OCL_NAME

// Inexpensive: a launch only enqueues, so it runs inline on the thread that made it ready.
template <typename K>
void Register(sdk::Plugin& p, const char* op, std::initializer_list<cfx_dtype> types) {
  for (cfx_dtype t : types) p.AsyncKernel<K>(op, kDeviceType).TypeConstraint("T", t).Inexpensive();
}

}  // namespace

void RegisterElementwiseKernels(sdk::Plugin& p) {
  const auto both = {CFX_FLOAT, CFX_INT32};
  const auto only_float = {CFX_FLOAT};
  Register<Binary<kAdd, false>>(p, "Add", both);
  Register<Binary<kAdd, false>>(p, "AddV2", both);
  Register<Binary<kSub, false>>(p, "Sub", both);
  Register<Binary<kMul, false>>(p, "Mul", both);
  Register<Binary<kRealDiv, false>>(p, "RealDiv", only_float);
  Register<Binary<kDiv, false>>(p, "Div", only_float);  // int32 Div must fail on zero divisors
  Register<Binary<kMaximum, false>>(p, "Maximum", both);
  Register<Binary<kMinimum, false>>(p, "Minimum", both);
  Register<Binary<kSquaredDifference, false>>(p, "SquaredDifference", both);
  Register<AddNKernel>(p, "AddN", both);
  Register<Binary<kPow, false>>(p, "Pow", only_float);
  Register<Binary<kXlog1py, false>>(p, "Xlog1py", only_float);
  Register<Binary<kDivNoNan, false>>(p, "DivNoNan", only_float);
  Register<Binary<kMulNoNan, false>>(p, "MulNoNan", only_float);
  Register<Binary<kLess, true>>(p, "Less", both);
  Register<Binary<kLessEqual, true>>(p, "LessEqual", both);
  Register<Binary<kGreater, true>>(p, "Greater", both);
  Register<Binary<kGreaterEqual, true>>(p, "GreaterEqual", both);
  Register<Binary<kEqual, true, 0>>(p, "Equal", {CFX_FLOAT, CFX_INT32, CFX_BOOL});
  Register<Binary<kNotEqual, true, 1>>(p, "NotEqual", {CFX_FLOAT, CFX_INT32, CFX_BOOL});
  Register<Unary<kNeg>>(p, "Neg", both);
  Register<Unary<kAbs>>(p, "Abs", both);
  Register<Unary<kSquare>>(p, "Square", both);
  Register<Unary<kRelu>>(p, "Relu", both);
  Register<Unary<kExp>>(p, "Exp", only_float);
  Register<Unary<kSin>>(p, "Sin", only_float);
  Register<Unary<kCos>>(p, "Cos", only_float);
  Register<Unary<kReciprocal>>(p, "Reciprocal", only_float);
  Register<Unary<kLog>>(p, "Log", only_float);
  Register<Unary<kSqrt>>(p, "Sqrt", only_float);
  Register<Unary<kRsqrt>>(p, "Rsqrt", only_float);
  Register<Unary<kTanh>>(p, "Tanh", only_float);
  Register<Unary<kSigmoid>>(p, "Sigmoid", only_float);
  Register<Unary<kFloor>>(p, "Floor", only_float);
  Register<Unary<kCeil>>(p, "Ceil", only_float);
  Register<Unary<kLog1p>>(p, "Log1p", only_float);
  Register<Unary<kExpm1>>(p, "Expm1", only_float);
  Register<Unary<kTan>>(p, "Tan", only_float);
  Register<Unary<kAsin>>(p, "Asin", only_float);
  Register<Unary<kAcos>>(p, "Acos", only_float);
  Register<Unary<kAtan>>(p, "Atan", only_float);
  Register<Unary<kSinh>>(p, "Sinh", only_float);
  Register<Unary<kCosh>>(p, "Cosh", only_float);
  Register<Unary<kAsinh>>(p, "Asinh", only_float);
  Register<Unary<kAcosh>>(p, "Acosh", only_float);
  Register<Unary<kAtanh>>(p, "Atanh", only_float);
  Register<Unary<kLgamma>>(p, "Lgamma", only_float);
  for (cfx_dtype src : {CFX_FLOAT, CFX_INT32, CFX_BOOL})
    for (cfx_dtype dst : {CFX_FLOAT, CFX_INT32, CFX_BOOL})
      p.AsyncKernel<CastKernel>("Cast", kDeviceType)
          .TypeConstraint("SrcT", src)
          .TypeConstraint("DstT", dst)
          .Inexpensive();
  Register<SelectKernel<false>>(p, "Select", {CFX_FLOAT, CFX_INT32, CFX_BOOL});
  Register<SelectKernel<true>>(p, "SelectV2", {CFX_FLOAT, CFX_INT32, CFX_BOOL});
}

}  // namespace cfx::ocl
