// ONNX converters of the reduction family: ReduceMax/Mean/Min/Prod/Sum, ArgMax/ArgMin, and
// ReduceL1/L2/LogSum/LogSumExp/SumSquare as a sum of a transformed input, and CumSum. The registry side is
// shape_funcs/reduce.cc; the conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// ReduceX: axes an attribute (ReduceSum: an input from opset 13); empty = all axes.
template <const char* kOp>
Outs Reduce(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const bool axes_input = std::string(kOp) == "sum" && ctx.opset() >= 13;
  std::optional<std::vector<int64_t>> axes;
  if (axes_input) {
    if (Value* av = In(in, 1); av != nullptr && !ConstInts(ctx, av)) {
      // Computed axes: a statically empty input means what an empty constant means (every
      // axis, or none with noop_with_empty_axes) whatever its values. Other lengths become a
      // dyn.sum, whose axes the host reads at run time.
      const Type at = ctx.TypeOf(av);
      if (!at.is_tensor() || at.rank() != 1 || !at.shape()[0].is_constant() ||
          at.shape()[0].constant() != 0) {
        return One(ctx.Op("dyn.sum", {x, av},
                          {{"keepdims", IntAttr(n, "keepdims", 1) != 0},
                           {"noop_with_empty_axes", IntAttr(n, "noop_with_empty_axes", 0) != 0}}));
      }
      axes = std::vector<int64_t>{};
    } else {
      ASSIGN_OR_RETURN(axes, AxesOf(ctx, n, in, 13));
    }
    if ((!axes || axes->empty()) && IntAttr(n, "noop_with_empty_axes", 0) != 0) {
      return std::vector<Value*>{x};
    }
  } else {
    axes = IntsAttr(n, "axes");
  }
  std::vector<int64_t> a = axes ? *axes : std::vector<int64_t>{};
  return One(ctx.Op(kOp, {x}, {{"axis", a}, {"keepdims", IntAttr(n, "keepdims", 1) != 0}}));
}
constexpr char kMean[] = "mean", kSum[] = "sum", kMax[] = "max", kMin[] = "min",
               kProd[] = "prod";

// ArgMax / ArgMin: one axis, i64 indices.
template <const char* kOp>
Outs ArgReduce(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  return One(ctx.Op(kOp, {x},
                    {{"axis", std::vector<int64_t>{IntAttr(n, "axis", 0)}},
                     {"keepdims", IntAttr(n, "keepdims", 1) != 0},
                     {"select_last_index", IntAttr(n, "select_last_index", 0) != 0},
                     {"dtype", DType::kI64}}));
}
constexpr char kArgmax[] = "argmax", kArgmin[] = "argmin";

// ReduceL1 / ReduceL2 / ReduceSumSquare / ReduceLogSum / ReduceLogSumExp as a sum of a
// transformed input (axes an attribute at opsets 11-17).
enum class SumForm { kL1, kL2, kSquare, kLog, kLogExp };
template <SumForm kForm>
Outs ReduceSumOf(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  auto axes = IntsAttr(n, "axes");
  Value* t = x;
  if (kForm == SumForm::kL1) {
    ASSIGN_OR_RETURN(t, ctx.Op("abs", {x}));
  } else if (kForm == SumForm::kL2 || kForm == SumForm::kSquare) {
    ASSIGN_OR_RETURN(t, ctx.Op("multiply", {x, x}));
  } else if (kForm == SumForm::kLogExp) {
    ASSIGN_OR_RETURN(t, ctx.Op("exp", {x}));
  }
  ASSIGN_OR_RETURN(Value * r, ctx.Op("sum", {t},
                                     {{"axis", axes ? *axes : std::vector<int64_t>{}},
                                      {"keepdims", IntAttr(n, "keepdims", 1) != 0}}));
  if (kForm == SumForm::kL2) return One(ctx.Op("sqrt", {r}));
  if (kForm == SumForm::kLog || kForm == SumForm::kLogExp) return One(ctx.Op("log", {r}));
  return std::vector<Value*>{r};
}

// CumSum: cumsum; its axis input may be computed (only the kernel reads it).
Outs CumSum(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * a, Need(ctx, in, 1));
  return One(ctx.Op("cumsum", {x, a}, {{"exclusive", IntAttr(n, "exclusive", 0) != 0},
                                       {"reverse", IntAttr(n, "reverse", 0) != 0}}));
}

}  // namespace

void AddReduceConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"ArgMax", ArgReduce<kArgmax>},
      {"ArgMin", ArgReduce<kArgmin>},
      {"CumSum", CumSum},
      {"ReduceL1", ReduceSumOf<SumForm::kL1>},
      {"ReduceL2", ReduceSumOf<SumForm::kL2>},
      {"ReduceLogSum", ReduceSumOf<SumForm::kLog>},
      {"ReduceLogSumExp", ReduceSumOf<SumForm::kLogExp>},
      {"ReduceMax", Reduce<kMax>},
      {"ReduceMean", Reduce<kMean>},
      {"ReduceMin", Reduce<kMin>},
      {"ReduceProd", Reduce<kProd>},
      {"ReduceSum", Reduce<kSum>},
      {"ReduceSumSquare", ReduceSumOf<SumForm::kSquare>},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
