// A GraphDef whose NodeDefs leave out attrs that have defaults in the OpDef (as graphs written by
// hand, by older TensorFlow versions or by other tools do) loads and runs with the defaults: the
// graph, shape inference, kernel selection and the kernels all read the OpDef's default where the
// node has none. A required attr left out is an error naming the node and the attr.
#include <memory>
#include <string>
#include <vector>

#include "conflux/graph_def.h"
#include "conflux/session.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

// MatMul without transpose_a/transpose_b, Pad without Tpaddings, Sum without keep_dims and Tidx,
// Conv2D without data_format, dilations, explicit_paddings and use_cudnn_on_gpu.
constexpr char kGraph[] = R"pb(
  node {
    name: "a"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {
            dim { size: 2 }
            dim { size: 2 }
          }
          float_val: [ 1, 2, 3, 4 ]
        }
      }
    }
  }
  node {
    name: "paddings"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {
            dim { size: 2 }
            dim { size: 2 }
          }
          int_val: [ 1, 0, 0, 1 ]
        }
      }
    }
  }
  node {
    name: "axis"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_INT32 }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_INT32
          tensor_shape {}
          int_val: 0
        }
      }
    }
  }
  node {
    name: "mm"
    op: "MatMul"
    input: [ "a", "a" ]
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "pad"
    op: "Pad"
    input: [ "mm", "paddings" ]
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "sum"
    op: "Sum"
    input: [ "pad", "axis" ]
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
  }
  node {
    name: "image"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {
            dim { size: 1 }
            dim { size: 3 }
            dim { size: 3 }
            dim { size: 1 }
          }
          float_val: [ 1, 2, 3, 4, 5, 6, 7, 8, 9 ]
        }
      }
    }
  }
  node {
    name: "filter"
    op: "Const"
    attr {
      key: "dtype"
      value { type: DT_FLOAT }
    }
    attr {
      key: "value"
      value {
        tensor {
          dtype: DT_FLOAT
          tensor_shape {
            dim { size: 2 }
            dim { size: 2 }
            dim { size: 1 }
            dim { size: 1 }
          }
          float_val: [ 1, 1, 1, 1 ]
        }
      }
    }
  }
  node {
    name: "conv"
    op: "Conv2D"
    input: [ "image", "filter" ]
    attr {
      key: "T"
      value { type: DT_FLOAT }
    }
    attr {
      key: "strides"
      value { list { i: [ 1, 1, 1, 1 ] } }
    }
    attr {
      key: "padding"
      value { s: "VALID" }
    }
  }
)pb";

TEST(DefaultAttrs, NodesWithoutDefaultedAttrsLoadAndRun) {
  StatusOr<GraphDef> graph = ParseGraphDef(kGraph, GraphFormat::kText);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (const NodeDef& node : graph->node) {
    const OpRegistration* op = test::TestRuntime().ops().LookUp(node.op);
    ASSERT_NE(op, nullptr) << node.op;
    if (node.op == "Const") continue;
    // The fixture does leave defaulted attrs out.
    int left_out = 0;
    for (const AttrDef& attr : op->def.attr)
      left_out += attr.default_value && !node.attr.count(attr.name);
    EXPECT_GT(left_out, 0) << node.name;
  }
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&test::TestRuntime(), *graph);
  ASSERT_TRUE(session.ok()) << session.status();
  std::vector<Tensor> out;
  ASSERT_OK((*session)->Run({}, {"mm", "pad", "sum", "conv"}, {}, &out));
  // a a = [[7, 10], [15, 22]], padded with a row before and a column after, summed over rows.
  test::ExpectTensorEqual(test::MakeTensor<float>({2, 2}, {7, 10, 15, 22}), out[0]);
  test::ExpectTensorEqual(test::MakeTensor<float>({3, 3}, {0, 0, 0, 7, 10, 0, 15, 22, 0}), out[1]);
  test::ExpectTensorEqual(test::MakeVector<float>({22, 32, 0}), out[2]);
  // NHWC, unit dilations: each output is the sum of a 2x2 window.
  test::ExpectTensorEqual(test::MakeTensor<float>({1, 2, 2, 1}, {12, 16, 24, 28}), out[3]);
}

TEST(DefaultAttrs, ARequiredAttrLeftOutIsAnErrorNamingNodeAndAttr) {
  StatusOr<GraphDef> graph = ParseGraphDef(kGraph, GraphFormat::kText);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (NodeDef& node : graph->node)
    if (node.name == "pad") node.attr.erase("T");
  StatusOr<std::unique_ptr<Session>> session = Session::Create(&test::TestRuntime(), *graph);
  std::vector<Tensor> out;
  Status s = session.ok() ? (*session)->Run({}, {"pad"}, {}, &out) : session.status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pad"), std::string::npos) << s;
  EXPECT_NE(s.message().find("'T'"), std::string::npos) << s;
}

}  // namespace
}  // namespace cfx
