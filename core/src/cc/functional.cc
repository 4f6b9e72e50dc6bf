// MapFn, FoldL, FoldR and Scan (conflux/cc/functional.h): TensorFlow's functional_ops, one
// WhileLoop each over TensorArrays of the elements and of the results.
#include "conflux/cc/functional.h"

#include <string>
#include <vector>

#include "conflux/cc/const_op.h"
#include "conflux/cc/control_flow.h"
#include "conflux/cc/ops/standard_ops.h"
#include "conflux/cc/tensor_array.h"
#include "tensor_array_internal.h"

namespace cfx {
namespace {

// The elems tensors unstacked into one array each, and their common size in dimension 0.
struct Unstacked {
  Output n;  // int32 scalar
  int64_t static_n = -1;
  std::vector<TensorArray> arrays;

  // The elements at index `i`, one per elems tensor.
  std::vector<Output> Read(const Scope& s, const Output& i) const {
    std::vector<Output> values;
    for (const TensorArray& a : arrays) values.push_back(a.Read(s, i));
    return values;
  }
};

// Checks the elems and unstacks each into an array of their common size (elems 0's). A size that
// differs from elems 0's is an error here when the static shapes show it, else an Assert that the
// unstacking waits for.
StatusOr<Unstacked> UnstackElems(const Scope& s, const std::string& what,
                                 const std::vector<Output>& elems) {
  if (elems.empty()) return errors::InvalidArgument(what, "needs at least one elems tensor");
  std::vector<PartialTensorShape> shapes;
  for (size_t k = 0; k < elems.size(); ++k) {
    if (!elems[k].valid())
      return errors::InvalidArgument(what, "elems ", k, " is an invalid Output");
    shapes.push_back(s.StaticShape(elems[k]));
    if (shapes[k].rank() == 0)
      return errors::InvalidArgument(
          what, "elems ", k, " (", elems[k].name(),
          ") is a scalar; elems must have a dimension 0 to iterate over");
  }
  Unstacked in;
  in.n = internal::LeadingDim(s, elems[0], shapes[0]);
  if (!shapes[0].unknown_rank()) in.static_n = shapes[0].dim(0);
  for (size_t k = 0; k < elems.size(); ++k) {
    const int64_t rows = shapes[k].unknown_rank() ? -1 : shapes[k].dim(0);
    Scope unstack = s;
    if (k > 0 && (rows < 0 || in.static_n < 0)) {
      Output size = internal::LeadingDim(s, elems[k], shapes[k]);
      Operation check =
          ops::Assert(s, ops::Equal(s, size, in.n),
                      {StrCat(what, "elems ", k, " (", elems[k].name(), ") and elems 0 (",
                              elems[0].name(), ") differ in size along dimension 0:"),
                       size, in.n});
      unstack = s.WithControlDependencies({check});
    } else if (k > 0 && rows != in.static_n) {
      return errors::InvalidArgument(what, "elems ", k, " (", elems[k].name(), ") has ", rows,
                                     " elements in dimension 0 but elems 0 (", elems[0].name(),
                                     ") has ", in.static_n, "; they must have the same size there");
    }
    TensorArrayOptions options;
    options.name = "elems";
    in.arrays.push_back(
        TensorArray(s, BaseType(elems[k].type()), in.n, options).Unstack(unstack, elems[k]));
  }
  CFX_RETURN_IF_ERROR(s.status());
  return in;
}

// fn's results must match `expected` in number and dtypes; `expected_what` names what fixes them
// ("MapFnOptions::dtypes", "the accumulator").
Status CheckResults(const std::string& what, const std::vector<Output>& results,
                    const std::vector<DataType>& expected, const std::string& expected_what) {
  if (results.size() != expected.size())
    return errors::InvalidArgument(what, "fn returned ", results.size(), " results but ",
                                   expected_what, " has ", expected.size());
  for (size_t k = 0; k < results.size(); ++k) {
    if (!results[k].valid())
      return errors::InvalidArgument(what, "fn's result ", k, " is an invalid Output");
    if (BaseType(results[k].type()) != expected[k])
      return errors::InvalidArgument(what, "fn's result ", k, " (", results[k].name(), ") is ",
                                     DataTypeString(results[k].type()), " but ", expected_what,
                                     " says ", DataTypeString(expected[k]), " for it");
  }
  return Status();
}

std::vector<DataType> DtypesOf(const std::vector<Output>& values) {
  std::vector<DataType> dtypes;
  for (const Output& v : values) dtypes.push_back(BaseType(v.type()));
  return dtypes;
}

// Flows of `arrays`, then the arrays seen through `flows` (loop variables, Exits).
std::vector<Output> FlowsOf(const std::vector<TensorArray>& arrays) {
  std::vector<Output> flows;
  for (const TensorArray& a : arrays) flows.push_back(a.flow());
  return flows;
}
std::vector<TensorArray> Through(const std::vector<TensorArray>& arrays, const Output* flows) {
  std::vector<TensorArray> result;
  for (size_t k = 0; k < arrays.size(); ++k) result.push_back(arrays[k].WithFlow(flows[k]));
  return result;
}

// Arrays of size `n` for the results, one per dtype; an element shape each when known.
std::vector<TensorArray> ResultArrays(const Scope& s, const std::vector<DataType>& dtypes,
                                      const std::vector<PartialTensorShape>& shapes,
                                      const Output& n, bool infer_shape) {
  std::vector<TensorArray> arrays;
  for (size_t k = 0; k < dtypes.size(); ++k) {
    TensorArrayOptions options;
    options.name = "results";
    options.infer_shape = infer_shape;
    if (k < shapes.size()) options.element_shape = shapes[k];
    arrays.emplace_back(s, dtypes[k], n, options);
  }
  return arrays;
}

std::vector<Output> StackAll(const Scope& s, const std::vector<TensorArray>& arrays) {
  std::vector<Output> stacked;
  for (const TensorArray& a : arrays) stacked.push_back(a.Stack(s));
  return stacked;
}

Status Recorded(const Scope& scope, const Status& s) {
  if (!s.ok()) scope.UpdateStatus(s);
  return s;
}

Status BuildMapFn(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
                  std::vector<Output>* outputs, const MapFnOptions& options) {
  CFX_RETURN_IF_ERROR(scope.status());
  const std::string what = StrCat("MapFn '", options.name, "': ");
  const Scope s = scope.NewSubScope(options.name);
  CFX_ASSIGN_OR_RETURN(Unstacked in, UnstackElems(s, what, elems));
  const bool by_elems = options.dtypes.empty();
  const std::vector<DataType> dtypes = by_elems ? DtypesOf(elems) : options.dtypes;
  const std::string expected =
      by_elems ? "the elems (MapFnOptions::dtypes is empty)" : "MapFnOptions::dtypes";
  std::vector<TensorArray> results = ResultArrays(s, dtypes, {}, in.n, options.infer_shape);
  CFX_RETURN_IF_ERROR(s.status());

  std::vector<Output> vars = FlowsOf(results);
  vars.insert(vars.begin(), ops::Const(s, 0));
  auto cond = [&](const Scope& cs, const std::vector<Output>& v, Output* pred) {
    *pred = ops::Less(cs, v[0], in.n);
    return cs.status();
  };
  auto body = [&](const Scope& bs, const std::vector<Output>& v, std::vector<Output>* next) {
    std::vector<Output> values;
    CFX_RETURN_IF_ERROR(fn(bs, in.Read(bs, v[0]), &values));
    CFX_RETURN_IF_ERROR(bs.status());
    CFX_RETURN_IF_ERROR(CheckResults(what, values, dtypes, expected));
    *next = {ops::AddV2(bs, v[0], 1)};
    for (size_t k = 0; k < results.size(); ++k)
      next->push_back(results[k].WithFlow(v[k + 1]).Write(bs, v[0], values[k]).flow());
    return bs.status();
  };
  std::vector<Output> out;
  CFX_RETURN_IF_ERROR(WhileLoop(
      s, vars, cond, body, &out,
      {.parallel_iterations = options.parallel_iterations, .swap_memory = options.swap_memory}));
  *outputs = StackAll(s, Through(results, out.data() + 1));
  return s.status();
}

// What distinguishes the folds and Scan.
struct Chain {
  std::string what;  // prefix of messages
  bool reverse = false;
  bool keep_all = false;  // Scan: every accumulator is a result
  bool infer_shape = true;
  int parallel_iterations = 10;
  bool swap_memory = false;
};

// The loop of FoldL, FoldR and Scan: the accumulator starts as `initializer` (empty: the first
// elements, read before the loop) and is carried through fn once per remaining element, forwards
// or backwards; with keep_all each accumulator is written to a result array.
Status BuildChain(const Scope& s, const ElementFn& fn, const std::vector<Output>& elems,
                  const std::vector<Output>& initializer, const Chain& chain,
                  std::vector<Output>* outputs) {
  CFX_ASSIGN_OR_RETURN(Unstacked in, UnstackElems(s, chain.what, elems));
  for (size_t k = 0; k < initializer.size(); ++k)
    if (!initializer[k].valid())
      return errors::InvalidArgument(chain.what, "initializer ", k, " is an invalid Output");
  const bool from_elems = initializer.empty();
  if (from_elems && in.static_n == 0)
    return errors::InvalidArgument(chain.what,
                                   "there are no elements to start from; give an initializer");
  // The index of the first element, and the loop's first index (the second element when the
  // first one is the initializer).
  const Output first = chain.reverse ? ops::Sub(s, in.n, 1) : ops::Const(s, 0);
  std::vector<Output> acc = from_elems ? in.Read(s, first) : initializer;
  Output start = first;
  if (from_elems) start = chain.reverse ? ops::Sub(s, in.n, 2) : ops::Const(s, 1);
  const std::vector<DataType> dtypes = DtypesOf(acc);
  std::vector<TensorArray> results;
  if (chain.keep_all) {
    std::vector<PartialTensorShape> shapes;
    if (chain.infer_shape)
      for (const Output& a : acc) shapes.push_back(s.StaticShape(a));
    results = ResultArrays(s, dtypes, shapes, in.n, chain.infer_shape);
    if (from_elems)
      for (size_t k = 0; k < acc.size(); ++k) results[k] = results[k].Write(s, first, acc[k]);
  }
  CFX_RETURN_IF_ERROR(s.status());

  // Loop variables: the index, the accumulator, the result arrays' flows.
  std::vector<Output> vars{start};
  vars.insert(vars.end(), acc.begin(), acc.end());
  const std::vector<Output> flows = FlowsOf(results);
  vars.insert(vars.end(), flows.begin(), flows.end());
  auto cond = [&](const Scope& cs, const std::vector<Output>& v, Output* pred) {
    *pred = chain.reverse ? ops::GreaterEqual(cs, v[0], 0) : ops::Less(cs, v[0], in.n);
    return cs.status();
  };
  const size_t n_acc = acc.size();
  auto body = [&](const Scope& bs, const std::vector<Output>& v, std::vector<Output>* next) {
    const Output& i = v[0];
    std::vector<Output> args(v.begin() + 1, v.begin() + 1 + n_acc);
    const std::vector<Output> elements = in.Read(bs, i);
    args.insert(args.end(), elements.begin(), elements.end());
    std::vector<Output> values;
    CFX_RETURN_IF_ERROR(fn(bs, args, &values));
    CFX_RETURN_IF_ERROR(bs.status());
    CFX_RETURN_IF_ERROR(CheckResults(chain.what, values, dtypes, "the accumulator"));
    *next = {chain.reverse ? ops::Sub(bs, i, 1) : ops::AddV2(bs, i, 1)};
    next->insert(next->end(), values.begin(), values.end());
    for (size_t k = 0; k < results.size(); ++k)
      next->push_back(results[k].WithFlow(v[1 + n_acc + k]).Write(bs, i, values[k]).flow());
    return bs.status();
  };
  std::vector<Output> out;
  CFX_RETURN_IF_ERROR(WhileLoop(
      s, vars, cond, body, &out,
      {.parallel_iterations = chain.parallel_iterations, .swap_memory = chain.swap_memory}));
  if (chain.keep_all) {
    *outputs = StackAll(s, Through(results, out.data() + 1 + n_acc));
  } else {
    outputs->assign(out.begin() + 1, out.begin() + 1 + n_acc);
  }
  return s.status();
}

Status BuildFold(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
                 const std::vector<Output>& initializer, std::vector<Output>* outputs,
                 const FoldOptions& options, bool reverse) {
  CFX_RETURN_IF_ERROR(scope.status());
  const std::string name = options.name.empty() ? (reverse ? "foldr" : "foldl") : options.name;
  Chain chain;
  chain.what = StrCat(reverse ? "FoldR '" : "FoldL '", name, "': ");
  chain.reverse = reverse;
  chain.parallel_iterations = options.parallel_iterations;
  chain.swap_memory = options.swap_memory;
  return BuildChain(scope.NewSubScope(name), fn, elems, initializer, chain, outputs);
}

}  // namespace

Status MapFn(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
             std::vector<Output>* outputs, const MapFnOptions& options) {
  return Recorded(scope, BuildMapFn(scope, fn, elems, outputs, options));
}

Status FoldL(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
             const std::vector<Output>& initializer, std::vector<Output>* outputs,
             const FoldOptions& options) {
  return Recorded(scope, BuildFold(scope, fn, elems, initializer, outputs, options, false));
}

Status FoldR(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
             const std::vector<Output>& initializer, std::vector<Output>* outputs,
             const FoldOptions& options) {
  return Recorded(scope, BuildFold(scope, fn, elems, initializer, outputs, options, true));
}

Status Scan(const Scope& scope, const ElementFn& fn, const std::vector<Output>& elems,
            const std::vector<Output>& initializer, std::vector<Output>* outputs,
            const ScanOptions& options) {
  if (!scope.ok()) return scope.status();
  Chain chain;
  chain.what = StrCat("Scan '", options.name, "': ");
  chain.reverse = options.reverse;
  chain.keep_all = true;
  chain.infer_shape = options.infer_shape;
  chain.parallel_iterations = options.parallel_iterations;
  chain.swap_memory = options.swap_memory;
  return Recorded(
      scope, BuildChain(scope.NewSubScope(options.name), fn, elems, initializer, chain, outputs));
}

}  // namespace cfx
