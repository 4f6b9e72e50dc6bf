// SaveV2 and RestoreV2 (named tensors to and from a checkpoint file); record readers and
// DecodeRaw (input pipelines).
#include <string_view>

#include "conflux/shape_inference.h"
#include "framework/ops/ops.h"

namespace cfx::internal {
namespace {

// prefix: scalar; tensor_names and shape_and_slices: vectors of length len(dtypes).
Status CheckCheckpointInputs(InferenceContext& c) {
  CFX_RETURN_IF_ERROR(c.WithRank(0, 0).status());
  const AttrValue* dtypes = nullptr;
  CFX_ASSIGN_OR_RETURN(dtypes, c.GetAttr("dtypes"));
  const int64_t n = static_cast<int64_t>(dtypes->list.type.size());
  for (int i : {1, 2}) {
    CFX_ASSIGN_OR_RETURN(PartialTensorShape s, c.WithRank(i, 1));
    if (s.dim(0) != kUnknownDim && s.dim(0) != n)
      return c.Error(std::string(i == 1 ? "tensor_names" : "shape_and_slices") + " has " +
                     std::to_string(s.dim(0)) + " elements but dtypes has " + std::to_string(n));
  }
  return Status();
}

}  // namespace

void RegisterIoOps(OpRegistry* r) {
  r->RegisterOrDie(OpDefBuilder("FixedLengthRecordReaderV2")
                       .Output("reader_handle: resource")
                       .Attr("header_bytes: int = 0")
                       .Attr("record_bytes: int")
                       .Attr("footer_bytes: int = 0")
                       .Attr("hop_bytes: int = 0")
                       .Attr("container: string = ''")
                       .Attr("shared_name: string = ''")
                       .Attr("encoding: string = ''")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("A reader of fixed-length records from the files of a queue."));
  r->RegisterOrDie(OpDefBuilder("ReaderReadV2")
                       .Input("reader_handle: resource")
                       .Input("queue_handle: resource")
                       .Output("key: string")
                       .Output("value: string")
                       .SetIsStateful()
                       .SetShapeFn(ScalarShape)
                       .Summary("The next record (key, value) of a reader."));
  r->RegisterOrDie(OpDefBuilder("ReaderReadUpToV2")
                       .Input("reader_handle: resource")
                       .Input("queue_handle: resource")
                       .Input("num_records: int64")
                       .Output("keys: string")
                       .Output("values: string")
                       .SetIsStateful()
                       .SetShapeFn([](InferenceContext& c) {
                         c.set_output(0, PartialTensorShape({kUnknownDim}));
                         c.set_output(1, PartialTensorShape({kUnknownDim}));
                         return Status();
                       })
                       .Summary("Up to num_records records of a reader (fewer at the end)."));
  for (const char* op : {"ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2"})
    r->RegisterOrDie(OpDefBuilder(op)
                         .Input("reader_handle: resource")
                         .Output(std::string_view(op) == "ReaderNumRecordsProducedV2"
                                     ? "records_produced: int64"
                                     : "units_completed: int64")
                         .SetIsStateful()
                         .SetShapeFn(ScalarShape));
  r->RegisterOrDie(
      OpDefBuilder("ReaderResetV2").Input("reader_handle: resource").SetIsStateful());
  r->RegisterOrDie(
      OpDefBuilder("DecodeRaw")
          .Input("bytes: string")
          .Output("output: out_type")
          .Attr("out_type: {half, float, double, int32, uint16, uint8, int16, int8, int64, "
                "complex64, complex128, bool, bfloat16}")
          .Attr("little_endian: bool = true")
          .SetShapeFn([](InferenceContext& c) {
            PartialTensorShape in = c.input(0);
            if (in.unknown_rank()) return Status();
            std::vector<int64_t> dims = in.dims();
            dims.push_back(kUnknownDim);
            c.set_output(0, PartialTensorShape(dims));
            return Status();
          })
          .Summary("Reinterprets the bytes of each string as a vector of numbers."));
  r->RegisterOrDie(OpDefBuilder("SaveV2")
                       .Input("prefix: string")
                       .Input("tensor_names: string")
                       .Input("shape_and_slices: string")
                       .Input("tensors: dtypes")
                       .Attr("dtypes: list(type) >= 1")
                       .SetIsStateful(true)
                       .SetShapeFn(CheckCheckpointInputs)
                       .Summary("Writes `tensors` under `tensor_names` to the tensor bundle "
                                "`<prefix>.index` + `<prefix>.data-00000-of-00001` "
                                "(TensorFlow's format), each file replaced atomically."));
  r->RegisterOrDie(OpDefBuilder("RestoreV2")
                       .Input("prefix: string")
                       .Input("tensor_names: string")
                       .Input("shape_and_slices: string")
                       .Output("tensors: dtypes")
                       .Attr("dtypes: list(type) >= 1")
                       .SetIsStateful(true)
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(CheckCheckpointInputs(c));
                         return UnknownShape(c);
                       })
                       .Summary("Reads `tensor_names` (or the slices `shape_and_slices` name) "
                                "from the tensor bundle `<prefix>`, or from an earlier Conflux "
                                "checkpoint `<prefix>.cfxckpt`."));
  r->RegisterOrDie(OpDefBuilder("MergeV2Checkpoints")
                       .Input("checkpoint_prefixes: string")
                       .Input("destination_prefix: string")
                       .Attr("delete_old_dirs: bool = true")
                       .Attr("allow_missing_files: bool = false")
                       .SetIsStateful(true)
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         CFX_RETURN_IF_ERROR(c.WithRank(0, 1).status());
                         return c.WithRank(1, 0).status();
                       })
                       .Summary("Merges the tensor bundles `checkpoint_prefixes` into one at "
                                "`destination_prefix`."));
  r->RegisterOrDie(OpDefBuilder("ShardedFilename")
                       .Input("basename: string")
                       .Input("shard: int32")
                       .Input("num_shards: int32")
                       .Output("filename: string")
                       .SetShapeFn([](InferenceContext& c) -> Status {
                         for (int i = 0; i < 3; ++i) CFX_RETURN_IF_ERROR(c.WithRank(i, 0).status());
                         c.set_output(0, PartialTensorShape(std::vector<int64_t>{}));
                         return Status();
                       })
                       .Summary("\"<basename>-<shard>-of-<num_shards>\", five digits each."));
}

}  // namespace cfx::internal
