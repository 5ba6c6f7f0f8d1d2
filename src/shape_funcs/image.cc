// Image ops: image.resize2d and dyn.image.resize2d.
//
// Masks: the resized image is `shape` (only N and C, or N and C in NHWC, reach the output);
// the run-time output size of dyn.image.resize2d is `value`. TVM declared dyn.image.resize2d
// data dependent as a whole, copying the image to the host to learn two integers.
//
// Coordinate transformation modes (output coordinate x, input size in, output size out,
// scale = in / out): half_pixel (x + 0.5) * scale - 0.5; align_corners x * (in - 1) / (out - 1);
// asymmetric x * scale; pytorch_half_pixel like half_pixel but 0 when out == 1;
// tf_half_pixel_for_nn (x + 0.5) * scale. Nearest neighbour rounds with `rounding_method`;
// the default "" means "round" under align_corners and "floor" otherwise (TVM's choice).
// Linear interpolates between floor(c) and floor(c) + 1 with indices clamped into the image.
// Cubic is accepted by the shape rule; the reference kernel implements nearest and linear.
#include "shape_funcs/image.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

absl::Status CheckOneOf(const ShapeContext& ctx, absl::string_view attr,
                        std::initializer_list<absl::string_view> allowed) {
  const std::string& v = ctx.attrs().GetString(attr);
  for (absl::string_view a : allowed) {
    if (v == a) return absl::OkStatus();
  }
  return ctx.Error(absl::StrFormat("unsupported %s '%s'", attr, v));
}

// Output type for `size` (nullopt: unknown now).
Result ResizeType(ShapeContext& ctx, std::optional<std::vector<DimExpr>> size) {
  RETURN_IF_ERROR(CheckOneOf(ctx, "layout", {"NCHW", "NHWC"}));
  RETURN_IF_ERROR(CheckOneOf(ctx, "method", {"nearest_neighbor", "linear", "cubic"}));
  RETURN_IF_ERROR(CheckOneOf(
      ctx, "coordinate_transformation_mode",
      {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"}));
  RETURN_IF_ERROR(
      CheckOneOf(ctx, "rounding_method",
                 {"", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}));
  if (ctx.rank(0) != 4) {
    return ctx.Error(absl::StrFormat("data must have rank 4, got rank %d", ctx.rank(0)));
  }
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  std::vector<DimExpr> hw = {DimExpr::Unknown(), DimExpr::Unknown()};
  if (size) {
    if (size->size() != 2) {
      return ctx.Error(absl::StrFormat("size must have 2 values, got %d", size->size()));
    }
    for (const DimExpr& d : *size) {
      if (d.is_constant() && d.constant() <= 0) {
        return ctx.Error(absl::StrFormat("size must be positive, got %d", d.constant()));
      }
    }
    hw = *size;
  }
  const bool nchw = ctx.attrs().GetString("layout") == "NCHW";
  std::vector<DimExpr> out = nchw ? std::vector<DimExpr>{in[0], in[1], hw[0], hw[1]}
                                  : std::vector<DimExpr>{in[0], hw[0], hw[1], in[3]};
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

Result ResizeRule(ShapeContext& ctx) {
  return ResizeType(ctx, shape_rules::ToDims(ctx.attrs().GetIntList("size")));
}

Result DynResizeRule(ShapeContext& ctx) {
  if (ctx.rank(1) != 1) {
    return ctx.Error(absl::StrFormat("size must be 1-D, got rank %d", ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto size, shape_rules::IntInput(ctx, 1, "size"));
  return ResizeType(ctx, std::move(size));
}

double SourceCoord(double x, int64_t in, int64_t out, const std::string& mode) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  if (mode == "align_corners") {
    return out > 1 ? x * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  }
  if (mode == "asymmetric") return x * scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) * scale;
  if (mode == "pytorch_half_pixel" && out == 1) return 0.0;
  return (x + 0.5) * scale - 0.5;
}

int64_t Nearest(double c, const std::string& rounding) {
  if (rounding == "round") return static_cast<int64_t>(std::round(c));
  if (rounding == "round_prefer_floor") return static_cast<int64_t>(std::ceil(c - 0.5));
  if (rounding == "round_prefer_ceil") return static_cast<int64_t>(std::floor(c + 0.5));
  if (rounding == "ceil") return static_cast<int64_t>(std::ceil(c));
  return static_cast<int64_t>(std::floor(c));
}

int64_t ClampIndex(int64_t i, int64_t n) { return std::min(std::max<int64_t>(i, 0), n - 1); }

// Per-output-coordinate sampling along one axis: two taps and the weight of the second.
struct Taps {
  int64_t lo, hi;
  double w;
};

std::vector<Taps> AxisTaps(int64_t in, int64_t out, const Attrs& attrs) {
  const std::string& mode = attrs.GetString("coordinate_transformation_mode");
  const bool nearest = attrs.GetString("method") == "nearest_neighbor";
  std::string rounding = attrs.GetString("rounding_method");
  if (rounding.empty()) rounding = mode == "align_corners" ? "round" : "floor";
  std::vector<Taps> taps;
  for (int64_t x = 0; x < out; ++x) {
    const double c = SourceCoord(static_cast<double>(x), in, out, mode);
    if (nearest) {
      const int64_t i = ClampIndex(Nearest(c, rounding), in);
      taps.push_back({i, i, 0.0});
    } else {
      const double f = std::floor(c);
      const int64_t i = static_cast<int64_t>(f);
      taps.push_back({ClampIndex(i, in), ClampIndex(i + 1, in), c - f});
    }
  }
  return taps;
}

KernelResult ResizeKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                          absl::Span<const Type> out_t) {
  if (attrs.GetString("method") == "cubic") {
    return absl::UnimplementedError("image.resize2d: the reference kernel has no cubic method");
  }
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const bool nchw = attrs.GetString("layout") == "NCHW";
  const auto& xs = in[0].shape();
  const auto& os = out.shape();
  const int hd = nchw ? 2 : 1, wd = hd + 1, cd = nchw ? 1 : 3;
  const std::vector<Taps> ty = AxisTaps(xs[hd], os[hd], attrs);
  const std::vector<Taps> tx = AxisTaps(xs[wd], os[wd], attrs);
  const std::vector<int64_t> st = shape_rules::Strides(xs);
  std::vector<int64_t> idx(4, 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const Taps& y = ty[idx[hd]];
    const Taps& x = tx[idx[wd]];
    const int64_t base = idx[0] * st[0] + idx[cd] * st[cd];
    auto at = [&](int64_t r, int64_t c) { return in[0].GetDouble(base + r * st[hd] + c * st[wd]); };
    const double top = at(y.lo, x.lo) * (1 - x.w) + at(y.lo, x.hi) * x.w;
    const double bottom = at(y.hi, x.lo) * (1 - x.w) + at(y.hi, x.hi) * x.w;
    out.SetDouble(i, top * (1 - y.w) + bottom * y.w);
    shape_rules::NextIndex(idx, os);
  }
  return std::vector<Tensor>{std::move(out)};
}

void ResizeAttrs(OpDefBuilder& op) {
  op.Attr("layout", AttrType::kString, std::string("NCHW"))
      .Attr("method", AttrType::kString, std::string("linear"))
      .Attr("coordinate_transformation_mode", AttrType::kString, std::string("half_pixel"))
      .Attr("rounding_method", AttrType::kString, std::string(""))
      .Attr("cubic_alpha", AttrType::kFloat, -0.5)
      .Attr("cubic_exclude", AttrType::kInt, int64_t{0})
      .Attr("extrapolation_value", AttrType::kFloat, 0.0);
}

}  // namespace

void RegisterImageOps(OpRegistry::Builder& b) {
  OpDefBuilder resize = b.Register("image.resize2d");
  resize.Input("data", InputDep::kShape)
      .Attr("size", AttrType::kIntList)
      .Pattern(FusionPattern::kInjective)
      .Doc("resizes the spatial dims to size = [height, width]")
      .Rule(ResizeRule)
      .Reference(ResizeKernel);
  ResizeAttrs(resize);
  OpDefBuilder dyn = b.Register("dyn.image.resize2d");
  dyn.Input("data", InputDep::kShape)
      .Input("size", InputDep::kValue)
      .Pattern(FusionPattern::kInjective)
      .Doc("image.resize2d to a run-time size [height, width]")
      .Rule(DynResizeRule)
      .Reference(ResizeKernel);
  ResizeAttrs(dyn);
}

}  // namespace hetpass
