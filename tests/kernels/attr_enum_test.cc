// Attr values that are not values of the ABI's enums never become them: a type attr holding a
// reference type (DT_FLOAT_REF = 101, which GraphDefs may carry) or a code outside the DataType
// enum reaches a plugin kernel as an InvalidArgument naming the node, the attr and the value, not
// as an out-of-range cfx_dtype (undefined behaviour; found by a hostile-input run under UBSan).
#include <string>
#include <vector>

#include "conflux/kernel_runner.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

TEST(AttrEnums, AReferenceTypeInATypeAttrIsAClearError) {
  for (int code : {101, 119, 24, 99}) {
    SCOPED_TRACE("dtype " + std::to_string(code));
    NodeDef n = test::MakeNode("Const", 0,
                               {{"dtype", AttrValue::Type(static_cast<DataType>(code))},
                                {"value", AttrValue::TensorValue(test::MakeVector<float>({1}))}});
    auto out = test::RunKernelOnly(n, {});
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().code(), Code::kInvalidArgument) << out.status();
    EXPECT_NE(out.status().message().find("attr 'dtype'"), std::string::npos) << out.status();
    EXPECT_NE(out.status().message().find(std::to_string(code)), std::string::npos)
        << out.status();
  }
}

}  // namespace
}  // namespace cfx
