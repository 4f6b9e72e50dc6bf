// Lookup tables (TensorFlow's lookup_ops): the table resources HashTableV2 (initialized once,
// then read-only), MutableHashTableV2 and MutableHashTableOfTensorsV2 (vector values), their
// initializers (InitializeTableV2, InitializeTableFromTextFileV2) and the operations on a table
// handle (find, insert, remove, size, export, import).
#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

// Input 0, the table handle, is a scalar.
Status LookupTableHandleIsScalar(InferenceContext& c) { return c.WithRank(0, 0).status(); }

OpDefBuilder LookupTableOpDef(const char* name) {
  return OpDefBuilder(name)
      .Output("table_handle: resource")
      .Attr("container: string = ''")
      .Attr("shared_name: string = ''")
      .Attr("use_node_name_sharing: bool = false")
      .Attr("key_dtype: type")
      .Attr("value_dtype: type")
      .SetIsStateful()
      .SetShapeFn(ScalarShape);
}

}  // namespace

void RegisterLookupOps(OpRegistry* r) {
  r->RegisterOrDie(LookupTableOpDef("HashTableV2")
                       .Summary("A hash table that one initializer fills; read-only after it."));
  r->RegisterOrDie(LookupTableOpDef("MutableHashTableV2")
                       .Summary("A hash table of scalar values that Insert and Remove update."));
  r->RegisterOrDie(LookupTableOpDef("MutableHashTableOfTensorsV2")
                       .Attr("value_shape: shape = []")
                       .Summary("A mutable hash table whose values are vectors of value_shape."));

  r->RegisterOrDie(OpDefBuilder("InitializeTableV2")
                       .Input("table_handle: resource")
                       .Input("keys: Tkey")
                       .Input("values: Tval")
                       .Attr("Tkey: type")
                       .Attr("Tval: type")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(LookupTableHandleIsScalar(c));
                         CFX_ASSIGN_OR_RETURN(PartialTensorShape keys, c.WithRank(1, 1));
                         if (!keys.Merge(c.input(2)).ok())
                           return c.Error("keys have shape " + keys.ToString() +
                                          " but values have shape " + c.input(2).ToString());
                         return Status();
                       })
                       .Summary("Fills a table with keys[i] -> values[i] (vectors)."));
  r->RegisterOrDie(OpDefBuilder("InitializeTableFromTextFileV2")
                       .Input("table_handle: resource")
                       .Input("filename: string")
                       .Attr("key_index: int >= -2")
                       .Attr("value_index: int >= -2")
                       .Attr("vocab_size: int >= -1 = -1")
                       .Attr("delimiter: string = '\t'")
                       .Attr("offset: int = 0")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(LookupTableHandleIsScalar(c));
                         return c.WithRank(1, 0).status();
                       })
                       .Summary("Fills a table from the lines of a text file (key and value: a "
                                "column, -1 the line number, -2 the whole line)."));

  r->RegisterOrDie(OpDefBuilder("LookupTableFindV2")
                       .Input("table_handle: resource")
                       .Input("keys: Tin")
                       .Input("default_value: Tout")
                       .Output("values: Tout")
                       .Attr("Tin: type")
                       .Attr("Tout: type")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(LookupTableHandleIsScalar(c));
                         // keys.shape + the table's value shape, which the graph does not say.
                         return UnknownShape(c);
                       })
                       .Summary("The value of each key, or default_value for absent keys."));
  r->RegisterOrDie(OpDefBuilder("LookupTableInsertV2")
                       .Input("table_handle: resource")
                       .Input("keys: Tin")
                       .Input("values: Tout")
                       .Attr("Tin: type")
                       .Attr("Tout: type")
                       .SetIsStateful()
                       .SetShapeFn(LookupTableHandleIsScalar)
                       .Summary("Sets table[keys[i]] = values[i] (a mutable table)."));
  r->RegisterOrDie(OpDefBuilder("LookupTableRemoveV2")
                       .Input("table_handle: resource")
                       .Input("keys: Tin")
                       .Attr("Tin: type")
                       .SetIsStateful()
                       .SetShapeFn(LookupTableHandleIsScalar)
                       .Summary("Removes keys from a mutable table; absent keys are ignored."));
  r->RegisterOrDie(OpDefBuilder("LookupTableSizeV2")
                       .Input("table_handle: resource")
                       .Output("size: int64")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(LookupTableHandleIsScalar(c));
                         return ScalarShape(c);
                       })
                       .Summary("The number of entries of a table."));
  r->RegisterOrDie(OpDefBuilder("LookupTableExportV2")
                       .Input("table_handle: resource")
                       .Output("keys: Tkeys")
                       .Output("values: Tvalues")
                       .Attr("Tkeys: type")
                       .Attr("Tvalues: type")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(LookupTableHandleIsScalar(c));
                         c.set_output(0, PartialTensorShape({kUnknownDim}));
                         c.set_output(1, PartialTensorShape::UnknownRank());
                         return Status();
                       })
                       .Summary("Every key of a table and its value (in no particular order)."));
  r->RegisterOrDie(OpDefBuilder("LookupTableImportV2")
                       .Input("table_handle: resource")
                       .Input("keys: Tin")
                       .Input("values: Tout")
                       .Attr("Tin: type")
                       .Attr("Tout: type")
                       .SetIsStateful()
                       .SetShapeFn(LookupTableHandleIsScalar)
                       .Summary("Replaces the contents of a table with keys -> values."));
}

}  // namespace cfx::internal
