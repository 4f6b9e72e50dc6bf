// Conflux plugin SDK: in-place updates of the variables an op takes as inputs, the part that
// training and state kernels share (ApplyGradientDescent, ApplyAdam, AssignAdd, their resource
// forms, on any device).
//
// A variable input is either a reference to a VariableV2 variable (a `Ref(T)` input) or the
// handle of a resource variable (a `resource` input). UpdateVariables locks the variables, hands
// their current values to the update, and unlocks them:
// - A reference input's value is the variable's own buffer, so the update is seen by everyone
//   sharing it (TensorFlow's reference semantics). It is locked only when `use_locking`, as in
//   TensorFlow; without it concurrent updates may interleave. When the op has an output, output 0
//   then refers to the first variable (the ref forms of TensorFlow's Apply* and Assign* ops
//   output their `var`).
// - A resource input is always locked exclusively: its value for the update is a buffer that the
//   variable alone holds (copied first when a reader still shares it), so a value read before the
//   update keeps its contents.
// Each variable is locked once, even when an op names it twice, and all are locked in one global
// order (by address), so ops that share variables cannot deadlock whatever order they name them
// in. Stateless; safe to call from concurrent kernel calls.
#ifndef CONFLUX_SDK_VARIABLE_UPDATE_H_
#define CONFLUX_SDK_VARIABLE_UPDATE_H_

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "conflux/sdk/kernel.h"

namespace cfx::sdk {

// One variable input of an op: its index and its name in the op's definition (for messages).
struct VariableInput {
  int index;
  const char* name;
};

namespace internal {

// A variable input while it is being updated.
struct HeldVariable {
  VariableInput input;
  bool is_ref = false;
  Variable resource;         // resource inputs only
  const void* id = nullptr;  // identifies the variable: the lock order and duplicates
  bool locks = false;        // this entry takes the variable's lock (the first with its id)
  Tensor value;
};

inline Status WithInput(const Status& s, const VariableInput& in) {
  return Status(s.code(), StrCat(in.name, " (input ", in.index, "): ", s.message()));
}

// Resolves input `in` to its variable and identity; no lock is held on return.
inline Status Resolve(KernelContext& ctx, HeldVariable* v) {
  const VariableInput& in = v->input;
  v->is_ref = ctx.input_is_ref(in.index);
  if (v->is_ref) {
    // The buffer identifies a reference variable (the executor read it under the variable's lock).
    v->id = ctx.input(in.index).raw_data();
    return Status();
  }
  if (ctx.input(in.index).dtype() != CFX_RESOURCE)
    return InvalidArgument(in.name, " (input ", in.index,
                           ") must be a reference to a variable (from VariableV2) or a resource "
                           "variable handle, got a ",
                           DTypeName(ctx.input(in.index).dtype()), " tensor");
  Result<Variable> var = ctx.InputVariable(in.index, false);
  if (!var.ok()) return WithInput(var.status(), in);
  v->resource = std::move(var.value());
  // A resource variable's value handle is its own tensor: the same on every call while the
  // variable lives (plugin_api.h), and null until it is first assigned.
  v->resource.Lock(false);
  v->id = v->resource.value().handle();
  v->resource.Unlock(false);
  if (v->id == nullptr)
    return Status(CFX_FAILED_PRECONDITION,
                  StrCat(in.name, " (input ", in.index,
                         "): attempting to update an uninitialized resource variable (assign it "
                         "a value first)"));
  return Status();
}

inline void Unlock(KernelContext& ctx, HeldVariable& v, bool use_locking) {
  if (!v.is_ref)
    v.resource.Unlock(true);
  else if (use_locking)
    ctx.UnlockRefInput(v.input.index);
}

}  // namespace internal

// Runs `update(values)` with values[k] the current value of the variable of inputs[k], under the
// locks described at the top of this file. `update` returns a Status and may write the values'
// buffers; it must check their dtypes and shapes (a resource variable holds whatever was last
// assigned to it). Returns update's status, or an error naming the input when an input is not a
// variable (InvalidArgument) or a resource variable has no value (FailedPrecondition). A failed
// update leaves output 0 unset.
template <typename Fn>
Status UpdateVariables(KernelContext& ctx, std::span<const VariableInput> inputs, bool use_locking,
                       Fn&& update) {
  std::vector<internal::HeldVariable> held;
  held.reserve(inputs.size());
  for (const VariableInput& in : inputs) {
    held.emplace_back();
    held.back().input = in;
    CFX_SDK_RETURN_IF_ERROR(internal::Resolve(ctx, &held.back()));
  }
  std::vector<internal::HeldVariable*> order;
  for (internal::HeldVariable& v : held) order.push_back(&v);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return std::less<>()(a->id, b->id); });
  for (size_t k = 0; k < order.size(); ++k) {
    internal::HeldVariable& v = *order[k];
    v.locks = k == 0 || order[k - 1]->id != v.id;
    if (!v.locks) continue;
    if (!v.is_ref)
      v.resource.Lock(true);
    else if (use_locking)
      ctx.LockRefInput(v.input.index);
  }
  // Unlocks in reverse order when the update returns or throws. (A constructor, not aggregate
  // initialisation: std::optional's in-place construction of an aggregate needs C++20's
  // parenthesised aggregate init, which clang before 16 lacks.)
  struct Unlocker {
    Unlocker(KernelContext& c, const std::vector<internal::HeldVariable*>& o, bool locking)
        : ctx(c), order(o), use_locking(locking) {}
    KernelContext& ctx;
    const std::vector<internal::HeldVariable*>& order;
    bool use_locking;
    ~Unlocker() {
      for (size_t k = order.size(); k-- > 0;)
        if (order[k]->locks) internal::Unlock(ctx, *order[k], use_locking);
    }
  };
  std::optional<Unlocker> unlocker(std::in_place, ctx, order, use_locking);
  Status s;
  for (size_t k = 0; k < order.size() && s.ok(); ++k) {
    internal::HeldVariable& v = *order[k];
    if (!v.locks) {
      v.value = order[k - 1]->value;  // the same variable as the one before it
    } else if (v.is_ref) {
      v.value = ctx.input(v.input.index);
    } else {
      Result<Tensor> value = v.resource.ValueForUpdate(ctx);
      if (value.ok())
        v.value = value.value();
      else
        s = internal::WithInput(value.status(), v.input);
    }
  }
  if (s.ok()) {
    std::vector<Tensor> values;
    values.reserve(held.size());
    for (const internal::HeldVariable& v : held) values.push_back(v.value);
    s = update(values);
  }
  unlocker.reset();
  CFX_SDK_RETURN_IF_ERROR(s);
  if (!held.empty() && held.front().is_ref && ctx.num_outputs() > 0)
    return ctx.ForwardRefInput(held.front().input.index, 0);
  return Status();
}
template <typename Fn>
Status UpdateVariables(KernelContext& ctx, std::initializer_list<VariableInput> inputs,
                       bool use_locking, Fn&& update) {
  return UpdateVariables(ctx, std::span<const VariableInput>(inputs.begin(), inputs.size()),
                         use_locking, std::forward<Fn>(update));
}

}  // namespace cfx::sdk

#endif  // CONFLUX_SDK_VARIABLE_UPDATE_H_
