// conflux_opgen: writes typed C++ wrappers (a header and a source) for every op of the standard
// library or of one plugin, from the OpDefs registered at run time.
//
//   conflux_opgen --header out/conflux/cc/ops/nn_ops.h --source out/nn_ops.cc
//                 --include conflux/cc/ops/nn_ops.h [--plugin path/libconflux_ops-nn.so]
//
// --skip OP leaves out an op whose wrapper is written by hand, in a header named by
// --extra-include that the generated header includes. Without --plugin it wraps the core's standard ops; with it, only the ops that plugin
// registers (--load names plugins to load before it, such as the device plugin its kernels
// need). Ops whose names start with "_" are internal and get no wrapper. For each op Foo:
//   - inputs become `Input` (one tensor) or `InputList` (a list) parameters, in the op's order;
//   - attrs inferred from the inputs (type attrs, list lengths) are not parameters;
//   - other attrs without a default are parameters after the inputs;
//   - attrs with a default are set through `FooAttrs`, e.g. FooAttrs().TransposeA(true);
//   - the result is an Operation (no outputs), an Output (one tensor) or FooOutputs (several,
//     one field per output argument, an OutputList for list outputs).
#include <cctype>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "conflux/config.h"
#include "conflux/runtime.h"

namespace cfx {
namespace {

const std::set<std::string>& Keywords() {
  static const std::set<std::string> k = {
      "alignas", "alignof", "and", "auto", "bool", "break", "case", "catch", "char", "class",
      "const", "continue", "default", "delete", "do", "double", "else", "enum", "explicit",
      "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "not", "operator", "or", "private", "protected", "public",
      "register", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
      "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "while", "xor", "scope", "attrs", "builder", "op"};
  return k;
}

std::string Identifier(const std::string& name) {
  return Keywords().count(name) ? name + "_" : name;
}

// transpose_a -> TransposeA; T -> T.
std::string Camel(const std::string& name) {
  std::string out;
  bool up = true;
  for (char c : name) {
    if (c == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

// The C++ type of an attr kind; empty when the wrapper takes a raw AttrValue.
std::string CppType(const std::string& kind) {
  static const std::pair<const char*, const char*> kTypes[] = {
      {"string", "std::string"},
      {"int", "int64_t"},
      {"float", "float"},
      {"bool", "bool"},
      {"type", "DataType"},
      {"shape", "PartialTensorShape"},
      {"tensor", "Tensor"},
      {"list(int)", "std::vector<int64_t>"},
      {"list(float)", "std::vector<float>"},
      {"list(type)", "std::vector<DataType>"},
      {"list(string)", "std::vector<std::string>"},
      {"list(shape)", "std::vector<PartialTensorShape>"},
  };
  for (const auto& [k, t] : kTypes)
    if (kind == k) return t;
  return "AttrValue";
}

std::string Comment(const std::string& text) {
  std::string out = "// ";
  for (char c : text) {
    out += c;
    if (c == '\n') out += "// ";
  }
  return out + "\n";
}

struct OpInfo {
  const OpDef* def;
  std::vector<const AttrDef*> required;  // positional attr parameters
  std::vector<const AttrDef*> optional;  // FooAttrs fields
  std::set<std::string> param_names;
};

OpInfo Analyze(const OpDef& op) {
  OpInfo info{&op, {}, {}, {}};
  std::set<std::string> inferred;
  for (const ArgDef& a : op.input_arg) {
    info.param_names.insert(Identifier(a.name));
    for (const std::string* s : {&a.type_attr, &a.number_attr, &a.type_list_attr})
      if (!s->empty()) inferred.insert(*s);
  }
  for (const AttrDef& a : op.attr) {
    if (inferred.count(a.name)) continue;
    (a.default_value ? info.optional : info.required).push_back(&a);
  }
  return info;
}

std::string ParamName(const OpInfo& info, const AttrDef& a) {
  std::string n = Identifier(a.name);
  for (const ArgDef& in : info.def->input_arg)
    if (Identifier(in.name) == n) return n + "_attr";
  return n;
}

bool IsList(const ArgDef& a) { return !a.number_attr.empty() || !a.type_list_attr.empty(); }

enum class Result { kOperation, kOutput, kStruct };

Result ResultKind(const OpDef& op) {
  if (op.output_arg.empty()) return Result::kOperation;
  if (op.output_arg.size() == 1 && !IsList(op.output_arg[0])) return Result::kOutput;
  return Result::kStruct;
}

std::string Signature(const OpInfo& info, bool with_defaults) {
  const OpDef& op = *info.def;
  std::string s = "const Scope& scope";
  for (const ArgDef& a : op.input_arg)
    s += StrCat(", ", IsList(a) ? "const InputList& " : "const Input& ", Identifier(a.name));
  for (const AttrDef* a : info.required)
    s += StrCat(", ", CppType(a->type) == "AttrValue" ? "const AttrValue&"
                                                      : "const " + CppType(a->type) + "&",
                " ", ParamName(info, *a));
  if (!info.optional.empty())
    s += StrCat(", const ", op.name, "Attrs& attrs", with_defaults ? " = {}" : "");
  return s;
}

std::string ReturnType(const OpDef& op) {
  switch (ResultKind(op)) {
    case Result::kOperation: return "Operation";
    case Result::kOutput: return "Output";
    case Result::kStruct: return op.name + "Outputs";
  }
  return "";
}

void WriteDeclaration(const OpInfo& info, std::ostream& h) {
  const OpDef& op = *info.def;
  h << "\n" << Comment(op.Signature() + (op.summary.empty() ? "" : "\n" + op.summary));
  if (!info.optional.empty()) {
    h << "struct " << op.name << "Attrs {\n";
    for (const AttrDef* a : info.optional) {
      const std::string t = CppType(a->type);
      h << "  " << op.name << "Attrs " << Camel(a->name) << "(" << t << " v) const {\n"
        << "    " << op.name << "Attrs r = *this;\n"
        << "    r." << a->name << "_ = std::move(v);\n"
        << "    return r;\n  }\n";
    }
    for (const AttrDef* a : info.optional)
      h << "  std::optional<" << CppType(a->type) << "> " << a->name << "_;\n";
    h << "};\n";
  }
  if (ResultKind(op) == Result::kStruct) {
    h << "struct " << op.name << "Outputs {\n  Operation operation;\n";
    for (const ArgDef& a : op.output_arg)
      h << "  " << (IsList(a) ? "OutputList " : "Output ") << Identifier(a.name) << ";\n";
    h << "};\n";
  }
  h << ReturnType(op) << " " << op.name << "(" << Signature(info, true) << ");\n";
}

void WriteDefinition(const OpInfo& info, std::ostream& c) {
  const OpDef& op = *info.def;
  c << "\n" << ReturnType(op) << " " << op.name << "(" << Signature(info, false) << ") {\n";
  c << "  OpBuilder builder(scope, \"" << op.name << "\");\n";
  for (const ArgDef& a : op.input_arg) c << "  builder.Input(" << Identifier(a.name) << ");\n";
  for (const AttrDef* a : info.required)
    c << "  builder.Attr(\"" << a->name << "\", " << ParamName(info, *a) << ");\n";
  for (const AttrDef* a : info.optional)
    c << "  if (attrs." << a->name << "_) builder.Attr(\"" << a->name << "\", *attrs."
      << a->name << "_);\n";
  c << "  Operation operation = builder.Finish();\n";
  switch (ResultKind(op)) {
    case Result::kOperation:
      c << "  return operation;\n";
      break;
    case Result::kOutput:
      c << "  return operation.valid() ? operation.output(0) : Output();\n";
      break;
    case Result::kStruct: {
      c << "  " << op.name << "Outputs result;\n  result.operation = operation;\n"
        << "  if (!operation.valid()) return result;\n"
        << "  std::vector<std::pair<int, int>> ranges = internal::OutputRanges(operation);\n";
      for (size_t i = 0; i < op.output_arg.size(); ++i) {
        const ArgDef& a = op.output_arg[i];
        if (IsList(a)) {
          c << "  for (int k = ranges[" << i << "].first; k < ranges[" << i
            << "].second; ++k) result." << Identifier(a.name)
            << ".push_back(operation.output(k));\n";
        } else {
          c << "  result." << Identifier(a.name) << " = operation.output(ranges[" << i
            << "].first);\n";
        }
      }
      c << "  return result;\n";
      break;
    }
  }
  c << "}\n";
}

int Main(int argc, char** argv) {
  std::string header, source, include, plugin;
  std::set<std::string> skip;                // ops with hand-written wrappers (--skip)
  std::vector<std::string> extra_includes;  // headers with those wrappers (--extra-include)
  std::vector<std::string> loads;  // plugins the wrapped one needs (--load), then --plugin
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--header") header = argv[i + 1];
    else if (flag == "--source") source = argv[i + 1];
    else if (flag == "--include") include = argv[i + 1];
    else if (flag == "--plugin") plugin = argv[i + 1];
    else if (flag == "--load") loads.push_back(argv[i + 1]);
    else if (flag == "--skip") skip.insert(argv[i + 1]);
    else if (flag == "--extra-include") extra_includes.push_back(argv[i + 1]);
    else {
      std::cerr << "conflux_opgen: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (header.empty() || source.empty() || include.empty()) {
    std::cerr << "usage: conflux_opgen --header H --source S --include I [--plugin P]\n";
    return 2;
  }
  auto config = Config::FromString("plugins: []\n", "<conflux_opgen>");
  if (!config.ok()) {
    std::cerr << "conflux_opgen: " << config.status() << "\n";
    return 1;
  }
  auto runtime = Runtime::Create(*config);
  if (!runtime.ok()) {
    std::cerr << "conflux_opgen: " << runtime.status() << "\n";
    return 1;
  }
  std::string owner = "core";
  if (!plugin.empty()) {
    loads.push_back(plugin);
    for (const std::string& path : loads) {
      PluginSpec spec;
      spec.path = path;
      Status s = (*runtime)->LoadPlugin(spec, /*create_devices=*/false);
      if (!s.ok()) {
        std::cerr << "conflux_opgen: " << s << "\n";
        return 1;
      }
    }
    owner = (*runtime)->plugins().back().name;
  }
  const OpRegistry& registry = (*runtime)->ops();
  std::vector<OpInfo> ops;
  for (const std::string& name : registry.ListOps()) {
    const OpRegistration* reg = registry.LookUp(name);
    if (name[0] == '_' || reg->registered_by != owner || skip.count(name)) continue;
    ops.push_back(Analyze(reg->def));
  }
  std::string guard = "CONFLUX_GENERATED_";
  for (char ch : include) {
    const auto u = static_cast<unsigned char>(ch);
    guard += std::isalnum(u) ? static_cast<char>(std::toupper(u)) : '_';
  }
  std::ofstream h(header), c(source);
  h << "// Generated by conflux_opgen from the OpDefs of " << owner << ". Do not edit.\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include <cstdint>\n#include <optional>\n#include <string>\n#include <utility>\n"
    << "#include <vector>\n\n#include \"conflux/cc/op_builder.h\"\n";
  for (const std::string& inc : extra_includes) h << "#include \"" << inc << "\"\n";
  h << "\nnamespace cfx::ops {\n";
  c << "// Generated by conflux_opgen from the OpDefs of " << owner << ". Do not edit.\n"
    << "#include \"" << include << "\"\n\n#include \"conflux/cc/op_outputs.h\"\n\n"
    << "namespace cfx::ops {\n";
  for (const OpInfo& op : ops) {
    WriteDeclaration(op, h);
    WriteDefinition(op, c);
  }
  h << "\n}  // namespace cfx::ops\n\n#endif  // " << guard << "\n";
  c << "\n}  // namespace cfx::ops\n";
  if (!h || !c) {
    std::cerr << "conflux_opgen: cannot write " << header << " or " << source << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace cfx

int main(int argc, char** argv) { return cfx::Main(argc, argv); }
