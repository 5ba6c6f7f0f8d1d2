// ONNX converters of the image family: RoiAlign (image.roi_align), Resize (image.resize2d,
// or dyn.image.resize2d for computed sizes) and GridSample (image.grid_sample). The registry
// side is shape_funcs/image.cc; the conventions are in onnx_converters.h.
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

Outs Resize(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 4) return ctx.Unimplemented("only 4-D (NCHW) inputs");
  std::string mode = StringAttr(n, "mode", "nearest");
  if (mode == "nearest") mode = "nearest_neighbor";
  // The registry models cubic resize's shape, but its kernel has no cubic method yet.
  if (mode == "cubic") return ctx.Unimplemented("mode 'cubic' (no cubic resize kernel yet)");
  std::string nearest = StringAttr(n, "nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil" || nearest == "floor" ||
      nearest == "ceil") {
    // same names in the registry
  } else {
    return ctx.Unimplemented(absl::StrCat("nearest_mode '", nearest, "'"));
  }
  const std::string ctm = StringAttr(n, "coordinate_transformation_mode", "half_pixel");
  if (ctm == "tf_crop_and_resize") return ctx.Unimplemented("tf_crop_and_resize (roi)");
  Attrs attrs{{"method", mode},
              {"coordinate_transformation_mode", ctm},
              {"rounding_method", mode == "nearest_neighbor" ? nearest : std::string()},
              {"cubic_alpha", static_cast<double>(FloatAttr(n, "cubic_coeff_a", -0.75f))},
              {"cubic_exclude", IntAttr(n, "exclude_outside", 0)},
              {"extrapolation_value", static_cast<double>(FloatAttr(n, "extrapolation_value", 0))}};
  Value* scales = In(in, 2);
  Value* sizes = In(in, 3);
  if (sizes != nullptr && ctx.RankOf(sizes) == 1) {
    if (auto s = ConstInts(ctx, sizes)) {
      if (s->size() != 4) return ctx.Error("sizes must have 4 elements");
      attrs.Set("size", std::vector<int64_t>{(*s)[2], (*s)[3]});
      return One(ctx.Op("image.resize2d", {x}, attrs));
    }
    ASSIGN_OR_RETURN(Value * hw, ctx.Op("strided_slice", {sizes},
                                        {{"begin", std::vector<int64_t>{2}},
                                         {"end", std::vector<int64_t>{4}}}));
    return One(ctx.Op("dyn.image.resize2d", {x, hw}, attrs));
  }
  if (scales == nullptr) return ctx.Error("needs scales or sizes");
  auto sc = ctx.ConstValue(scales);
  if (!sc) return ctx.Unimplemented("computed scales");
  if (sc->num_elements() != 4 || sc->GetDouble(0) != 1.0 || sc->GetDouble(1) != 1.0) {
    return ctx.Unimplemented("scales must be [1, 1, sh, sw]");
  }
  const Type t = ctx.TypeOf(x);
  if (!t.shape()[2].is_constant() || !t.shape()[3].is_constant()) {
    return ctx.Unimplemented("scales on symbolic spatial dims");
  }
  // floor(dim * scale), checked before the cast: a NaN or a value outside int64 (scales are user
  // input; 3e38, or 2^62 * 4) would make the cast undefined.
  std::vector<int64_t> size;
  for (int axis : {2, 3}) {
    const double scale = sc->GetDouble(axis);
    const double out = std::floor(static_cast<double>(t.shape()[axis].constant()) * scale);
    // 2^63 is exact in double; everything in [0, 2^63) converts to int64.
    if (!(out >= 0 && out < 9223372036854775808.0)) {
      return ctx.Error(absl::StrFormat(
          "scales[%d] = %g on dim %d gives output size %g, which is not in [0, 2^63)", axis, scale,
          t.shape()[axis].constant(), out));
    }
    size.push_back(static_cast<int64_t>(out));
  }
  attrs.Set("size", std::move(size));
  return One(ctx.Op("image.resize2d", {x}, attrs));
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

}  // namespace

void AddImageConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"GridSample", GridSample},
      {"Resize", Resize},
      {"RoiAlign", RoiAlign},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
