// ONNX converters of the neural-network family: Pad, Conv, ConvTranspose, MaxPool, MaxUnpool,
// GlobalAveragePool, GlobalMaxPool, LayerNormalization, InstanceNormalization,
// MeanVarianceNormalization, LRN, Softmax, LogSoftmax, Hardmax and BatchNormalization. The registry
// side is shape_funcs/nn.cc (MaxUnpool: shape_funcs/unpool.cc); the conventions are in
// onnx_converters.h.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

Outs Pad(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  std::string mode = StringAttr(n, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") {
    return ctx.Unimplemented(absl::StrCat("mode '", mode, "'"));
  }
  if (In(in, 3) != nullptr) return ctx.Unimplemented("the axes input");
  ASSIGN_OR_RETURN(Value * pads, Need(ctx, in, 1));
  Value* cv = In(in, 2);
  auto pv = ConstInts(ctx, pads);
  if (pv) {
    // ONNX [b0, b1, ..., e0, e1, ...] -> registry [b0, e0, b1, e1, ...].
    const size_t r = pv->size() / 2;
    std::vector<int64_t> width;
    for (size_t i = 0; i < r; ++i) {
      width.push_back((*pv)[i]);
      width.push_back((*pv)[i + r]);
    }
    double value = 0;
    if (cv != nullptr) {
      auto c = ctx.ConstValue(cv);
      if (!c) return ctx.Unimplemented("a computed constant_value");
      if (c->num_elements() > 0) value = c->GetDouble(0);
    }
    return One(ctx.Op("nn.pad", {x},
                      {{"pad_width", width}, {"pad_value", value}, {"pad_mode", mode}}));
  }
  // Computed pads: reorder on the host with reshape [2, r] -> transpose -> reshape [-1].
  ASSIGN_OR_RETURN(Value * p2, ctx.Op("reshape", {pads}, {{"newshape", std::vector<int64_t>{2, -1}}}));
  ASSIGN_OR_RETURN(Value * pt, ctx.Op("transpose", {p2}, {{"axes", std::vector<int64_t>{1, 0}}}));
  ASSIGN_OR_RETURN(Value * pw, ctx.Op("reshape", {pt}, {{"newshape", std::vector<int64_t>{-1}}}));
  if (cv == nullptr) cv = ctx.ScalarLike(x, 0.0);
  return One(ctx.Op("dyn.nn.pad", {x, pw, cv}, {{"pad_mode", mode}}));
}

std::vector<int64_t> Ints(const onnx::NodeProto& n, absl::string_view name,
                          std::vector<int64_t> def) {
  auto v = IntsAttr(n, name);
  return v ? *v : def;
}

// The pads of a windowed op over its spatial axes in ONNX order [begin.., end..], auto_pad
// resolved: NOTSET reads `pads` (zeros by default), VALID is zeros, SAME_UPPER / SAME_LOWER pad
// so that out = ceil(in / stride), an odd unit at the end (UPPER) or the start (LOWER). SAME
// needs static spatial dims.
absl::StatusOr<std::vector<int64_t>> WindowPads(ImportContext& ctx, const onnx::NodeProto& n,
                                                Value* x, const std::vector<int64_t>& kernel,
                                                const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& dils) {
  const size_t spatial = kernel.size();
  const std::string auto_pad = StringAttr(n, "auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    std::vector<int64_t> pads = Ints(n, "pads", std::vector<int64_t>(2 * spatial, 0));
    if (pads.size() != 2 * spatial) {
      return ctx.Error(absl::StrFormat("pads has %d values for %d spatial axes", pads.size(), spatial));
    }
    return pads;
  }
  if (auto_pad == "VALID") return std::vector<int64_t>(2 * spatial, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return ctx.Error(absl::StrCat("auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got ", auto_pad));
  }
  const Type t = ctx.TypeOf(x);
  std::vector<int64_t> pads(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    const DimExpr& d = t.shape()[2 + i];
    if (!d.is_constant()) {
      return ctx.Unimplemented(absl::StrCat("auto_pad = ", auto_pad, " on a symbolic spatial dim"));
    }
    if (strides[i] < 1 || dils[i] < 1 || kernel[i] < 1) {
      return ctx.Error("kernel_shape, strides and dilations must be >= 1");
    }
    // In 128 bits: hostile attributes must give an error, not a signed overflow.
    const __int128 in = d.constant(), out = (in + strides[i] - 1) / strides[i];
    const __int128 reach = (out - 1) * strides[i] + static_cast<__int128>(kernel[i] - 1) * dils[i] + 1;
    const __int128 total128 = reach > in ? reach - in : 0;
    if (total128 > std::numeric_limits<int32_t>::max()) {
      return ctx.Error(absl::StrCat("auto_pad = ", auto_pad, " needs more padding than fits"));
    }
    const int64_t total = static_cast<int64_t>(total128);
    const int64_t small = total / 2;
    pads[i] = auto_pad == "SAME_UPPER" ? small : total - small;
    pads[spatial + i] = total - pads[i];
  }
  return pads;
}

// A windowed op's attributes for its 2-D registry op: 1-D gets a unit height (no padding, unit
// stride and dilation there); pads go from ONNX order to (top, left, bottom, right).
struct Window2d {
  std::vector<int64_t> kernel, strides, dils, pads;
};
Window2d To2d(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> dils,
              const std::vector<int64_t>& pads) {
  if (kernel.size() == 2) return {kernel, strides, dils, pads};
  return {{1, kernel[0]}, {1, strides[0]}, {1, dils[0]}, {0, pads[0], 0, pads[1]}};
}

// The spatial rank of a windowed op's input (1 or 2), or Unimplemented naming what it is.
absl::StatusOr<int> SpatialRank(ImportContext& ctx, Value* x, absl::string_view what) {
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int spatial = rank - 2;
  if (spatial != 1 && spatial != 2) {
    return ctx.Unimplemented(absl::StrFormat("%d-D %s (1-D and 2-D are supported)", spatial, what));
  }
  return spatial;
}

Outs Conv(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * w, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int spatial, SpatialRank(ctx, x, "convolution"));
  const Type wt = ctx.TypeOf(w);
  if (!wt.is_tensor() || wt.rank() != spatial + 2) {
    return ctx.Error(absl::StrFormat("weight must have rank %d", spatial + 2));
  }
  std::vector<int64_t> kernel;
  if (auto k = IntsAttr(n, "kernel_shape")) {
    kernel = *k;
  } else {
    for (int i = 0; i < spatial; ++i) {
      const DimExpr& d = wt.shape()[2 + i];
      kernel.push_back(d.is_constant() ? d.constant() : 1);  // only SAME pads read it
    }
  }
  const std::vector<int64_t> ones(spatial, 1);
  const std::vector<int64_t> strides = Ints(n, "strides", ones), dils = Ints(n, "dilations", ones);
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, WindowPads(ctx, n, x, kernel, strides, dils));
  const Window2d win = To2d(kernel, strides, dils, pads);
  if (spatial == 1) {
    const Attrs unit_height{{"axis", int64_t{2}}};
    ASSIGN_OR_RETURN(x, ctx.Op("expand_dims", {x}, unit_height));
    ASSIGN_OR_RETURN(w, ctx.Op("expand_dims", {w}, unit_height));
  }
  Attrs attrs{{"strides", win.strides},
              {"padding", win.pads},
              {"dilation", win.dils},
              {"groups", IntAttr(n, "group", 1)}};
  ASSIGN_OR_RETURN(Value * y, ctx.Op("nn.conv2d", {x, w}, attrs));
  if (spatial == 1) {
    ASSIGN_OR_RETURN(y, ctx.Op("squeeze", {y}, {{"axis", std::vector<int64_t>{2}}}));
  }
  if (Value* b = In(in, 2)) {
    ASSIGN_OR_RETURN(y, ctx.Op("nn.bias_add", {y, b}, {{"axis", int64_t{1}}}));
  }
  return std::vector<Value*>{y};
}

// ---- ConvTranspose ---------------------------------------------------------------------------

// The padding of one spatial axis of a ConvTranspose whose output size is given (output_shape,
// or input * stride under SAME_*): ONNX's total_padding = stride * (in - 1) + output_padding +
// dilation * (k - 1) + 1 - out, split with the odd unit at the end for SAME_UPPER and at the
// start otherwise. A negative total (the output is asked to be longer than the kernels reach)
// cannot be padding; like ONNX Runtime we clamp it to 0 and lengthen the far end instead
// (output_padding), which is what test_convtranspose_output_shape expects (a zero last row).
struct TransposePads {
  int64_t begin = 0, end = 0, extra_output_padding = 0;
};
TransposePads PadsForOutputSize(int64_t total, bool same_upper) {
  TransposePads p;
  if (total < 0) {
    p.extra_output_padding = -total;
    return p;
  }
  p.begin = same_upper ? total / 2 : total - total / 2;
  p.end = total - p.begin;
  return p;
}

// ConvTranspose-11 (current through opset 17) as nn.conv2d_transpose; 1-D as 2-D with a unit
// height (expand_dims / squeeze around it); 3-D is not supported. Explicit pads, auto_pad
// (NOTSET, VALID, SAME_UPPER, SAME_LOWER) and output_shape (which overrides pads) all become
// explicit padding: SAME_* needs only the kernel extent, because its total padding
// output_padding + dilation * (k - 1) + 1 - stride does not depend on the input size (so a
// dynamic input stays dynamic); output_shape needs static input sizes. The bias is an
// nn.bias_add on the channel axis, as for Conv.
Outs ConvTranspose(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * w, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 3) {
    return ctx.Error(absl::StrFormat("X must have rank >= 3 (N, C, spatial...), got %d", rank));
  }
  const int spatial = rank - 2;
  if (spatial > 2) {
    return ctx.Unimplemented(
        absl::StrFormat("%d-D transposed convolution (only 1-D and 2-D are supported)", spatial));
  }
  const int rw = ctx.RankOf(w);
  if (rw >= 0 && rw != rank) {
    return ctx.Error(absl::StrFormat("W must have the rank of X (%d), got %d", rank, rw));
  }
  // Per-spatial-axis attributes, checked for length.
  auto axis_attr = [&](absl::string_view name, int64_t def,
                       int per_axis) -> absl::StatusOr<std::vector<int64_t>> {
    std::vector<int64_t> v = Ints(n, name, std::vector<int64_t>(per_axis * spatial, def));
    if (static_cast<int>(v.size()) != per_axis * spatial) {
      return ctx.Error(absl::StrFormat("%s must have %d values for %d-D input, got %d", name,
                                       per_axis * spatial, spatial, v.size()));
    }
    return v;
  };
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, axis_attr("strides", 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> dilations, axis_attr("dilations", 1, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> output_padding, axis_attr("output_padding", 0, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, axis_attr("pads", 0, 2));
  const std::string auto_pad = StringAttr(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER") {
    return ctx.Error(absl::StrCat("unknown auto_pad '", auto_pad, "'"));
  }
  // The kernel extent: kernel_shape, else W's static spatial dims (needed only to compute pads).
  const Type wt = ctx.TypeOf(w);
  std::vector<std::optional<int64_t>> kernel(spatial);
  for (int i = 0; i < spatial && wt.is_tensor() && wt.rank() == rank; ++i) {
    const DimExpr& d = wt.shape()[2 + i];
    if (d.is_constant()) kernel[i] = d.constant();
  }
  if (auto ks = IntsAttr(n, "kernel_shape")) {
    if (static_cast<int>(ks->size()) != spatial) {
      return ctx.Error(absl::StrFormat("kernel_shape must have %d values, got %d", spatial,
                                       ks->size()));
    }
    for (int i = 0; i < spatial; ++i) {
      if (kernel[i] && *kernel[i] != (*ks)[i]) {
        return ctx.Error(absl::StrFormat("kernel_shape %s does not match W's spatial dims",
                                         absl::StrJoin(*ks, "x")));
      }
      kernel[i] = (*ks)[i];
    }
  }
  std::optional<std::vector<int64_t>> output_shape = IntsAttr(n, "output_shape");
  if (output_shape) {
    // Exporters write the spatial sizes; a full [N, C, spatial...] shape is accepted too.
    if (static_cast<int>(output_shape->size()) == rank) {
      output_shape->erase(output_shape->begin(), output_shape->begin() + 2);
    }
    if (static_cast<int>(output_shape->size()) != spatial) {
      return ctx.Error(absl::StrFormat("output_shape must have %d values, got %d", spatial,
                                       output_shape->size()));
    }
  }
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  if (auto_pad == "VALID") pads.assign(2 * spatial, 0);
  if (output_shape || same) {
    const Type xt = ctx.TypeOf(x);
    for (int i = 0; i < spatial; ++i) {
      if (!kernel[i]) {
        return ctx.Unimplemented("auto_pad SAME_* or output_shape with a kernel size that is "
                                 "not known (give kernel_shape or a constant W)");
      }
      const int64_t reach = output_padding[i] + dilations[i] * (*kernel[i] - 1) + 1;
      int64_t total;
      if (output_shape) {
        const DimExpr& d = xt.shape()[2 + i];
        if (!d.is_constant()) {
          return ctx.Unimplemented(
              "output_shape with a dynamic input size (the padding would be run-time data)");
        }
        total = strides[i] * (d.constant() - 1) + reach - (*output_shape)[i];
      } else {
        total = reach - strides[i];  // output = input * stride
      }
      // ConvTranspose-1 (below opset 11) puts the odd pixel of an odd total on the other side.
      if (ctx.model_opset() < 11 && total > 0 && total % 2 != 0) {
        return ctx.Unimplemented(
            "ConvTranspose-1's output_shape / SAME padding with an odd total padding (its split "
            "differs from ConvTranspose-11's)");
      }
      const TransposePads p = PadsForOutputSize(total, auto_pad == "SAME_UPPER");
      pads[i] = p.begin;
      pads[spatial + i] = p.end;
      output_padding[i] += p.extra_output_padding;
    }
  }
  // ONNX pads are [x1_begin, x2_begin, x1_end, x2_end]: for 2-D exactly the registry's
  // (top, left, bottom, right). 1-D gets a unit height with no padding.
  Attrs attrs;
  if (spatial == 2) {
    attrs = {{"strides", strides},
             {"padding", pads},
             {"output_padding", output_padding},
             {"dilation", dilations}};
  } else {
    attrs = {{"strides", std::vector<int64_t>{1, strides[0]}},
             {"padding", std::vector<int64_t>{0, pads[0], 0, pads[1]}},
             {"output_padding", std::vector<int64_t>{0, output_padding[0]}},
             {"dilation", std::vector<int64_t>{1, dilations[0]}}};
    const Attrs unit_height{{"axis", int64_t{2}}};
    ASSIGN_OR_RETURN(x, ctx.Op("expand_dims", {x}, unit_height));
    ASSIGN_OR_RETURN(w, ctx.Op("expand_dims", {w}, unit_height));
  }
  attrs.Set("groups", IntAttr(n, "group", 1));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("nn.conv2d_transpose", {x, w}, attrs));
  if (spatial == 1) {
    ASSIGN_OR_RETURN(y, ctx.Op("squeeze", {y}, {{"axis", std::vector<int64_t>{2}}}));
  }
  if (Value* b = In(in, 2)) {
    ASSIGN_OR_RETURN(y, ctx.Op("nn.bias_add", {y, b}, {{"axis", int64_t{1}}}));
  }
  return std::vector<Value*>{y};
}

// MaxPool / AveragePool, 1-D (a unit height) and 2-D, every auto_pad. MaxPool's Indices output
// (flat positions in the whole input, what MaxUnpool takes) makes it nn.max_pool2d_with_indices;
// with a unit height the 2-D positions are the 1-D ones.
Outs Pool(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in, bool average) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int spatial, SpatialRank(ctx, x, "pooling"));
  const bool with_indices = !average && n.output_size() > 1 && !n.output(1).empty();
  auto kernel = IntsAttr(n, "kernel_shape");
  if (!kernel || static_cast<int>(kernel->size()) != spatial) {
    return ctx.Error(absl::StrFormat("kernel_shape must have %d values", spatial));
  }
  // storage_order only orders the Indices output.
  const int64_t storage_order = IntAttr(n, "storage_order", 0);
  if (storage_order != 0 && storage_order != 1) {
    return ctx.Error(absl::StrFormat("storage_order must be 0 or 1, got %d", storage_order));
  }
  const std::vector<int64_t> ones(spatial, 1);
  const std::vector<int64_t> strides = Ints(n, "strides", ones), dils = Ints(n, "dilations", ones);
  ASSIGN_OR_RETURN(std::vector<int64_t> pads, WindowPads(ctx, n, x, *kernel, strides, dils));
  const Window2d win = To2d(*kernel, strides, dils, pads);
  if (spatial == 1) {
    ASSIGN_OR_RETURN(x, ctx.Op("expand_dims", {x}, {{"axis", int64_t{2}}}));
  }
  Attrs attrs{{"pool_size", win.kernel},
              {"strides", win.strides},
              {"padding", win.pads},
              {"dilation", win.dils},
              {"ceil_mode", IntAttr(n, "ceil_mode", 0) != 0}};
  if (average) attrs.Set("count_include_pad", IntAttr(n, "count_include_pad", 0) != 0);
  std::vector<Value*> outs;
  if (with_indices) {
    attrs.Set("storage_order", storage_order);
    ASSIGN_OR_RETURN(Node * node, ctx.OpNode("nn.max_pool2d_with_indices", {x}, attrs));
    outs = {node->result(0), node->result(1)};
  } else {
    ASSIGN_OR_RETURN(Value * y, ctx.Op(average ? "nn.avg_pool2d" : "nn.max_pool2d", {x}, attrs));
    outs = {y};
  }
  if (spatial == 1) {
    for (Value*& y : outs) {
      ASSIGN_OR_RETURN(y, ctx.Op("squeeze", {y}, {{"axis", std::vector<int64_t>{2}}}));
    }
  }
  return outs;
}
Outs MaxPool(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  return Pool(ctx, n, in, /*average=*/false);
}
Outs AveragePool(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  return Pool(ctx, n, in, /*average=*/true);
}

// MaxUnpool-11, 2-D: nn.max_unpool2d, or dyn.nn.max_unpool2d when output_shape is computed
// (its values then cross to the host; X and I never do). The window attributes are checked
// here so the message names the node.
Outs MaxUnpool(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * indices, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank != 4) {
    return ctx.Unimplemented(
        absl::StrFormat("X of rank %d (only 2-D unpooling, X [N, C, H, W])", rank));
  }
  const DType it = ctx.DTypeOf(indices);
  if (it != DType::kI64 && it != DType::kI32) {
    return ctx.Error(absl::StrFormat("I must be int64, got %s", DTypeName(it)));
  }
  auto kernel = IntsAttr(n, "kernel_shape");
  if (!kernel || kernel->size() != 2) return ctx.Error("kernel_shape must have 2 values");
  const std::vector<int64_t> strides = Ints(n, "strides", {1, 1});
  const std::vector<int64_t> pads = Ints(n, "pads", {0, 0, 0, 0});
  if (strides.size() != 2) return ctx.Error("strides must have 2 values");
  if (pads.size() != 4) return ctx.Error("pads must have 4 values");
  for (int i = 0; i < 2; ++i) {
    if ((*kernel)[i] <= 0 || strides[i] <= 0) {
      return ctx.Error(absl::StrFormat("kernel_shape and strides must be positive, got %s and %s",
                                       absl::StrJoin(*kernel, ","), absl::StrJoin(strides, ",")));
    }
  }
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p < 0; })) {
    return ctx.Error(
        absl::StrFormat("pads must be non-negative, got %s", absl::StrJoin(pads, ",")));
  }
  Attrs attrs{{"kernel_size", *kernel}, {"strides", strides}, {"padding", pads}};
  Value* output_shape = In(in, 2);
  if (output_shape == nullptr) return One(ctx.Op("nn.max_unpool2d", {x, indices}, attrs));
  if (auto shape = ConstInts(ctx, output_shape)) {
    attrs.Set("output_shape", *shape);
    return One(ctx.Op("nn.max_unpool2d", {x, indices}, attrs));
  }
  return One(ctx.Op("dyn.nn.max_unpool2d", {x, indices, output_shape}, attrs));
}

Outs GlobalAveragePool(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  std::vector<int64_t> axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return One(ctx.Op("mean", {x}, {{"axis", axes}, {"keepdims", true}}));
}

// LayerNormalization-17: normalise over axes [axis, rank); Mean and InvStdDev keep the
// reduced dims as 1, which is the keepdims form of mean.
Outs LayerNormalization(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scale, Need(ctx, in, 1));
  Value* bias = In(in, 2);
  if (IntAttr(n, "stash_type", 1) != 1) return ctx.Unimplemented("stash_type != 1");
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", -1), rank);
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i) axes.push_back(i);
  Attrs red{{"axis", axes}, {"keepdims", true}};
  ASSIGN_OR_RETURN(Value * mu, ctx.Op("mean", {x}, red));
  ASSIGN_OR_RETURN(Value * d, ctx.Op("subtract", {x, mu}));
  ASSIGN_OR_RETURN(Value * d2, ctx.Op("multiply", {d, d}));
  ASSIGN_OR_RETURN(Value * var, ctx.Op("mean", {d2}, red));
  ASSIGN_OR_RETURN(Value * ve, ctx.Op("add", {var, ctx.ScalarLike(x, FloatAttr(n, "epsilon", 1e-5f))}));
  ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {ve}));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("divide", {d, sd}));
  ASSIGN_OR_RETURN(y, ctx.Op("multiply", {y, scale}));
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(y, ctx.Op("add", {y, bias}));
  }
  std::vector<Value*> outs = {y, mu};
  if (n.output_size() > 2 && !n.output(2).empty()) {
    ASSIGN_OR_RETURN(Value * inv, ctx.Op("divide", {ctx.ScalarLike(x, 1.0), sd}));
    outs.push_back(inv);
  }
  return outs;
}

// The axes a Softmax / LogSoftmax / Hardmax normalises over: `axis` alone from opset 13
// (default -1); below, the input coerced to 2-D at `axis` (default 1), i.e. every axis from
// `axis` on.
absl::StatusOr<std::vector<int64_t>> NormalisedAxes(ImportContext& ctx, const onnx::NodeProto& n,
                                                    Value* x) {
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  const int64_t axis = NormAxis(IntAttr(n, "axis", ctx.opset() >= 13 ? -1 : 1), rank);
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  if (ctx.opset() >= 13) return std::vector<int64_t>{axis};
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < rank; ++i) axes.push_back(i);
  return axes;
}

// Softmax: nn.softmax over one axis; Softmax-11 over several trailing axes as e^(x - m) / sum.
Outs Softmax(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalisedAxes(ctx, n, x));
  if (axes.size() == 1) return One(ctx.Op("nn.softmax", {x}, {{"axis", axes[0]}}));
  ASSIGN_OR_RETURN(Value * l, LogSoftmaxOver(ctx, x, axes));
  return One(ctx.Op("exp", {l}));
}

Outs LogSoftmax(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalisedAxes(ctx, n, x));
  return One(LogSoftmaxOver(ctx, x, std::move(axes)));
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere: equal(iota along the axis,
// argmax with keepdims). Below opset 13 over several trailing axes only for static shapes
// (reshaped to 2-D and back).
Outs Hardmax(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalisedAxes(ctx, n, x));
  const Type t = ctx.TypeOf(x);
  std::vector<int64_t> back;  // the shape to restore after a 2-D hardmax
  if (axes.size() > 1) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (!t.shape()[d].is_constant()) {
        return ctx.Unimplemented("Hardmax-11 over several trailing axes of a symbolic shape");
      }
      back.push_back(t.shape()[d].constant());
      int64_t& side = d < axes[0] ? outer : inner;
      if (__builtin_mul_overflow(side, back.back(), &side)) return ctx.Error("input too large");
    }
    ASSIGN_OR_RETURN(x, ctx.Op("reshape", {x}, {{"newshape", std::vector<int64_t>{outer, inner}}}));
    axes = {1};
  }
  const int64_t axis = axes[0];
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  ASSIGN_OR_RETURN(Value * arg, ctx.Op("argmax", {x}, {{"axis", std::vector<int64_t>{axis}},
                                                       {"keepdims", true},
                                                       {"dtype", DType::kI64}}));
  ASSIGN_OR_RETURN(Value * iota, DimIota(ctx, x, axis));
  std::vector<int64_t> column = {-1};  // iota along `axis`, unit dims after it
  for (int64_t d = axis + 1; d < rank; ++d) column.push_back(1);
  ASSIGN_OR_RETURN(iota, ctx.Op("reshape", {iota}, {{"newshape", column}}));
  ASSIGN_OR_RETURN(Value * hit, ctx.Op("equal", {iota, arg}));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("cast", {hit}, {{"dtype", ctx.DTypeOf(x)}}));
  if (back.empty()) return std::vector<Value*>{y};
  return One(ctx.Op("reshape", {y}, {{"newshape", back}}));
}

// [C] -> [C, 1, .., 1] for a rank-`rank` NC.. tensor.
absl::StatusOr<Value*> PerChannel(ImportContext& ctx, Value* v, int rank) {
  std::vector<int64_t> shape = {-1};
  for (int i = 2; i < rank; ++i) shape.push_back(1);
  return ctx.Op("reshape", {v}, {{"newshape", shape}});
}

// InstanceNormalization: per (n, c), (x - mean) / sqrt(var + epsilon) over the spatial axes,
// then scale and B per channel.
Outs InstanceNormalization(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * scale, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * bias, Need(ctx, in, 2));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 3) return ctx.Error(absl::StrCat("input must be [N, C, D1, ..], got rank ", rank));
  std::vector<int64_t> axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  const Attrs red{{"axis", axes}, {"keepdims", true}};
  ASSIGN_OR_RETURN(Value * mu, ctx.Op("mean", {x}, red));
  ASSIGN_OR_RETURN(Value * d, ctx.Op("subtract", {x, mu}));
  ASSIGN_OR_RETURN(Value * d2, ctx.Op("multiply", {d, d}));
  ASSIGN_OR_RETURN(Value * var, ctx.Op("mean", {d2}, red));
  ASSIGN_OR_RETURN(var, ctx.Op("add", {var, ctx.ScalarLike(x, FloatAttr(n, "epsilon", 1e-5f))}));
  ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {var}));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("divide", {d, sd}));
  ASSIGN_OR_RETURN(scale, PerChannel(ctx, scale, rank));
  ASSIGN_OR_RETURN(bias, PerChannel(ctx, bias, rank));
  ASSIGN_OR_RETURN(y, ctx.Op("multiply", {y, scale}));
  return One(ctx.Op("add", {y, bias}));
}

// MeanVarianceNormalization as its function body defines it:
// (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default N, H, W).
Outs MeanVarianceNormalization(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const Attrs red{{"axis", IntsAttr(n, "axes").value_or(std::vector<int64_t>{0, 2, 3})},
                  {"keepdims", true}};
  ASSIGN_OR_RETURN(Value * mu, ctx.Op("mean", {x}, red));
  ASSIGN_OR_RETURN(Value * mu2, ctx.Op("multiply", {mu, mu}));
  ASSIGN_OR_RETURN(Value * x2, ctx.Op("multiply", {x, x}));
  ASSIGN_OR_RETURN(Value * ex2, ctx.Op("mean", {x2}, red));
  ASSIGN_OR_RETURN(Value * var, ctx.Op("subtract", {ex2, mu2}));
  ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {var}));
  ASSIGN_OR_RETURN(sd, ctx.Op("add", {sd, ctx.ScalarLike(x, 1e-9)}));
  ASSIGN_OR_RETURN(Value * d, ctx.Op("subtract", {x, mu}));
  return One(ctx.Op("divide", {d, sd}));
}

// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta. The window
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] is a sum of `size` channel slices of
// x^2 padded with zeros (C must be static).
Outs Lrn(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  const int64_t size = IntAttr(n, "size", 0);
  if (size < 1) return ctx.Error(absl::StrCat("size must be >= 1, got ", size));
  const Type t = ctx.TypeOf(x);
  if (!t.is_tensor() || t.rank() < 3 || !t.shape()[1].is_constant()) {
    return ctx.Unimplemented("LRN needs an input [N, C, ..] with a static C");
  }
  const int rank = t.rank();
  const int64_t c = t.shape()[1].constant();
  // Window positions beyond the channels add zeros: at most C - 1 on either side matter.
  const int64_t before = std::min((size - 1) / 2, std::max<int64_t>(c - 1, 0));
  const int64_t after = std::min(size - 1 - (size - 1) / 2, std::max<int64_t>(c - 1, 0));
  ASSIGN_OR_RETURN(Value * sq, ctx.Op("multiply", {x, x}));
  std::vector<int64_t> pads(2 * rank, 0);  // [before0, after0, before1, ...]
  pads[2] = before;
  pads[3] = after;
  ASSIGN_OR_RETURN(Value * padded, ctx.Op("nn.pad", {sq}, {{"pad_width", pads}}));
  Value* sum = nullptr;
  for (int64_t k = 0; k <= before + after; ++k) {
    ASSIGN_OR_RETURN(Value * slice,
                     ctx.Op("strided_slice", {padded},
                            {{"begin", std::vector<int64_t>{k}}, {"end", std::vector<int64_t>{k + c}},
                             {"axes", std::vector<int64_t>{1}}}));
    if (sum == nullptr) {
      sum = slice;
    } else {
      ASSIGN_OR_RETURN(sum, ctx.Op("add", {sum, slice}));
    }
  }
  const double alpha = FloatAttr(n, "alpha", 1e-4f), beta = FloatAttr(n, "beta", 0.75f);
  ASSIGN_OR_RETURN(Value * q, ctx.Op("multiply", {sum, ctx.ScalarLike(x, alpha / size)}));
  ASSIGN_OR_RETURN(q, ctx.Op("add", {q, ctx.ScalarLike(x, FloatAttr(n, "bias", 1.0f))}));
  ASSIGN_OR_RETURN(q, ctx.Op("power", {q, ctx.ScalarLike(x, beta)}));
  return One(ctx.Op("divide", {x, q}));
}

Outs GlobalMaxPool(ImportContext& ctx, const onnx::NodeProto&, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  std::vector<int64_t> axes;
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return One(ctx.Op("max", {x}, {{"axis", axes}, {"keepdims", true}}));
}

// Inference BatchNormalization: y = x * a + b with a = scale / sqrt(var + eps) and
// b = bias - mean * a, folded here into [C, 1, ..., 1] constants.
// BatchNormalization-14/15 in training mode: normalized with the batch's own mean and (biased)
// variance over every axis but 1, and the running statistics updated as
// running * momentum + batch * (1 - momentum), ONNX's reference formulas.
Outs BatchNormalizationTraining(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (rank < 2) return ctx.Error(absl::StrFormat("X must have rank >= 2, got %d", rank));
  Value* p[4];
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(p[i], Need(ctx, in, i + 1));
    if (ctx.RankOf(p[i]) != 1) return ctx.Error("scale, B, input_mean and input_var must be 1-D");
  }
  std::vector<int64_t> axes = {0};
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  const Attrs over{{"axis", axes}, {"keepdims", true}};
  ASSIGN_OR_RETURN(Value * mean, ctx.Op("mean", {x}, over));
  ASSIGN_OR_RETURN(Value * centred, ctx.Op("subtract", {x, mean}));
  ASSIGN_OR_RETURN(Value * sq, ctx.Op("multiply", {centred, centred}));
  ASSIGN_OR_RETURN(Value * var, ctx.Op("mean", {sq}, over));
  ASSIGN_OR_RETURN(Value * ve, ctx.Op("add", {var, ctx.ScalarLike(x, FloatAttr(n, "epsilon", 1e-5f))}));
  ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {ve}));
  ASSIGN_OR_RETURN(Value * normed, ctx.Op("divide", {centred, sd}));
  std::vector<int64_t> cshape = {-1};
  for (int i = 2; i < rank; ++i) cshape.push_back(1);
  ASSIGN_OR_RETURN(Value * scale, ctx.Op("reshape", {p[0]}, {{"newshape", cshape}}));
  ASSIGN_OR_RETURN(Value * bias, ctx.Op("reshape", {p[1]}, {{"newshape", cshape}}));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {normed, scale}));
  ASSIGN_OR_RETURN(y, ctx.Op("add", {y, bias}));
  const double momentum = FloatAttr(n, "momentum", 0.9f);
  auto running = [&](Value* old, Value* batch) -> absl::StatusOr<Value*> {
    ASSIGN_OR_RETURN(Value * flat, ctx.Op("reshape", {batch}, {{"newshape", std::vector<int64_t>{-1}}}));
    ASSIGN_OR_RETURN(Value * kept, ctx.Op("multiply", {old, ctx.ScalarLike(old, momentum)}));
    ASSIGN_OR_RETURN(Value * added, ctx.Op("multiply", {flat, ctx.ScalarLike(flat, 1 - momentum)}));
    return ctx.Op("add", {kept, added});
  };
  ASSIGN_OR_RETURN(Value * running_mean, running(p[2], mean));
  ASSIGN_OR_RETURN(Value * running_var, running(p[3], var));
  return std::vector<Value*>{y, running_mean, running_var};
}

Outs BatchNormalization(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  if (IntAttr(n, "training_mode", 0) != 0) return BatchNormalizationTraining(ctx, n, in);
  std::optional<Tensor> p[4];
  Value* pv[4];
  bool all_const = true;
  for (int i = 0; i < 4; ++i) {
    ASSIGN_OR_RETURN(pv[i], Need(ctx, in, i + 1));
    p[i] = ctx.ConstValue(pv[i]);
    all_const = all_const && p[i].has_value();
  }
  ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
  if (!all_const) {
    // Computed statistics: the same formula as ops, reshaped to [C, 1, ..., 1].
    std::vector<int64_t> cshape = {-1};
    for (int i = 2; i < rank; ++i) cshape.push_back(1);
    ASSIGN_OR_RETURN(Value * ve,
                     ctx.Op("add", {pv[3], ctx.ScalarLike(pv[3], FloatAttr(n, "epsilon", 1e-5f))}));
    ASSIGN_OR_RETURN(Value * sd, ctx.Op("sqrt", {ve}));
    ASSIGN_OR_RETURN(Value * a, ctx.Op("divide", {pv[0], sd}));
    ASSIGN_OR_RETURN(Value * ma, ctx.Op("multiply", {pv[2], a}));
    ASSIGN_OR_RETURN(Value * b, ctx.Op("subtract", {pv[1], ma}));
    ASSIGN_OR_RETURN(Value * a3, ctx.Op("reshape", {a}, {{"newshape", cshape}}));
    ASSIGN_OR_RETURN(Value * b3, ctx.Op("reshape", {b}, {{"newshape", cshape}}));
    ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, a3}));
    return One(ctx.Op("add", {y, b3}));
  }
  const int64_t c = p[0]->num_elements();
  const double eps = FloatAttr(n, "epsilon", 1e-5f);
  std::vector<int64_t> shape = {c};
  for (int i = 2; i < rank; ++i) shape.push_back(1);
  std::vector<double> a(c), b(c);
  for (int64_t i = 0; i < c; ++i) {
    if (p[1]->num_elements() != c || p[2]->num_elements() != c || p[3]->num_elements() != c) {
      return ctx.Error("scale, bias, mean and var differ in length");
    }
    a[i] = p[0]->GetDouble(i) / std::sqrt(p[3]->GetDouble(i) + eps);
    b[i] = p[1]->GetDouble(i) - p[2]->GetDouble(i) * a[i];
  }
  const DType dt = ctx.DTypeOf(x);
  ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, ctx.Const(Tensor::FromDoubles(dt, shape, a))}));
  return One(ctx.Op("add", {y, ctx.Const(Tensor::FromDoubles(dt, shape, b))}));
}

}  // namespace

void AddNnConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"AveragePool", AveragePool},
      {"BatchNormalization", BatchNormalization},
      {"Conv", Conv},
      {"ConvTranspose", ConvTranspose},
      {"GlobalAveragePool", GlobalAveragePool},
      {"GlobalMaxPool", GlobalMaxPool},
      {"Hardmax", Hardmax},
      {"InstanceNormalization", InstanceNormalization},
      {"LRN", Lrn},
      {"LogSoftmax", LogSoftmax},
      {"LayerNormalization", LayerNormalization},
      {"MaxPool", MaxPool},
      {"MaxUnpool", MaxUnpool},
      {"MeanVarianceNormalization", MeanVarianceNormalization},
      {"Pad", Pad},
      {"Softmax", Softmax},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
