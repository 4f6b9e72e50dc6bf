// GraphDef <-> TensorFlow's wire format (binary and protobuf text), through our own protos.
//
// Reading converts the proto into the C++ structs of conflux/graph_def.h; writing converts back.
// Parts Conflux does not model travel as serialized bytes: the function library,
// NodeDef.experimental_debug_info, and tensor attrs whose encoding the decoded Tensor would not
// reproduce (AttrValue::tensor_encoding).
//
// Exact bytes: our protos declare TensorFlow's map fields as repeated key/value entries (their
// wire form), so the writer picks the order of map entries. Binary output puts them in the order
// TensorFlow's Python writer (upb) uses, text output in ascending key order as TensorFlow's text
// printer does; the library is stored in that binary order too. So a binary file written by
// tf.io.write_graph, or by us, reads and writes back to the same bytes.
#include <google/protobuf/arena.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "graph/graph_def_proto.h"
#include "graph/tensor_proto.h"
#include "proto/graph.pb.h"
#include "proto/op_def.pb.h"
#include "util/file.h"
#include "util/proto_text_errors.h"

namespace cfx {
namespace {

namespace pb = ::conflux;

// --- map entry order ---------------------------------------------------------------------------

enum class EntryOrder {
  // TensorFlow's Python writer (upb, as of protobuf 4.21+): string keys ascending bytewise, except
  // that a key comes after the longer keys it is a prefix of ("Tidx" before "T"); integer keys
  // descending.
  kTensorFlowBinary,
  // Ascending keys, as protobuf's text printers (C++ and Python) write maps.
  kAscending,
};

// A TensorFlow map field declared in our protos as a repeated key/value entry message.
bool IsMapEntry(const google::protobuf::FieldDescriptor* field) {
  const google::protobuf::Descriptor* type = field->message_type();
  return field->is_repeated() && !field->is_map() && type->field_count() == 2 &&
         type->field(0)->name() == "key" && type->field(0)->number() == 1 &&
         type->name().ends_with("Entry");
}

bool KeyLess(const google::protobuf::Message& a, const google::protobuf::Message& b,
             const google::protobuf::FieldDescriptor* key, EntryOrder order) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = a.GetReflection();
  if (key->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    std::string scratch_a, scratch_b;
    const std::string& ka = r->GetStringReference(a, key, &scratch_a);
    const std::string& kb = r->GetStringReference(b, key, &scratch_b);
    if (order == EntryOrder::kAscending) return ka < kb;
    const size_t common = std::min(ka.size(), kb.size());
    const int c = ka.compare(0, common, kb, 0, common);
    return c != 0 ? c < 0 : ka.size() > kb.size();
  }
  // Our protos have uint32 integer keys only.
  CFX_CHECK(key->cpp_type() == FieldDescriptor::CPPTYPE_UINT32);
  const uint32_t ka = r->GetUInt32(a, key);
  const uint32_t kb = r->GetUInt32(b, key);
  return order == EntryOrder::kAscending ? ka < kb : ka > kb;
}

// Stable-sorts the entries of one map field by key, moving them with SwapElements.
void SortEntries(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field,
                 EntryOrder order) {
  const google::protobuf::Reflection* r = message->GetReflection();
  const google::protobuf::FieldDescriptor* key = field->message_type()->field(0);
  const int n = r->FieldSize(*message, field);
  std::vector<int> wanted(n);  // wanted[p]: the original index of the entry that goes at p
  for (int i = 0; i < n; ++i) wanted[i] = i;
  std::stable_sort(wanted.begin(), wanted.end(), [&](int a, int b) {
    return KeyLess(r->GetRepeatedMessage(*message, field, a),
                   r->GetRepeatedMessage(*message, field, b), key, order);
  });
  std::vector<int> at(n), where(n);  // original index at a position, and position of an original
  for (int i = 0; i < n; ++i) at[i] = where[i] = i;
  for (int p = 0; p < n; ++p) {
    const int q = where[wanted[p]];
    if (q == p) continue;
    r->SwapElements(message, field, p, q);
    std::swap(at[p], at[q]);
    where[at[p]] = p;
    where[at[q]] = q;
  }
}

// A map writes an entry's key and value even when they are zero or empty, and TensorFlow's text
// printer leaves a zero key out: set both, so text and binary input serialize alike.
void MarkEntryFieldsPresent(google::protobuf::Message* entry) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = entry->GetReflection();
  for (int i = 0; i < 2; ++i) {
    const FieldDescriptor* field = entry->GetDescriptor()->field(i);
    if (r->HasField(*entry, field)) continue;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        r->SetString(entry, field, "");
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        r->SetUInt32(entry, field, 0);
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        r->MutableMessage(entry, field);
        break;
      default:
        CFX_CHECK(false && "map entry field of an unexpected type");
    }
  }
}

// Puts the entries of every map field in `message`, at any depth, in `order`, with their key and
// value present.
void OrderMapEntries(google::protobuf::Message* message, EntryOrder order) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!field->is_repeated()) {
      OrderMapEntries(r->MutableMessage(message, field), order);
      continue;
    }
    if (field->is_map()) continue;  // a real map (GraphDebugInfo): never written
    for (int i = 0; i < r->FieldSize(*message, field); ++i)
      OrderMapEntries(r->MutableRepeatedMessage(message, field, i), order);
    if (!IsMapEntry(field)) continue;
    for (int i = 0; i < r->FieldSize(*message, field); ++i)
      MarkEntryFieldsPresent(r->MutableRepeatedMessage(message, field, i));
    SortEntries(message, field, order);
  }
}

// --- UTF-8 -------------------------------------------------------------------------------------

// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    int extra;
    uint32_t code;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1, code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2, code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<uint8_t>(s[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    const uint32_t min_code[] = {0, 0x80, 0x800, 0x10000};
    if (code < min_code[extra] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
      return false;
    i += extra + 1;
  }
  return true;
}

// Protobuf's binary parser rejects proto3 string fields that are not UTF-8, as TensorFlow's
// does; its text parser and its serializer do not. InvalidArgument naming the first such field.
Status CheckUtf8(const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  std::string scratch;
  for (const FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? r->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        const std::string& value = field->is_repeated()
                                       ? r->GetRepeatedStringReference(message, field, i, &scratch)
                                       : r->GetStringReference(message, field, &scratch);
        if (!IsValidUtf8(value))
          return errors::InvalidArgument(field->full_name(), " is not valid UTF-8");
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        CFX_RETURN_IF_ERROR(CheckUtf8(field->is_repeated()
                                          ? r->GetRepeatedMessage(message, field, i)
                                          : r->GetMessage(message, field)));
      }
    }
  }
  return Status::OK();
}

// --- serialization -----------------------------------------------------------------------------

std::string SerializeDeterministic(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    // Cannot fail: proto3 messages have no required fields, and callers check the size.
    (void)message.SerializeToCodedStream(&coded);
  }
  return out;
}

// --- proto -> C++ ------------------------------------------------------------------------------

Status AttrFromProto(const pb::AttrValue& proto, const std::string& where, AttrValue* out,
                     internal::ConstantBudget* budget);

// Errors carry the path of the value that failed: "node 'n' attr 'f' func 'g' attr 'value': ...".
std::string AttrWhere(const std::string& where, const std::string& key) {
  return StrCat(where, " attr '", key, "'");
}

Status At(const std::string& where, Status status) {
  return status.ok() ? status : status.WithPrefix(where + ": ");
}

Status TypeFromProto(int value, const std::string& where, DataType* out) {
  StatusOr<DataType> type =
      internal::DataTypeFromProto(value, /*allow_ref=*/true, /*allow_invalid=*/true);
  if (!type.ok()) return At(where, type.status());
  *out = *type;
  return Status::OK();
}

Status ShapeFromProto(const pb::TensorShapeProto& proto, const std::string& where,
                      PartialTensorShape* out) {
  StatusOr<PartialTensorShape> shape = internal::PartialShapeFromProto(proto);
  if (!shape.ok()) return At(where, shape.status());
  *out = std::move(shape).value();
  return Status::OK();
}

// Decodes a tensor attr (its size taken from `budget`, when given); keeps the proto's bytes only
// when re-encoding the Tensor would not give them back (so large constants are not held twice).
Status TensorAttrFromProto(const pb::TensorProto& proto, const std::string& where, Tensor* tensor,
                           std::string* encoding, internal::ConstantBudget* budget) {
  StatusOr<Tensor> decoded = internal::TensorFromProto(proto, budget);
  if (!decoded.ok()) return At(where, decoded.status());
  *tensor = std::move(decoded).value();
  if (!internal::IsCanonicalTensorProto(proto, *tensor)) *encoding = SerializeDeterministic(proto);
  return Status::OK();
}

Status FuncFromProto(const pb::NameAttrList& proto, const std::string& where, NameAttrList* out,
                     internal::ConstantBudget* budget) {
  out->name = proto.name();
  const std::string func_where = StrCat(where, " func '", proto.name(), "'");
  // As with a protobuf map, the last entry of a repeated key wins.
  for (const pb::NameAttrList::AttrEntry& entry : proto.attr()) {
    CFX_RETURN_IF_ERROR(AttrFromProto(entry.value(), AttrWhere(func_where, entry.key()),
                                      &out->attr[entry.key()], budget));
  }
  return Status::OK();
}

std::string ElementWhere(const std::string& where, size_t i) { return StrCat(where, " [", i, "]"); }

Status ListFromProto(const pb::AttrValue::ListValue& proto, const std::string& where,
                     AttrValue::List* out, internal::ConstantBudget* budget) {
  out->s.assign(proto.s().begin(), proto.s().end());
  out->i.assign(proto.i().begin(), proto.i().end());
  out->f.assign(proto.f().begin(), proto.f().end());
  out->b.assign(proto.b().begin(), proto.b().end());
  out->type.resize(proto.type_size());
  for (int i = 0; i < proto.type_size(); ++i)
    CFX_RETURN_IF_ERROR(TypeFromProto(proto.type(i), ElementWhere(where, i), &out->type[i]));
  out->shape.resize(proto.shape_size());
  for (int i = 0; i < proto.shape_size(); ++i)
    CFX_RETURN_IF_ERROR(ShapeFromProto(proto.shape(i), ElementWhere(where, i), &out->shape[i]));
  out->tensor.resize(proto.tensor_size());
  std::vector<std::string> encodings(proto.tensor_size());
  bool any_encoding = false;
  for (int i = 0; i < proto.tensor_size(); ++i) {
    CFX_RETURN_IF_ERROR(TensorAttrFromProto(proto.tensor(i), ElementWhere(where, i),
                                            &out->tensor[i], &encodings[i], budget));
    any_encoding = any_encoding || !encodings[i].empty();
  }
  if (any_encoding) out->tensor_encoding = std::move(encodings);
  out->func.resize(proto.func_size());
  for (int i = 0; i < proto.func_size(); ++i)
    CFX_RETURN_IF_ERROR(
        FuncFromProto(proto.func(i), ElementWhere(where, i), &out->func[i], budget));
  return Status::OK();
}

Status AttrFromProto(const pb::AttrValue& proto, const std::string& where, AttrValue* out,
                     internal::ConstantBudget* budget) {
  using Kind = AttrValue::Kind;
  *out = AttrValue();  // a repeated key overwrites the whole value
  switch (proto.value_case()) {
    case pb::AttrValue::VALUE_NOT_SET:
      out->kind = Kind::kNone;
      return Status::OK();
    case pb::AttrValue::kS:
      *out = AttrValue::String(proto.s());
      return Status::OK();
    case pb::AttrValue::kI:
      *out = AttrValue::Int(proto.i());
      return Status::OK();
    case pb::AttrValue::kF:
      *out = AttrValue::Float(proto.f());
      return Status::OK();
    case pb::AttrValue::kB:
      *out = AttrValue::Bool(proto.b());
      return Status::OK();
    case pb::AttrValue::kType:
      out->kind = Kind::kType;
      return TypeFromProto(proto.type(), where, &out->type);
    case pb::AttrValue::kShape:
      out->kind = Kind::kShape;
      return ShapeFromProto(proto.shape(), where, &out->shape);
    case pb::AttrValue::kTensor:
      out->kind = Kind::kTensor;
      return TensorAttrFromProto(proto.tensor(), where, &out->tensor, &out->tensor_encoding,
                                 budget);
    case pb::AttrValue::kList:
      out->kind = Kind::kList;
      return ListFromProto(proto.list(), where, &out->list, budget);
    case pb::AttrValue::kFunc:
      out->kind = Kind::kFunc;
      out->func = std::make_shared<NameAttrList>();
      return FuncFromProto(proto.func(), where, out->func.get(), budget);
    case pb::AttrValue::kPlaceholder:
      out->kind = Kind::kPlaceholder;
      out->s = proto.placeholder();
      return Status::OK();
  }
  return errors::InvalidArgument(where, ": unknown attr value kind ", proto.value_case());
}

Status NodeFromProto(const pb::NodeDef& proto, NodeDef* out, internal::ConstantBudget* budget) {
  out->name = proto.name();
  out->op = proto.op();
  out->input.assign(proto.input().begin(), proto.input().end());
  out->device = proto.device();
  const std::string where = StrCat("node '", proto.name(), "'");
  for (const pb::NodeDef::AttrEntry& entry : proto.attr()) {
    CFX_RETURN_IF_ERROR(AttrFromProto(entry.value(), AttrWhere(where, entry.key()),
                                      &out->attr[entry.key()], budget));
  }
  if (proto.has_experimental_debug_info())
    out->experimental_debug_info = SerializeDeterministic(proto.experimental_debug_info());
  return Status::OK();
}

// Reorders the library's map entries in `proto`. The nodes' constants share `budget`.
Status GraphFromProto(pb::GraphDef* proto, GraphDef* out, internal::ConstantBudget* budget) {
  out->node.resize(proto->node_size());
  for (int i = 0; i < proto->node_size(); ++i)
    CFX_RETURN_IF_ERROR(NodeFromProto(proto->node(i), &out->node[i], budget));
  const pb::VersionDef& versions = proto->versions();
  out->has_versions = proto->has_versions();
  out->versions.producer = versions.producer();
  out->versions.min_consumer = versions.min_consumer();
  out->versions.bad_consumers.assign(versions.bad_consumers().begin(),
                                     versions.bad_consumers().end());
  out->version = proto->version();
  if (proto->has_library()) {
    // In binary order whatever the input, so that text and binary input give equal GraphDefs.
    OrderMapEntries(proto->mutable_library(), EntryOrder::kTensorFlowBinary);
    out->library = SerializeDeterministic(proto->library());
  }
  return Status::OK();
}

Status ArgFromProto(const pb::OpDef::ArgDef& proto, const std::string& where, ArgDef* out) {
  out->name = proto.name();
  out->type_attr = proto.type_attr();
  out->number_attr = proto.number_attr();
  out->type_list_attr = proto.type_list_attr();
  out->is_ref = proto.is_ref();
  return TypeFromProto(proto.type(), StrCat(where, " arg '", proto.name(), "'"), &out->type);
}

// Descriptions, deprecation, full types and handle data are not kept: OpDef has no place for them.
Status OpDefFromProto(const pb::OpDef& proto, OpDef* out) {
  const std::string where = StrCat("op '", proto.name(), "'");
  out->name = proto.name();
  out->summary = proto.summary();
  out->is_stateful = proto.is_stateful();
  out->is_commutative = proto.is_commutative();
  out->is_aggregate = proto.is_aggregate();
  out->allows_uninitialized_input = proto.allows_uninitialized_input();
  for (const pb::OpDef::ArgDef& arg : proto.input_arg())
    CFX_RETURN_IF_ERROR(ArgFromProto(arg, where, &out->input_arg.emplace_back()));
  for (const pb::OpDef::ArgDef& arg : proto.output_arg())
    CFX_RETURN_IF_ERROR(ArgFromProto(arg, where, &out->output_arg.emplace_back()));
  for (const pb::OpDef::AttrDef& attr : proto.attr()) {
    AttrDef& def = out->attr.emplace_back();
    def.name = attr.name();
    def.type = attr.type();
    def.has_minimum = attr.has_minimum();
    def.minimum = attr.minimum();
    const std::string attr_where = AttrWhere(where, attr.name());
    if (attr.has_default_value())
      CFX_RETURN_IF_ERROR(AttrFromProto(attr.default_value(), attr_where + " default",
                                        &def.default_value.emplace(), nullptr));
    if (attr.has_allowed_values())
      CFX_RETURN_IF_ERROR(AttrFromProto(attr.allowed_values(), attr_where + " allowed values",
                                        &def.allowed_values.emplace(), nullptr));
  }
  return Status::OK();
}

// --- C++ -> proto ------------------------------------------------------------------------------

Status AttrToProto(const AttrValue& value, const std::string& where, pb::AttrValue* out);

// Appends a key/value entry to a map field; returns its value.
template <typename Entries>
pb::AttrValue* AddEntry(Entries* entries, const std::string& key) {
  auto* entry = entries->Add();
  entry->set_key(key);
  return entry->mutable_value();
}

Status TensorAttrToProto(const Tensor& tensor, const std::string& encoding,
                         const std::string& where, pb::TensorProto* out) {
  if (encoding.empty()) return At(where, internal::TensorToProto(tensor, out));
  if (!out->ParseFromString(encoding))
    return errors::InvalidArgument(where, ": tensor_encoding is not a serialized TensorProto");
  return Status::OK();
}

Status FuncToProto(const NameAttrList& func, const std::string& where, pb::NameAttrList* out) {
  out->set_name(func.name);
  const std::string func_where = StrCat(where, " func '", func.name, "'");
  for (const auto& [key, value] : func.attr)
    CFX_RETURN_IF_ERROR(
        AttrToProto(value, AttrWhere(func_where, key), AddEntry(out->mutable_attr(), key)));
  return Status::OK();
}

Status ListToProto(const AttrValue::List& list, const std::string& where,
                   pb::AttrValue::ListValue* out) {
  for (const std::string& s : list.s) out->add_s(s);
  for (int64_t i : list.i) out->add_i(i);
  for (float f : list.f) out->add_f(f);
  for (bool b : list.b) out->add_b(b);
  for (DataType type : list.type) out->add_type(static_cast<pb::DataType>(type));
  for (const PartialTensorShape& shape : list.shape)
    internal::PartialShapeToProto(shape, out->add_shape());
  for (size_t i = 0; i < list.tensor.size(); ++i) {
    const std::string& encoding = i < list.tensor_encoding.size() ? list.tensor_encoding[i] : "";
    CFX_RETURN_IF_ERROR(
        TensorAttrToProto(list.tensor[i], encoding, ElementWhere(where, i), out->add_tensor()));
  }
  for (size_t i = 0; i < list.func.size(); ++i)
    CFX_RETURN_IF_ERROR(FuncToProto(list.func[i], ElementWhere(where, i), out->add_func()));
  return Status::OK();
}

Status AttrToProto(const AttrValue& value, const std::string& where, pb::AttrValue* out) {
  using Kind = AttrValue::Kind;
  switch (value.kind) {
    case Kind::kNone:
      return Status::OK();
    case Kind::kString:
      out->set_s(value.s);
      return Status::OK();
    case Kind::kInt:
      out->set_i(value.i);
      return Status::OK();
    case Kind::kFloat:
      out->set_f(value.f);
      return Status::OK();
    case Kind::kBool:
      out->set_b(value.b);
      return Status::OK();
    case Kind::kType:
      out->set_type(static_cast<pb::DataType>(value.type));
      return Status::OK();
    case Kind::kShape:
      internal::PartialShapeToProto(value.shape, out->mutable_shape());
      return Status::OK();
    case Kind::kTensor:
      return TensorAttrToProto(value.tensor, value.tensor_encoding, where, out->mutable_tensor());
    case Kind::kList:
      return ListToProto(value.list, where, out->mutable_list());
    case Kind::kFunc:
      return FuncToProto(value.func ? *value.func : NameAttrList(), where, out->mutable_func());
    case Kind::kPlaceholder:
      out->set_placeholder(value.s);
      return Status::OK();
  }
  return errors::InvalidArgument(where, ": unknown attr kind ", static_cast<int>(value.kind));
}

Status NodeToProto(const NodeDef& node, pb::NodeDef* out) {
  out->set_name(node.name);
  out->set_op(node.op);
  for (const std::string& input : node.input) out->add_input(input);
  out->set_device(node.device);
  const std::string where = StrCat("node '", node.name, "'");
  for (const auto& [key, value] : node.attr)
    CFX_RETURN_IF_ERROR(
        AttrToProto(value, AttrWhere(where, key), AddEntry(out->mutable_attr(), key)));
  if (!node.experimental_debug_info.empty() &&
      !out->mutable_experimental_debug_info()->ParseFromString(node.experimental_debug_info)) {
    return errors::InvalidArgument(
        where, ": experimental_debug_info is not a serialized NodeDef.ExperimentalDebugInfo");
  }
  return Status::OK();
}

Status GraphToProto(const GraphDef& graph, pb::GraphDef* out) {
  for (const NodeDef& node : graph.node) CFX_RETURN_IF_ERROR(NodeToProto(node, out->add_node()));
  if (graph.has_versions) {
    pb::VersionDef* versions = out->mutable_versions();
    versions->set_producer(graph.versions.producer);
    versions->set_min_consumer(graph.versions.min_consumer);
    for (int32_t v : graph.versions.bad_consumers) versions->add_bad_consumers(v);
  }
  out->set_version(graph.version);
  if (!graph.library.empty() && !out->mutable_library()->ParseFromString(graph.library))
    return errors::InvalidArgument("library is not a serialized FunctionDefLibrary");
  return Status::OK();
}

// With `check_utf8`, names that are not UTF-8 are an error rather than a file no parser reads.
StatusOr<std::string> TrySerialize(const GraphDef& graph, GraphFormat format, bool check_utf8) {
  google::protobuf::Arena arena;
  auto* proto = google::protobuf::Arena::CreateMessage<pb::GraphDef>(&arena);
  CFX_RETURN_IF_ERROR(GraphToProto(graph, proto));
  if (check_utf8) CFX_RETURN_IF_ERROR(CheckUtf8(*proto));
  if (format == GraphFormat::kText) {
    OrderMapEntries(proto, EntryOrder::kAscending);
    std::string out;
    google::protobuf::TextFormat::Printer printer;
    // Fields unknown to our protos (from a newer TensorFlow, inside the library or a tensor attr)
    // print as bare numbers that no text parser reads back: leave them out of text.
    printer.SetHideUnknownFields(true);
    if (!printer.PrintToString(*proto, &out))
      return errors::Internal("protobuf could not print the GraphDef as text");
    return out;
  }
  OrderMapEntries(proto, EntryOrder::kTensorFlowBinary);
  if (proto->ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return errors::InvalidArgument("the GraphDef is ", proto->ByteSizeLong(),
                                   " bytes, more than protobuf's 2 GiB limit");
  return SerializeDeterministic(*proto);
}

// --- files -------------------------------------------------------------------------------------

using internal::FirstErrorCollector;

// Parses binary `data` with messages nested at most `depth` deep (protobuf's recursion limit).
bool ParseBinary(std::string_view data, int depth, google::protobuf::Message* proto) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(data.data()),
                                               static_cast<int>(data.size()));
  input.SetRecursionLimit(depth);
  proto->Clear();
  return proto->ParseFromCodedStream(&input) && input.ConsumedEntireMessage();
}

// Parses `data` into `proto` with messages nested at most `depth` deep; `what` names the message
// in errors ("GraphDef", "OpList"). `data` is at most INT_MAX bytes.
Status ParseProto(std::string_view data, GraphFormat format, const char* what, int depth,
                  google::protobuf::Message* proto) {
  if (format == GraphFormat::kText) {
    google::protobuf::TextFormat::Parser parser;
    FirstErrorCollector collector;
    parser.RecordErrorsTo(&collector);
    parser.SetRecursionLimit(depth);
    google::protobuf::io::ArrayInputStream input(data.data(), static_cast<int>(data.size()));
    if (!parser.Parse(&input, proto)) {
      const std::string& first = collector.first();
      return errors::InvalidArgument(
          "malformed text ", what, ": ", first.empty() ? "parse error" : first,
          first.find("recursion limit") != std::string::npos
              ? StrCat(" (config key limits.nesting_depth = ", depth, ")")
              : "");
    }
    Status utf8 = CheckUtf8(*proto);
    if (!utf8.ok()) return utf8.WithPrefix(StrCat("malformed text ", what, ": "));
  } else if (!ParseBinary(data, depth, proto)) {
    // Tell nesting from malformed bytes: a deeper parse, still bounded, that succeeds.
    if (depth < 1000 && ParseBinary(data, 1000, proto))
      return errors::InvalidArgument("binary ", what, " nests messages deeper than the limit of ",
                                     depth, " (config key limits.nesting_depth)");
    return errors::InvalidArgument("malformed binary ", what, ": ", data.size(),
                                   " bytes that do not parse as a ", what, " protobuf");
  }
  return Status::OK();
}

}  // namespace

namespace internal {

Status NodeDefFromProto(const pb::NodeDef& proto, NodeDef* out, ConstantBudget* budget) {
  return NodeFromProto(proto, out, budget);
}

Status OpDefFromProtoMessage(const pb::OpDef& proto, OpDef* out) {
  return OpDefFromProto(proto, out);
}

Status AttrValueFromProto(const pb::AttrValue& proto, const std::string& where, AttrValue* out,
                          ConstantBudget* budget) {
  return AttrFromProto(proto, where, out, budget);
}

}  // namespace internal

bool NodeDef::operator==(const NodeDef& o) const {
  return name == o.name && op == o.op && input == o.input && device == o.device && attr == o.attr &&
         experimental_debug_info == o.experimental_debug_info;
}

bool GraphDef::operator==(const GraphDef& o) const {
  return node == o.node && has_versions == o.has_versions && versions == o.versions &&
         version == o.version && library == o.library;
}

StatusOr<GraphDef> ParseGraphDef(std::string_view data, GraphFormat format,
                                 const GraphLimits& limits) {
  const char* kind = format == GraphFormat::kText ? "text" : "binary";
  const int64_t max_bytes = std::min<int64_t>(limits.max_graph_bytes, INT_MAX);
  if (static_cast<uint64_t>(data.size()) > static_cast<uint64_t>(max_bytes))
    return errors::InvalidArgument(
        kind, " GraphDef of ", data.size(), " bytes is over the limit of ", max_bytes,
        " bytes (config key limits.graph_bytes",
        max_bytes < limits.max_graph_bytes ? "; protobuf's 2 GiB" : "", ")");
  const int depth = std::max(limits.max_nesting_depth, 1);
  google::protobuf::Arena arena;
  auto* proto = google::protobuf::Arena::CreateMessage<pb::GraphDef>(&arena);
  CFX_RETURN_IF_ERROR(ParseProto(data, format, "GraphDef", depth, proto));
  if (proto->node_size() > limits.max_nodes)
    return errors::InvalidArgument("GraphDef has ", proto->node_size(),
                                   " nodes, over the limit of ", limits.max_nodes,
                                   " (config key limits.nodes)");
  GraphDef graph;
  internal::ConstantBudget budget(limits.max_constant_bytes);
  CFX_RETURN_IF_ERROR(GraphFromProto(proto, &graph, &budget));
  CFX_RETURN_IF_ERROR(CheckGraphLimits(graph, limits));
  return graph;
}

StatusOr<std::vector<OpDef>> ParseOpList(std::string_view data, GraphFormat format) {
  google::protobuf::Arena arena;
  auto* proto = google::protobuf::Arena::CreateMessage<pb::OpList>(&arena);
  if (data.size() > static_cast<size_t>(INT_MAX))
    return errors::InvalidArgument("an OpList of ", data.size(), " bytes is over 2 GiB");
  CFX_RETURN_IF_ERROR(ParseProto(data, format, "OpList", GraphLimits().max_nesting_depth, proto));
  std::vector<OpDef> ops(proto->op_size());
  for (int i = 0; i < proto->op_size(); ++i)
    CFX_RETURN_IF_ERROR(OpDefFromProto(proto->op(i), &ops[i]));
  return ops;
}

std::string SerializeGraphDef(const GraphDef& graph, GraphFormat format) {
  StatusOr<std::string> out = TrySerialize(graph, format, /*check_utf8=*/false);
  // Only a broken invariant gets here: carried bytes (library, debug info, tensor_encoding) that
  // did not come from a parse, a tensor attr without a host buffer, or a graph over 2 GiB.
  // WriteGraphDefFile reports the same cases as a Status, and also names that are not UTF-8,
  // which protobuf only logs here.
  if (!out.ok()) internal::CheckFailed(__FILE__, __LINE__, out.status().ToString().c_str());
  return std::move(out).value();
}

GraphFormat GraphFormatForPath(const std::string& path) {
  return path.ends_with(".pbtxt") || path.ends_with(".txt") ? GraphFormat::kText
                                                            : GraphFormat::kBinary;
}

StatusOr<GraphDef> ReadGraphDefFile(const std::string& path, const GraphLimits& limits) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return errors::InvalidArgument(path, ": is a directory, not a GraphDef file");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(std::max<int64_t>(limits.max_graph_bytes, 0)))
    return errors::InvalidArgument(path, ": GraphDef file of ", size,
                                   " bytes is over the limit of ", limits.max_graph_bytes,
                                   " bytes (config key limits.graph_bytes)");
  CFX_ASSIGN_OR_RETURN(std::string data, internal::ReadFileToString(path));
  StatusOr<GraphDef> graph = ParseGraphDef(data, GraphFormatForPath(path), limits);
  if (!graph.ok()) return graph.status().WithPrefix(path + ": ");
  return graph;
}

Status WriteGraphDefFile(const GraphDef& graph, const std::string& path) {
  StatusOr<std::string> data = TrySerialize(graph, GraphFormatForPath(path), /*check_utf8=*/true);
  if (!data.ok()) return data.status().WithPrefix(path + ": ");
  return internal::WriteStringToFile(path, *data);
}

StatusOr<TensorId> ParseTensorName(std::string_view name) {
  auto bad = [&](const char* why) {
    return errors::InvalidArgument("bad tensor name '", name, "': ", why,
                                   " (expected 'node', 'node:port' or '^node')");
  };
  if (name.empty()) return bad("empty");
  if (name.front() == '^') {
    std::string_view node = name.substr(1);
    if (node.empty()) return bad("no node name after '^'");
    if (node.find(':') != std::string_view::npos) return bad("a control input has no port");
    return TensorId{std::string(node), -1};
  }
  const size_t colon = name.rfind(':');
  if (colon == std::string_view::npos) return TensorId{std::string(name), 0};
  std::string_view node = name.substr(0, colon);
  std::string_view port = name.substr(colon + 1);
  if (node.empty()) return bad("no node name");
  if (node.find(':') != std::string_view::npos) return bad("more than one ':'");
  if (port.empty()) return bad("no port after ':'");
  int64_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return bad("the port is not a non-negative integer");
    value = value * 10 + (c - '0');
    if (value > INT_MAX) return bad("the port is out of range");
  }
  return TensorId{std::string(node), static_cast<int>(value)};
}

}  // namespace cfx
