// OpBuilder: builds one node of any op (standard or from a plugin) through a Scope.
//
//   Operation op = OpBuilder(scope, "MyOp").Input(x).Attr("k", 3).Finish();
//   Output y = op.output(0);
//
// Inputs are given in the op's order: one Input per single argument, one InputList per list
// argument. Type attrs, list lengths and type lists are inferred from the inputs; attrs that are
// not set get the op's defaults, so the NodeDef is complete (as TensorFlow writes it). The node
// gets the scope's name prefix, device and control dependencies. Any error (unknown op, missing
// input, dtype mismatch, bad attr) is recorded in the scope with the node's name, and Finish()
// returns an invalid Operation; once the scope holds an error, Finish() builds nothing.
#ifndef CONFLUX_CC_OP_BUILDER_H_
#define CONFLUX_CC_OP_BUILDER_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "conflux/attr_value.h"
#include "conflux/cc/output.h"
#include "conflux/cc/scope.h"

namespace cfx {

class OpBuilder {
 public:
  OpBuilder(const Scope& scope, std::string op_type);

  OpBuilder& Input(const ::cfx::Input& input);
  OpBuilder& Input(const InputList& inputs);
  OpBuilder& ControlInput(const Operation& op);

  OpBuilder& Attr(const std::string& name, AttrValue value);
  OpBuilder& Attr(const std::string& name, int v) { return Attr(name, AttrValue::Int(v)); }
  OpBuilder& Attr(const std::string& name, int64_t v) { return Attr(name, AttrValue::Int(v)); }
  OpBuilder& Attr(const std::string& name, float v) { return Attr(name, AttrValue::Float(v)); }
  OpBuilder& Attr(const std::string& name, double v) {
    return Attr(name, AttrValue::Float(static_cast<float>(v)));
  }
  OpBuilder& Attr(const std::string& name, bool v) { return Attr(name, AttrValue::Bool(v)); }
  OpBuilder& Attr(const std::string& name, DataType v) { return Attr(name, AttrValue::Type(v)); }
  OpBuilder& Attr(const std::string& name, const char* v) {
    return Attr(name, AttrValue::String(v));
  }
  OpBuilder& Attr(const std::string& name, std::string v) {
    return Attr(name, AttrValue::String(std::move(v)));
  }
  OpBuilder& Attr(const std::string& name, PartialTensorShape v) {
    return Attr(name, AttrValue::Shape(std::move(v)));
  }
  OpBuilder& Attr(const std::string& name, const Tensor& v) {
    return Attr(name, AttrValue::TensorValue(v));
  }
  OpBuilder& Attr(const std::string& name, std::vector<int64_t> v) {
    return Attr(name, AttrValue::IntList(std::move(v)));
  }
  OpBuilder& Attr(const std::string& name, std::initializer_list<int64_t> v) {
    return Attr(name, AttrValue::IntList(v));
  }
  OpBuilder& Attr(const std::string& name, const std::vector<int>& v) {
    return Attr(name, AttrValue::IntList(std::vector<int64_t>(v.begin(), v.end())));
  }
  OpBuilder& Attr(const std::string& name, std::initializer_list<int> v) {
    return Attr(name, AttrValue::IntList(std::vector<int64_t>(v.begin(), v.end())));
  }
  OpBuilder& Attr(const std::string& name, std::vector<float> v) {
    return Attr(name, AttrValue::FloatList(std::move(v)));
  }
  OpBuilder& Attr(const std::string& name, std::vector<DataType> v) {
    return Attr(name, AttrValue::TypeList(std::move(v)));
  }
  OpBuilder& Attr(const std::string& name, std::vector<std::string> v) {
    return Attr(name, AttrValue::StringList(std::move(v)));
  }
  OpBuilder& Attr(const std::string& name, std::vector<PartialTensorShape> v) {
    return Attr(name, AttrValue::ShapeList(std::move(v)));
  }
  // Overrides the scope's device for this node.
  OpBuilder& Device(std::string device);

  // Adds the node; an invalid Operation when the scope holds an error (now or before).
  Operation Finish();

 private:
  struct Arg {
    std::vector<::cfx::Input> inputs;
    bool is_list = false;
  };
  Status Build(Operation* out);
  Status ResolveInputs(const OpDef& op, AttrMap* attrs, std::vector<std::string>* names);

  Scope scope_;
  std::string op_type_;
  std::string device_;
  bool has_device_ = false;
  std::vector<Arg> args_;
  std::vector<Operation> control_inputs_;
  AttrMap attrs_;
};

}  // namespace cfx

#endif  // CONFLUX_CC_OP_BUILDER_H_
