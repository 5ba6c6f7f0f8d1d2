// A small op registry for the IR tests (parser, printer, verifier, structural equality), so
// they do not depend on the built-in op set, which grows independently. Covers: dotted names,
// two results, no result, variadic inputs, and attributes of every type with and without
// defaults.
#ifndef HETPASS_SRC_IR_IR_TEST_OPS_H_
#define HETPASS_SRC_IR_IR_TEST_OPS_H_

#include <memory>
#include <vector>

#include "passes/ir/op_def.h"
#include "passes/support/status_macros.h"

namespace hetpass::testing {

inline const OpRegistry& TestRegistry() {
  static const OpRegistry* registry = [] {
    OpRegistry::Builder b;
    auto same_as_first = [](ShapeContext& ctx) -> absl::StatusOr<std::vector<Type>> {
      ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
      return std::vector<Type>{Type::Tensor(ctx.dtype(0), {shape.begin(), shape.end()})};
    };
    b.Register("nn.relu").Input("data", InputDep::kShape).Rule(same_as_first);
    b.Register("add")
        .Input("lhs", InputDep::kShape)
        .Input("rhs", InputDep::kShape)
        .Rule(same_as_first);
    b.Register("nn.dense")
        .Input("data", InputDep::kShape)
        .Input("weight", InputDep::kShape)
        .Rule(same_as_first);
    b.Register("topk")
        .Input("data", InputDep::kShape)
        .Attr("k", AttrType::kInt)
        .Attr("axis", AttrType::kInt, int64_t{-1})
        .Outputs(2)
        .Rule([](ShapeContext& ctx) -> absl::StatusOr<std::vector<Type>> {
          ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
          std::vector<DimExpr> s(shape.begin(), shape.end());
          return std::vector<Type>{Type::Tensor(ctx.dtype(0), s), Type::Tensor(DType::kI64, s)};
        });
    b.Register("concat")
        .VariadicInput("tensors", InputDep::kShape)
        .Attr("axis", AttrType::kInt, int64_t{0})
        .Rule(same_as_first);
    b.Register("test.attrs")
        .Input("data", InputDep::kShape)
        .Attr("i", AttrType::kInt, int64_t{0})
        .Attr("f", AttrType::kFloat, 1.0)
        .Attr("b", AttrType::kBool, false)
        .Attr("s", AttrType::kString, std::string())
        .Attr("il", AttrType::kIntList, std::vector<int64_t>{})
        .Attr("fl", AttrType::kFloatList, std::vector<double>{})
        .Attr("dt", AttrType::kDType, DType::kF32)
        .Rule(same_as_first);
    b.Register("test.sink")
        .Input("data", InputDep::kShape)
        .Outputs(0)
        .Rule(
            [](ShapeContext&) -> absl::StatusOr<std::vector<Type>> { return std::vector<Type>{}; });
    auto built = b.Build();
    HETPASS_CHECK(built.ok(), "test registry is inconsistent");
    return built->release();
  }();
  return *registry;
}

}  // namespace hetpass::testing

#endif  // HETPASS_SRC_IR_IR_TEST_OPS_H_
