// ONNX converters of the random family: RandomUniform(Like) and RandomNormal(Like) as
// random.uniform_like / random.normal_like (RandomUniform and RandomNormal draw in the shape of
// a dyn.zeros of their `shape` attribute), and Bernoulli as a uniform draw below p. ONNX's seed
// is a float: its bits become the registry's integer seed, so equal seeds draw equal numbers;
// without one every call draws afresh. The registry side is shape_funcs/random.cc.
#include "frontend/onnx_converters.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// The registry seed of the node's float `seed` attribute (-1: none).
int64_t SeedOf(const onnx::NodeProto& n) {
  if (FindAttr(n, "seed") == nullptr) return -1;
  const float seed = FloatAttr(n, "seed", 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &seed, sizeof(bits));
  return bits;
}

// The dtype attribute (an ONNX element type), or `fallback` when absent.
absl::StatusOr<DType> DTypeAttr(ImportContext& ctx, const onnx::NodeProto& n, DType fallback) {
  if (FindAttr(n, "dtype") == nullptr) return fallback;
  auto dt = DTypeFromOnnx(static_cast<int32_t>(IntAttr(n, "dtype", 0)));
  if (!dt.ok()) return ctx.Unimplemented(dt.status().message());
  if (!IsFloat(*dt)) return ctx.Error(absl::StrCat("dtype must be floating point, got ", DTypeName(*dt)));
  return *dt;
}

// `like` for the shape: the input of the *Like ops, a dyn.zeros of the `shape` attribute else.
absl::StatusOr<Value*> ShapeSource(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in,
                                   bool like) {
  if (like) return Need(ctx, in, 0);
  auto shape = IntsAttr(n, "shape");
  if (!shape) return ctx.Error("needs the shape attribute");
  for (int64_t d : *shape) {
    if (d < 0) return ctx.Error(absl::StrCat("shape has a negative dim ", d));
  }
  Value* dims = ctx.Const(Tensor::FromInt64s(DType::kI64, {static_cast<int64_t>(shape->size())}, *shape));
  return ctx.Op("dyn.zeros", {dims}, {{"dtype", DType::kF32}});
}

template <bool kLike, bool kNormal>
Outs Random(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * source, ShapeSource(ctx, n, in, kLike));
  const DType fallback = kLike && IsFloat(ctx.DTypeOf(source)) ? ctx.DTypeOf(source) : DType::kF32;
  ASSIGN_OR_RETURN(DType dt, DTypeAttr(ctx, n, fallback));
  Attrs attrs{{"dtype", dt}, {"seed", SeedOf(n)}};
  if (kNormal) {
    attrs.Set("mean", static_cast<double>(FloatAttr(n, "mean", 0.0f)));
    attrs.Set("scale", static_cast<double>(FloatAttr(n, "scale", 1.0f)));
    return One(ctx.Op("random.normal_like", {source}, attrs));
  }
  attrs.Set("low", static_cast<double>(FloatAttr(n, "low", 0.0f)));
  attrs.Set("high", static_cast<double>(FloatAttr(n, "high", 1.0f)));
  return One(ctx.Op("random.uniform_like", {source}, attrs));
}

// Bernoulli: 1 where a uniform draw in [0, 1) falls below the probability p, in `dtype`
// (default p's).
Outs Bernoulli(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * p, Need(ctx, in, 0));
  const DType pt = ctx.DTypeOf(p);
  if (!IsFloat(pt)) return ctx.Error(absl::StrCat("input must be floating point, got ", DTypeName(pt)));
  DType out = pt;
  if (FindAttr(n, "dtype") != nullptr) {
    auto dt = DTypeFromOnnx(static_cast<int32_t>(IntAttr(n, "dtype", 0)));
    if (!dt.ok()) return ctx.Unimplemented(dt.status().message());
    out = *dt;
  }
  ASSIGN_OR_RETURN(Value * u, ctx.Op("random.uniform_like", {p}, {{"dtype", pt}, {"seed", SeedOf(n)}}));
  ASSIGN_OR_RETURN(Value * hit, ctx.Op("less", {u, p}));
  return One(ctx.Op("cast", {hit}, {{"dtype", out}}));
}

}  // namespace

void AddRandomConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Bernoulli", Bernoulli},
      {"RandomNormal", Random<false, true>},
      {"RandomNormalLike", Random<true, true>},
      {"RandomUniform", Random<false, false>},
      {"RandomUniformLike", Random<true, false>},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
