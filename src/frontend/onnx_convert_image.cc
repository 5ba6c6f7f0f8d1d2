// ONNX converters of the image family: RoiAlign (image.roi_align), Resize (image.resize2d,
// dyn.image.resize2d for computed sizes, dyn.image.resize2d_scaled for ONNX's own scales and
// roi) and GridSample (image.grid_sample). The registry side is shape_funcs/image.cc; the
// conventions are in onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// RoiAlign-10 and -16 as image.roi_align. The two differ in coordinate_transformation_mode:
// RoiAlign-10 (opsets 10-15) has no such attribute and behaves as output_half_pixel (no half
// pixel offset, rois at least 1 x 1: torchvision's aligned = False); RoiAlign-16 adds it with
// the default half_pixel. An attribute the node's opset does not define is an error rather
// than silently honoured.
Outs RoiAlign(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * rois, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * batch_indices, Need(ctx, in, 2));
  std::string mode = "output_half_pixel";
  if (ctx.opset() >= 16) {
    mode = StringAttr(n, "coordinate_transformation_mode", "half_pixel");
  } else if (FindAttr(n, "coordinate_transformation_mode") != nullptr) {
    return ctx.Error("coordinate_transformation_mode is an attribute of RoiAlign-16; below "
                     "opset 16 the mode is always output_half_pixel");
  }
  Attrs attrs{{"mode", StringAttr(n, "mode", "avg")},
              {"output_height", IntAttr(n, "output_height", 1)},
              {"output_width", IntAttr(n, "output_width", 1)},
              {"sampling_ratio", IntAttr(n, "sampling_ratio", 0)},
              {"spatial_scale", static_cast<double>(FloatAttr(n, "spatial_scale", 1.0f))},
              {"coordinate_transformation_mode", mode}};
  return One(ctx.Op("image.roi_align", {x, rois, batch_indices}, attrs));
}

// True when an optional tensor input is absent or empty (ONNX passes "" or an empty tensor).
bool AbsentOrEmpty(ImportContext& ctx, Value* v) {
  if (v == nullptr) return true;
  const Type t = ctx.TypeOf(v);
  return t.is_tensor() && t.rank() == 1 && t.shape()[0].is_constant() &&
         t.shape()[0].constant() == 0;
}

// Resize onto the registry's three resize ops, by what the inputs fix at import:
//   - sizes (constant or computed), or constant scales that give integral output sizes on
//     static dims (then out / in is the scale itself): image.resize2d / dyn.image.resize2d,
//     which have native kernels;
//   - constant integral scales on symbolic dims: dyn.image.resize2d to shape_of(x) * scale,
//     computed on the host (torch's interpolate(scale_factor=2) on a dynamic image);
//   - everything else (computed or fractional scales, whose coordinates ONNX transforms with
//     the scale, and tf_crop_and_resize's roi): dyn.image.resize2d_scaled with ONNX's inputs.
Outs Resize(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 4) return ctx.Unimplemented("only 4-D (NCHW) inputs");
  std::string mode = StringAttr(n, "mode", "nearest");
  if (mode == "nearest") mode = "nearest_neighbor";
  if (mode != "nearest_neighbor" && mode != "linear" && mode != "cubic") {
    return ctx.Error(absl::StrCat("mode must be nearest, linear or cubic, got '", mode, "'"));
  }
  std::string nearest = StringAttr(n, "nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil" || nearest == "floor" ||
      nearest == "ceil") {
    // same names in the registry
  } else {
    return ctx.Unimplemented(absl::StrCat("nearest_mode '", nearest, "'"));
  }
  const std::string ctm = StringAttr(n, "coordinate_transformation_mode", "half_pixel");
  const bool crop = ctm == "tf_crop_and_resize";
  Attrs attrs{{"method", mode},
              {"coordinate_transformation_mode", ctm},
              {"rounding_method", mode == "nearest_neighbor" ? nearest : std::string()},
              {"cubic_alpha", static_cast<double>(FloatAttr(n, "cubic_coeff_a", -0.75f))},
              {"cubic_exclude", IntAttr(n, "exclude_outside", 0)},
              {"extrapolation_value", static_cast<double>(FloatAttr(n, "extrapolation_value", 0))}};
  Value* roi = In(in, 1);
  Value* scales = In(in, 2);
  Value* sizes = In(in, 3);
  const bool has_sizes = !AbsentOrEmpty(ctx, sizes);
  const bool has_scales = !AbsentOrEmpty(ctx, scales);
  if (has_sizes == has_scales) return ctx.Error("needs exactly one of scales and sizes");
  const Type t = ctx.TypeOf(x);
  if (has_sizes && ctx.RankOf(sizes) != 1) return ctx.Error("sizes must be 1-D");
  if (has_scales && ctx.RankOf(scales) != 1) return ctx.Error("scales must be 1-D");

  // Sizes: the static op for constant ones, dyn.image.resize2d for computed ones.
  std::optional<std::vector<int64_t>> const_sizes =
      has_sizes ? ConstInts(ctx, sizes) : std::nullopt;
  if (const_sizes) {
    if (const_sizes->size() != 4) return ctx.Error("sizes must have 4 elements");
    for (int d : {0, 1}) {
      if (t.shape()[d].is_constant() && (*const_sizes)[d] != t.shape()[d].constant()) {
        return ctx.Unimplemented(absl::StrFormat(
            "sizes[%d] = %d differs from the input's dim %d: only H and W are resized", d,
            (*const_sizes)[d], t.shape()[d].constant()));
      }
    }
  }
  if (has_sizes && !crop) {
    if (const_sizes) {
      attrs.Set("size", std::vector<int64_t>{(*const_sizes)[2], (*const_sizes)[3]});
      return One(ctx.Op("image.resize2d", {x}, attrs));
    }
    ASSIGN_OR_RETURN(Value * hw, ctx.Op("strided_slice", {sizes},
                                        {{"begin", std::vector<int64_t>{2}},
                                         {"end", std::vector<int64_t>{4}}}));
    return One(ctx.Op("dyn.image.resize2d", {x, hw}, attrs));
  }

  // Constant scales of N and C 1 and integral output sizes: out / in is the scale.
  std::optional<Tensor> sc = has_scales ? ctx.ConstValue(scales) : std::nullopt;
  if (sc && !crop) {
    if (sc->num_elements() != 4) return ctx.Error("scales must have 4 elements");
    if (sc->GetDouble(0) != 1.0 || sc->GetDouble(1) != 1.0) {
      return ctx.Unimplemented("scales of N and C other than 1 (only H and W are resized)");
    }
    std::vector<int64_t> size;
    bool integral = true;  // every in * scale an integer, known now
    for (int axis : {2, 3}) {
      const double scale = sc->GetDouble(axis);
      if (!(scale > 0) || !std::isfinite(scale)) {
        return ctx.Error(absl::StrFormat("scales[%d] = %g is not a positive number", axis, scale));
      }
      if (!t.shape()[axis].is_constant()) {
        // An integral scale of a symbolic dim multiplies it on the host; one past 2^31 (user
        // input: 3e38) would not convert to int64 and goes to the scaled op, whose rule checks
        // each product at run time.
        integral = integral && scale == std::floor(scale) && scale <= 2147483648.0;
        continue;
      }
      // in * scale, checked before the cast: 3e38, or 2^62 * 4, would make it undefined.
      const double out = static_cast<double>(t.shape()[axis].constant()) * scale;
      if (!(out >= 1 && out < 9223372036854775808.0)) {
        return ctx.Error(absl::StrFormat(
            "scales[%d] = %g on dim %d gives output size %g, which is not in [1, 2^63)", axis,
            scale, t.shape()[axis].constant(), std::floor(out)));
      }
      integral = integral && out == std::floor(out);
      size.push_back(static_cast<int64_t>(out));
    }
    if (integral && size.size() == 2) {
      attrs.Set("size", std::move(size));
      return One(ctx.Op("image.resize2d", {x}, attrs));
    }
    if (integral) {  // symbolic dims times integral scales, on the host
      ASSIGN_OR_RETURN(Value * shape, ctx.Op("shape_of", {x}));
      ASSIGN_OR_RETURN(Value * hw, ctx.Op("strided_slice", {shape},
                                          {{"begin", std::vector<int64_t>{2}},
                                           {"end", std::vector<int64_t>{4}}}));
      Tensor factors = Tensor::FromInt64s(
          ctx.DTypeOf(hw), {2},
          {static_cast<int64_t>(sc->GetDouble(2)), static_cast<int64_t>(sc->GetDouble(3))});
      ASSIGN_OR_RETURN(hw, ctx.Op("multiply", {hw, ctx.Const(std::move(factors))}));
      return One(ctx.Op("dyn.image.resize2d", {x, hw}, attrs));
    }
  }

  // ONNX's own inputs: the scaled op's rule and kernel follow its reference.
  if (crop && AbsentOrEmpty(ctx, roi)) return ctx.Error("tf_crop_and_resize needs a roi");
  Value* empty_int = ctx.Const(Tensor::Zeros(DType::kI64, {0}));
  Value* empty_float = ctx.Const(Tensor::Zeros(DType::kF32, {0}));
  Value* size_in = empty_int;
  if (has_sizes) {
    ASSIGN_OR_RETURN(size_in, ctx.Op("strided_slice", {sizes},
                                     {{"begin", std::vector<int64_t>{2}},
                                      {"end", std::vector<int64_t>{4}}}));
  }
  Value* roi_in = crop ? roi : empty_float;
  return One(ctx.Op("dyn.image.resize2d_scaled",
                    {x, size_in, has_scales ? scales : empty_float, roi_in}, attrs));
}

// GridSample-16 as image.grid_sample: 2-D only (GridSample-20's N-D form is past our opsets),
// attribute values as the schema of opset 16 names them. Anything else is refused here, before
// the registry, so the message names the node.
Outs GridSample(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  if (ctx.opset() < 16) return ctx.Error("GridSample is defined from opset 16");
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * grid, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 4) {
    return ctx.Error(absl::StrFormat("X must be 4-D [N, C, H, W], got rank %d", rank));
  }
  ASSIGN_OR_RETURN(int grid_rank, NeedRank(ctx, grid));
  if (grid_rank != 4) {
    return ctx.Error(
        absl::StrFormat("grid must be 4-D [N, H_out, W_out, 2], got rank %d", grid_rank));
  }
  for (const Value* v : {x, grid}) {
    const DType dt = ctx.DTypeOf(v);
    if (dt != DType::kF32 && dt != DType::kF64) {
      return ctx.Unimplemented(
          absl::StrFormat("%s of dtype %s (image.grid_sample samples f32 and f64)",
                          v == x ? "X" : "grid", DTypeName(dt)));
    }
  }
  const std::string mode = StringAttr(n, "mode", "bilinear");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
    return ctx.Error(absl::StrCat("mode must be bilinear, nearest or bicubic, got '", mode, "'"));
  }
  const std::string padding = StringAttr(n, "padding_mode", "zeros");
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    return ctx.Error(
        absl::StrCat("padding_mode must be zeros, border or reflection, got '", padding, "'"));
  }
  const int64_t align_corners = IntAttr(n, "align_corners", 0);
  if (align_corners != 0 && align_corners != 1) {
    return ctx.Error(absl::StrFormat("align_corners must be 0 or 1, got %d", align_corners));
  }
  return One(
      ctx.Op("image.grid_sample", {x, grid},
             {{"mode", mode}, {"padding_mode", padding}, {"align_corners", align_corners == 1}}));
}

// Upsample-9/10 (deprecated since opset 10; X and scales): nearest takes input floor(x /
// scale), linear interpolates at x / scale, which is Resize's asymmetric transformation with
// floor rounding (ONNX's reference Upsample is that Resize).
Outs Upsample(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  if (ctx.model_opset() < 9) return ctx.Unimplemented("Upsample-7 (scales as an attribute)");
  const std::string mode = StringAttr(n, "mode", "nearest");
  if (mode != "nearest" && mode != "linear") {
    return ctx.Error(absl::StrCat("mode must be nearest or linear, got '", mode, "'"));
  }
  onnx::NodeProto resize = n;
  resize.set_op_type("Resize");
  resize.clear_attribute();
  auto set = [&](const std::string& name, const std::string& value) {
    onnx::AttributeProto* a = resize.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  };
  set("mode", mode);
  set("coordinate_transformation_mode", "asymmetric");
  set("nearest_mode", "floor");
  return Resize(ctx, resize, {In(in, 0), nullptr, In(in, 1)});
}

}  // namespace

void AddImageConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"GridSample", GridSample},
      {"Resize", Resize},
      {"Upsample", Upsample},
      {"RoiAlign", RoiAlign},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
