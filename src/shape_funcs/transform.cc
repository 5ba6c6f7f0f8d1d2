// Shape transformations: reshape, dyn.reshape, transpose, expand_dims, squeeze, dyn.squeeze,
// dyn.unsqueeze, concatenate, broadcast_to, dyn.broadcast_to, tile, dyn.tile and
// layout_transform.
//
// Masks: the tensor being transformed is always `shape` (its contents never decide the output
// shape). The target of the dyn.* variants (newshape, shape, reps, axes) is `value`: the shape
// function needs its values; at compile time, when the values are not known, the rule still
// fixes the output rank from how many values there are (ShapeContext::NumValues, metadata that
// travels with the values). TVM marked these ops data dependent as a whole, which also copied
// the reshaped/broadcast/tiled tensor.
//
// Symbolic values flow through reshape, squeeze, expand_dims and concatenate of integer
// tensors, so `concatenate(take(shape_of(x), [0]), [-1])` used as a reshape target still gives a
// symbolic output type.
//
// reshape follows Relay for 0 (copy the input dim at that position) and -1 (infer one dim);
// Relay's -2/-3/-4 are rejected. The inferred dim cancels common factors first, so reshaping
// f32[n, 4, 8] to [0, -1] gives f32[n, 32] and to [-1] gives f32[n*32]. In dyn.reshape a
// symbolic target entry is taken as a dim: only the constants 0 and -1 are special (a symbol
// that is 0 at run time would copy the input dim there; shape subgraphs do not produce those).
//
// layout_transform converts an image tensor between the channel layouts NCHW and NCHW{b}c
// (passes/shape_funcs/channel_layout.h), any pair of them, through the logical [N, C, H, W]
// element: out[layout_d(n, c, h, w)] = in[layout_s(n, c, h, w)]. The channels must split into
// whole blocks of the destination (C divisible by d; with symbolic C the type says C floordiv
// d and the shape function checks). Padding partial blocks would make the transform lossy in
// the other direction, so it is an error instead.
//
// squeeze with no axes removes the dims that are statically 1. A symbolic dim is never
// squeezed, even if it is 1 at run time: whether it is 1 is a question about the shape the
// type cannot answer, and squeezing would change the rank. (The shape function, seeing only
// constants, would squeeze a run-time 1, so importers should pass explicit axes when dims are
// symbolic; the mask-verification test skips the symbolic comparison for this case.)
//
// dyn.squeeze and dyn.unsqueeze take their axes as a run-time 1-D input (ONNX Squeeze-13 and
// Unsqueeze-13 with computed axes). The output rank is static all the same: rank - len(axes) and
// rank + len(axes), where len(axes) is the static length of the axes input (metadata that
// travels with the values). Which dims are removed or inserted depends on the values, so with
// the values unknown every output dim is `?`; with them known (constants, symbolic values, or
// the shape function at run time) the rule gives the exact dims and checks the axes: in range,
// no duplicates, and a squeezed dim must be 1 (a symbolic dim passes type inference; the shape
// function sees its constant). Unlike squeeze's empty `axis` attribute, an empty axes input
// squeezes nothing: the rank rule says so, and a rank that depended on which dims are 1 at run
// time could not be static.
#include "shape_funcs/transform.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/shape_funcs/channel_layout.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"
#include "shape_funcs/symbolic_values.h"

namespace hetpass {
namespace {

using shape_rules::One;
using shape_rules::ProvablyDifferent;
using shape_rules::ToVec;
using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;
using SymValues = std::optional<std::vector<std::vector<DimExpr>>>;

// ---- reshape / dyn.reshape -----------------------------------------------------------------

// total / known, after cancelling the symbolic factors both sides share. The constant parts are
// user input (dims, newshape values): a product that overflows int64 is an error, not a wrap.
absl::StatusOr<DimExpr> InferMinusOne(const ShapeContext& ctx, absl::Span<const DimExpr> in,
                                      std::vector<DimExpr> known) {
  std::vector<DimExpr> rest;
  int64_t in_c = 1, known_c = 1;
  for (const DimExpr& d : in) {
    if (d.is_unknown()) return DimExpr::Unknown();
    auto it = std::find(known.begin(), known.end(), d);
    if (!d.is_constant() && it != known.end()) {
      known.erase(it);
    } else if (d.is_constant()) {
      if (__builtin_mul_overflow(in_c, d.constant(), &in_c)) {
        return ctx.Error(
            absl::StrFormat("cannot infer -1: the element count of input shape %s overflows int64",
                            ShapeToString(ToVec(in))));
      }
    } else {
      rest.push_back(d);
    }
  }
  std::vector<DimExpr> known_sym;
  for (const DimExpr& k : known) {
    if (k.is_constant()) {
      if (__builtin_mul_overflow(known_c, k.constant(), &known_c)) {
        return ctx.Error(absl::StrFormat(
            "cannot infer -1: the product of the known new dims overflows int64 at dim %d",
            k.constant()));
      }
    } else {
      known_sym.push_back(k);
    }
  }
  const DimExpr num = shape_rules::Product(rest) * in_c;
  const DimExpr den = shape_rules::Product(known_sym) * known_c;
  return DimExpr::FloorDiv(num, den);
}

// allowzero (ONNX Reshape-14's, dyn.reshape's attribute): a 0 is a zero dim, not a copy.
absl::StatusOr<std::vector<DimExpr>> ReshapeDims(const ShapeContext& ctx,
                                                 absl::Span<const DimExpr> in,
                                                 absl::Span<const DimExpr> newshape,
                                                 bool allowzero = false) {
  std::vector<DimExpr> out;
  std::vector<DimExpr> known;
  int infer_at = -1;
  for (size_t i = 0; i < newshape.size(); ++i) {
    const DimExpr& v = newshape[i];
    if (v.is_constant() && v.constant() == 0 && !allowzero) {
      if (i >= in.size()) {
        return ctx.Error(
            absl::StrFormat("newshape[%d] = 0 copies a dim the rank-%d input lacks", i, in.size()));
      }
      out.push_back(in[i]);
    } else if (v.is_constant() && v.constant() == -1) {
      if (infer_at >= 0) return ctx.Error("newshape has more than one -1");
      infer_at = static_cast<int>(i);
      out.push_back(DimExpr::Unknown());
      continue;
    } else if (v.is_constant() && v.constant() < 0) {
      return ctx.Error(
          absl::StrFormat("newshape value %d is not supported (only 0 and -1 are "
                          "special)",
                          v.constant()));
    } else {
      out.push_back(v);
    }
    known.push_back(out.back());
  }
  const DimExpr total = shape_rules::Product(in);
  const DimExpr known_total = shape_rules::Product(known);
  if (infer_at >= 0) {
    if (total.is_constant() && known_total.is_constant()) {
      if (known_total.constant() == 0 || total.constant() % known_total.constant() != 0) {
        return ctx.Error(absl::StrFormat("cannot infer -1: %d elements do not split into %s",
                                         total.constant(), ShapeToString(out)));
      }
    }
    ASSIGN_OR_RETURN(out[infer_at], InferMinusOne(ctx, in, known));
  } else if (shape_rules::AllConstant(in) && shape_rules::AllConstant(known)) {
    // Constant counts must agree; a product that overflows int64 (Product gives `?`) cannot
    // match one that fits, and two that overflow are no tensor.
    auto count = [](const DimExpr& n) {
      return n.is_constant() ? absl::StrCat(n.constant()) : std::string("more than 2^63 - 1");
    };
    if (!total.is_constant() || !known_total.is_constant() ||
        total.constant() != known_total.constant()) {
      return ctx.Error(absl::StrFormat("element count mismatch: %s has %s elements, %s has %s",
                                       ShapeToString(ToVec(in)), count(total), ShapeToString(out),
                                       count(known_total)));
    }
  }
  return out;
}

Result ReshapeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  const std::vector<DimExpr> ns = shape_rules::ToDims(ctx.attrs().GetIntList("newshape"));
  ASSIGN_OR_RETURN(auto out, ReshapeDims(ctx, in, ns));
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

Result DynReshapeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  if (ctx.rank(1) != 1) return ctx.Error("newshape must be 1-D");
  ASSIGN_OR_RETURN(auto ns, shape_rules::IntInput(ctx, 1, "newshape"));
  if (!ns) {
    ASSIGN_OR_RETURN(int64_t len, shape_rules::StaticLength(ctx, 1, "newshape"));
    return One(Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(len)));
  }
  ASSIGN_OR_RETURN(auto out, ReshapeDims(ctx, in, *ns, ctx.attrs().GetBool("allowzero")));
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult ReshapeKernel(absl::Span<const Tensor> in, const Attrs&,
                           absl::Span<const Type> out_t) {
  return std::vector<Tensor>{in[0].Reshaped(shape_rules::ConcreteShape(out_t[0]))};
}

// ---- transpose -----------------------------------------------------------------------------

absl::StatusOr<std::vector<int64_t>> Permutation(const ShapeContext& ctx, int64_t rank) {
  const std::vector<int64_t>& axes = ctx.attrs().GetIntList("axes");
  if (axes.empty()) {
    std::vector<int64_t> rev(rank);
    for (int64_t i = 0; i < rank; ++i) rev[i] = rank - 1 - i;
    return rev;
  }
  if (static_cast<int64_t>(axes.size()) != rank) {
    return ctx.Error(absl::StrFormat("axes [%s] is not a permutation of rank %d",
                                     absl::StrJoin(axes, ", "), rank));
  }
  return shape_rules::NormalizeAxes(axes, rank, ctx);
}

Result TransposeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto perm, Permutation(ctx, in.size()));
  std::vector<DimExpr> out;
  for (int64_t p : perm) out.push_back(in[p]);
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

// The contents of a transposed small integer tensor with a static shape: torch's pads vector is
// built as reshape [-1, 2] -> flip -> transpose -> reshape [-1], and following it lets Pad see
// the computed pads instead of giving every output dim a fresh symbol.
std::optional<std::vector<std::vector<DimExpr>>> TransposeSymbolic(ShapeContext& ctx) {
  const std::optional<IntTable> in = StaticIntTable(ctx, 0);
  if (!in) return std::nullopt;
  auto perm = Permutation(ctx, in->shape.size());
  if (!perm.ok()) return std::nullopt;
  std::vector<int64_t> out_shape;
  for (int64_t p : *perm) out_shape.push_back(in->shape[p]);
  const std::vector<int64_t> strides = shape_rules::Strides(in->shape);
  std::vector<DimExpr> out;
  out.reserve(in->values.size());
  std::vector<int64_t> idx(out_shape.size(), 0);
  for (size_t i = 0; i < in->values.size(); ++i) {
    int64_t src = 0;
    for (size_t a = 0; a < idx.size(); ++a) src += idx[a] * strides[(*perm)[a]];
    out.push_back(in->values[src]);
    shape_rules::NextIndex(idx, out_shape);
  }
  return std::vector<std::vector<DimExpr>>{std::move(out)};
}

KernelResult TransposeKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                             absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const int64_t rank = in[0].rank();
  std::vector<int64_t> perm = attrs.GetIntList("axes");
  if (perm.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  for (int64_t& p : perm) p = p < 0 ? p + rank : p;
  const std::vector<int64_t> src_strides = shape_rules::Strides(in[0].shape());
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t src = 0;
    for (int64_t a = 0; a < rank; ++a) src += idx[a] * src_strides[perm[a]];
    shape_rules::CopyElements(in[0], src, out, i);
    shape_rules::NextIndex(idx, out.shape());
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- layout_transform ----------------------------------------------------------------------

struct LayoutPair {
  int64_t src = 0, dst = 0;  // blocks; 0 = NCHW
};

absl::StatusOr<LayoutPair> ReadLayouts(const ShapeContext& ctx) {
  LayoutPair p;
  for (auto [name, out] : {std::pair<const char*, int64_t*>{"src_layout", &p.src},
                           std::pair<const char*, int64_t*>{"dst_layout", &p.dst}}) {
    const std::string& v = ctx.attrs().GetString(name);
    std::optional<int64_t> block = ParseChannelLayout(v);
    if (!block) {
      return ctx.Error(
          absl::StrFormat("%s '%s' is not a channel layout (NCHW or NCHW<b>c, e.g. "
                          "NCHW16c)",
                          name, v));
    }
    *out = *block;
  }
  return p;
}

Result LayoutTransformRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(const LayoutPair p, ReadLayouts(ctx));
  const int rank = p.src == 0 ? 4 : 5;
  if (ctx.rank(0) != rank) {
    return ctx.Error(absl::StrFormat("data in %s must have rank %d, got rank %d",
                                     ChannelLayoutName(p.src), rank, ctx.rank(0)));
  }
  ASSIGN_OR_RETURN(auto x, ctx.Shape(0));
  if (p.src > 0 && ProvablyDifferent(x[4], p.src)) {
    return ctx.Error(absl::StrFormat("data %s is not in %s: its last dim is not %d",
                                     ShapeToString(ToVec(x)), ChannelLayoutName(p.src), p.src));
  }
  const DimExpr channels = p.src > 0 ? x[1] * p.src : x[1];
  std::vector<DimExpr> out = {x[0]};
  if (p.dst == 0) {
    out.insert(out.end(), {channels, x[2], x[3]});
  } else {
    DimExpr blocks;
    if (channels.is_constant()) {
      if (channels.constant() % p.dst != 0) {
        return ctx.Error(absl::StrFormat("%d channels do not split into blocks of %d",
                                         channels.constant(), p.dst));
      }
      blocks = DimExpr(channels.constant() / p.dst);
    } else if (p.src > 0 && p.src % p.dst == 0) {
      blocks = x[1] * (p.src / p.dst);
    } else {  // checked by the shape function, where the channels are known
      blocks = DimExpr::FloorDiv(channels, p.dst);
    }
    out.insert(out.end(), {blocks, x[2], x[3], DimExpr(p.dst)});
  }
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult LayoutTransformKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                                   absl::Span<const Type> out_t) {
  const int64_t src = ParseChannelLayout(attrs.GetString("src_layout")).value_or(0);
  const int64_t dst = ParseChannelLayout(attrs.GetString("dst_layout")).value_or(0);
  const std::vector<int64_t>& xs = in[0].shape();
  if (src > 0 && xs[4] != src) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layout_transform: data [%s] is not in NCHW%dc", absl::StrJoin(xs, ", "), src));
  }
  const std::array<int64_t, 4> dims = {xs[0], src > 0 ? xs[1] * src : xs[1], xs[2], xs[3]};
  if (dst > 0 && dims[1] % dst != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layout_transform: %d channels do not split into blocks of %d", dims[1], dst));
  }
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  for (int64_t n = 0; n < dims[0]; ++n) {
    for (int64_t c = 0; c < dims[1]; ++c) {
      for (int64_t h = 0; h < dims[2]; ++h) {
        for (int64_t w = 0; w < dims[3]; ++w) {
          shape_rules::CopyElements(in[0], ChannelLayoutOffset(dims, src, n, c, h, w), out,
                                    ChannelLayoutOffset(dims, dst, n, c, h, w));
        }
      }
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- expand_dims / squeeze -----------------------------------------------------------------

Result ExpandDimsRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  const int64_t num = ctx.attrs().GetInt("num_newaxis");
  if (num < 0) return ctx.Error(absl::StrFormat("num_newaxis must be >= 0, got %d", num));
  const int64_t rank = in.size();
  int64_t axis = ctx.attrs().GetInt("axis");
  if (axis < -rank - 1 || axis > rank) {
    return ctx.Error(absl::StrFormat("axis %d is out of range [%d, %d] for rank %d", axis,
                                     -rank - 1, rank, rank));
  }
  if (axis < 0) axis += rank + 1;
  std::vector<DimExpr> out(in.begin(), in.begin() + axis);
  for (int64_t i = 0; i < num; ++i) out.push_back(1);
  out.insert(out.end(), in.begin() + axis, in.end());
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

Result SqueezeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  std::vector<bool> drop(in.size(), false);
  const std::vector<int64_t>& axes = ctx.attrs().GetIntList("axis");
  if (axes.empty()) {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i].is_constant() && in[i].constant() == 1;
  } else {
    ASSIGN_OR_RETURN(auto norm, shape_rules::NormalizeAxes(axes, in.size(), ctx));
    for (int64_t a : norm) {
      // A symbolic or unknown dim is squeezable if it is 1 at run time (checked there).
      if (ProvablyDifferent(in[a], 1)) {
        return ctx.Error(absl::StrFormat("cannot squeeze axis %d of size %d", a, in[a].constant()));
      }
      drop[a] = true;
    }
  }
  std::vector<DimExpr> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

// The axes of dyn.squeeze / dyn.unsqueeze (input 1) when they are all known constants; nullopt
// when they are not known now. Errors on a non-integer or non-1-D axes input.
absl::StatusOr<std::optional<std::vector<int64_t>>> KnownAxes(ShapeContext& ctx) {
  if (ctx.rank(1) != 1) {
    return ctx.Error(absl::StrFormat("axes must be 1-D, got rank %d", ctx.rank(1)));
  }
  ASSIGN_OR_RETURN(auto values, shape_rules::IntInput(ctx, 1, "axes"));
  if (!values) return std::optional<std::vector<int64_t>>();
  // Symbolic values that are not all constants (a shape_of result) cannot say which axes.
  return shape_rules::AllConstant(*values);
}

Result DynSqueezeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  const int64_t rank = in.size();
  ASSIGN_OR_RETURN(auto axes, KnownAxes(ctx));
  if (!axes) {
    ASSIGN_OR_RETURN(int64_t len, shape_rules::StaticLength(ctx, 1, "axes"));
    if (len > rank) {
      return ctx.Error(absl::StrFormat("cannot squeeze %d axes of a rank-%d tensor", len, rank));
    }
    return One(Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(rank - len)));
  }
  ASSIGN_OR_RETURN(auto norm, shape_rules::NormalizeAxes(*axes, rank, ctx));
  std::vector<bool> drop(rank, false);
  for (int64_t a : norm) {
    // Symbolic dims pass here; the shape function sees the run-time constant and checks it.
    if (ProvablyDifferent(in[a], 1)) {
      return ctx.Error(absl::StrFormat("cannot squeeze axis %d of size %d", a, in[a].constant()));
    }
    drop[a] = true;
  }
  std::vector<DimExpr> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

// ONNX Unsqueeze: axes are positions in the output (rank + len(axes)), in any order.
Result DynUnsqueezeRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto axes, KnownAxes(ctx));
  if (!axes) {
    ASSIGN_OR_RETURN(int64_t len, shape_rules::StaticLength(ctx, 1, "axes"));
    return One(Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(in.size() + len)));
  }
  const int64_t out_rank = in.size() + axes->size();
  for (int64_t a : *axes) {
    if (a < -out_rank || a >= out_rank) {
      return ctx.Error(absl::StrFormat("axis %d is out of range [%d, %d] for output rank %d", a,
                                       -out_rank, out_rank - 1, out_rank));
    }
  }
  ASSIGN_OR_RETURN(auto norm, shape_rules::NormalizeAxes(*axes, out_rank, ctx));
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : norm) inserted[a] = true;
  std::vector<DimExpr> out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[i] ? DimExpr(1) : in[next++]);
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

// ---- concatenate ---------------------------------------------------------------------------

Result ConcatenateRule(ShapeContext& ctx) {
  const int n = ctx.num_inputs();
  ASSIGN_OR_RETURN(auto first, ctx.Shape(0));
  std::vector<DimExpr> out = ToVec(first);
  ASSIGN_OR_RETURN(int64_t axis,
                   shape_rules::NormalizeAxis(ctx.attrs().GetInt("axis"), out.size(), ctx));
  for (int i = 1; i < n; ++i) {
    if (ctx.dtype(i) != ctx.dtype(0)) {
      return ctx.Error(absl::StrFormat("input %d has dtype %s, input 0 has %s", i,
                                       DTypeName(ctx.dtype(i)), DTypeName(ctx.dtype(0))));
    }
    ASSIGN_OR_RETURN(auto s, ctx.Shape(i));
    if (s.size() != out.size()) {
      return ctx.Error(
          absl::StrFormat("input %d has rank %d, input 0 has rank %d", i, s.size(), out.size()));
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        out[d] = out[d] + s[d];
      } else if (ProvablyDifferent(out[d], s[d])) {
        return ctx.Error(absl::StrFormat("input %d has %d at axis %d, expected %d", i,
                                         s[d].constant(), d, out[d].constant()));
      } else if (out[d].is_unknown() || (s[d].is_constant() && !out[d].is_constant())) {
        out[d] = s[d];  // equal at run time; keep the more specific
      }
    }
  }
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

SymValues ConcatenateSymbolic(ShapeContext& ctx) {
  std::vector<DimExpr> out;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!IsInteger(ctx.dtype(i)) || ctx.rank(i) != 1) return std::nullopt;
    auto v = ctx.IntValues(i);
    if (!v.ok() || !v->has_value()) return std::nullopt;
    out.insert(out.end(), (*v)->begin(), (*v)->end());
  }
  return std::vector<std::vector<DimExpr>>{std::move(out)};
}

KernelResult ConcatenateKernel(absl::Span<const Tensor> in, const Attrs& attrs,
                               absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  int64_t axis = attrs.GetInt("axis");
  if (axis < 0) axis += out.rank();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= out.shape()[i];
  for (int64_t i = axis + 1; i < out.rank(); ++i) inner *= out.shape()[i];
  int64_t dst = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : in) {
      const int64_t chunk = t.shape()[axis] * inner;
      shape_rules::CopyElements(t, o * chunk, out, dst, chunk);
      dst += chunk;
    }
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- broadcast_to / dyn.broadcast_to -------------------------------------------------------

absl::Status CheckBroadcastTo(const ShapeContext& ctx, absl::Span<const DimExpr> in,
                              absl::Span<const DimExpr> target) {
  if (in.size() > target.size()) {
    return ctx.Error(
        absl::StrFormat("cannot broadcast rank %d to the lower rank %d", in.size(), target.size()));
  }
  // Every target dim is checked, the leading ones that no input dim meets included.
  const size_t off = target.size() - in.size();
  for (size_t j = 0; j < target.size(); ++j) {
    if (target[j].is_constant() && target[j].constant() < 0) {
      return ctx.Error(absl::StrFormat("target dim %d is negative", target[j].constant()));
    }
    if (j < off) continue;
    const DimExpr& d = in[j - off];
    if (ProvablyDifferent(d, 1) && ProvablyDifferent(d, target[j])) {
      return ctx.Error(absl::StrFormat("cannot broadcast %s to %s", ShapeToString(ToVec(in)),
                                       ShapeToString(ToVec(target))));
    }
  }
  return absl::OkStatus();
}

Result BroadcastToRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  const std::vector<DimExpr> target = shape_rules::ToDims(ctx.attrs().GetIntList("shape"));
  RETURN_IF_ERROR(CheckBroadcastTo(ctx, in, target));
  return One(Type::Tensor(ctx.dtype(0), target));
}

// dyn.broadcast_to broadcasts both ways (ONNX Expand): out = broadcast(shape(data), shape), so
// a target dim of 1 keeps the data's dim. Where it is valid, one-way broadcast_to gives the same
// result; the two-way form lets the importer pass Expand's target as it is, with no host
// arithmetic in between (which would lose the symbols: is `batch` 1?).
Result DynBroadcastToRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  if (ctx.rank(1) != 1) return ctx.Error("shape must be 1-D");
  ASSIGN_OR_RETURN(auto target, shape_rules::IntInput(ctx, 1, "shape"));
  if (!target) {
    ASSIGN_OR_RETURN(int64_t len, shape_rules::StaticLength(ctx, 1, "shape"));
    target = shape_rules::UnknownDims(len);
  }
  if (target->size() < in.size()) {
    return ctx.Error(absl::StrFormat("cannot broadcast rank %d to the lower rank %d", in.size(),
                                     target->size()));
  }
  // The concrete helper's rule and words (BroadcastToShape with both_ways), over symbols.
  const size_t off = target->size() - in.size();
  std::vector<DimExpr> out;
  for (size_t j = 0; j < target->size(); ++j) {
    const DimExpr& t = (*target)[j];
    if (t.is_constant() && t.constant() < 0) {
      return ctx.Error(absl::StrFormat("target dim %d is negative", t.constant()));
    }
    if (j < off) {
      out.push_back(t);
      continue;
    }
    const DimExpr& d = in[j - off];
    auto is_one = [](const DimExpr& e) { return e.is_constant() && e.constant() == 1; };
    if (d == t || is_one(d)) {
      out.push_back(t);
    } else if (is_one(t)) {
      out.push_back(d);
    } else if (d.is_constant() && t.is_constant()) {
      return ctx.Error(absl::StrFormat("cannot broadcast %s to %s", ShapeToString(ToVec(in)),
                                       ShapeToString(*target)));
    } else if (shape_rules::ProvablyDifferent(t, 1) && !t.is_unknown()) {
      out.push_back(t);  // d must be 1 or t at run time
    } else if (d.is_constant() && !t.is_constant()) {
      out.push_back(d);  // a non-1 constant input dim: t must be 1 or d
    } else {
      out.push_back(DimExpr::Unknown());
    }
  }
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult BroadcastToKernel(absl::Span<const Tensor> in, const Attrs&,
                               absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  std::vector<int64_t> idx(out.rank(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    shape_rules::CopyElements(in[0], shape_rules::BroadcastSourceIndex(idx, in[0].shape()), out, i);
    shape_rules::NextIndex(idx, out.shape());
  }
  return std::vector<Tensor>{std::move(out)};
}

// ---- tile / dyn.tile -----------------------------------------------------------------------

// Output rank is max(rank, len(reps)); the shorter side is padded with leading 1s.
absl::StatusOr<std::vector<DimExpr>> TiledShape(const ShapeContext& ctx,
                                                absl::Span<const DimExpr> in,
                                                absl::Span<const DimExpr> reps) {
  const size_t rank = std::max(in.size(), reps.size());
  std::vector<DimExpr> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const size_t di = i + in.size(), ri = i + reps.size();
    const DimExpr d = di >= rank ? in[di - rank] : DimExpr(1);
    const DimExpr r = ri >= rank ? reps[ri - rank] : DimExpr(1);
    if (r.is_constant() && r.constant() < 0) {
      return ctx.Error(absl::StrFormat("reps must be >= 0, got %d", r.constant()));
    }
    out[i] = d * r;
  }
  return out;
}

Result TileRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  const std::vector<DimExpr> reps = shape_rules::ToDims(ctx.attrs().GetIntList("reps"));
  ASSIGN_OR_RETURN(auto out, TiledShape(ctx, in, reps));
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

Result DynTileRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto in, ctx.Shape(0));
  if (ctx.rank(1) != 1) return ctx.Error("reps must be 1-D");
  ASSIGN_OR_RETURN(auto reps, shape_rules::IntInput(ctx, 1, "reps"));
  if (!reps) {
    ASSIGN_OR_RETURN(int64_t len, shape_rules::StaticLength(ctx, 1, "reps"));
    return One(
        Type::Tensor(ctx.dtype(0), shape_rules::UnknownDims(std::max<int64_t>(len, in.size()))));
  }
  ASSIGN_OR_RETURN(auto out, TiledShape(ctx, in, *reps));
  return One(Type::Tensor(ctx.dtype(0), std::move(out)));
}

KernelResult TileKernel(absl::Span<const Tensor> in, const Attrs&, absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  const std::vector<int64_t>& xs = in[0].shape();
  const size_t off = out.rank() - xs.size();
  const std::vector<int64_t> strides = shape_rules::Strides(xs);
  std::vector<int64_t> idx(out.rank(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    int64_t src = 0;
    for (size_t a = 0; a < xs.size(); ++a) src += (idx[off + a] % xs[a]) * strides[a];
    shape_rules::CopyElements(in[0], src, out, i);
    shape_rules::NextIndex(idx, out.shape());
  }
  return std::vector<Tensor>{std::move(out)};
}

}  // namespace

void RegisterTransformOps(OpRegistry::Builder& b) {
  b.Register("reshape")
      .View()
      .Input("data", InputDep::kShape)
      .Attr("newshape", AttrType::kIntList)
      .Pattern(FusionPattern::kInjective)
      .Doc("reshape with Relay's 0 (copy dim) and -1 (infer dim)")
      .Rule(ReshapeRule)
      .SymbolicValues(shape_rules::ForwardIntValues)
      .Reference(ReshapeKernel);
  b.Register("dyn.reshape")
      .View()
      .Input("data", InputDep::kShape)
      .Input("newshape", InputDep::kValue)
      .Attr("allowzero", AttrType::kBool, false)
      .Pattern(FusionPattern::kInjective)
      .Doc("reshape to a run-time 1-D target (0 and -1 as in reshape; with allowzero a 0 is a "
           "zero dim)")
      .Rule(DynReshapeRule)
      .SymbolicValues(shape_rules::ForwardIntValues)
      .Reference(ReshapeKernel);
  b.Register("transpose")
      .Input("data", InputDep::kShape)
      .Attr("axes", AttrType::kIntList, std::vector<int64_t>{})
      .Pattern(FusionPattern::kInjective)
      .Doc("permutes axes; empty axes reverses them")
      .Rule(TransposeRule)
      .SymbolicValues(TransposeSymbolic)
      .Reference(TransposeKernel);
  b.Register("layout_transform")
      .Input("data", InputDep::kShape)
      .Attr("src_layout", AttrType::kString)
      .Attr("dst_layout", AttrType::kString)
      .Pattern(FusionPattern::kInjective)
      .Doc(
          "converts [N, C, H, W] data between the channel layouts NCHW and NCHW<b>c "
          "([N, C/b, H, W, b])")
      .Rule(LayoutTransformRule)
      .Reference(LayoutTransformKernel);
  b.Register("expand_dims")
      .View()
      .Input("data", InputDep::kShape)
      .Attr("axis", AttrType::kInt)
      .Attr("num_newaxis", AttrType::kInt, int64_t{1})
      .Pattern(FusionPattern::kBroadcast)
      .Doc("inserts num_newaxis unit dims at axis (in [-rank-1, rank])")
      .Rule(ExpandDimsRule)
      .SymbolicValues(shape_rules::ForwardIntValues)
      .Reference(ReshapeKernel);
  b.Register("squeeze")
      .View()
      .Input("data", InputDep::kShape)
      .Attr("axis", AttrType::kIntList, std::vector<int64_t>{})
      .Pattern(FusionPattern::kInjective)
      .Doc("removes unit dims (empty axis: the statically-1 dims; symbolic dims are kept)")
      .Rule(SqueezeRule)
      .SymbolicValues(shape_rules::ForwardIntValues)
      .Reference(ReshapeKernel);
  b.Register("dyn.squeeze")
      .View()
      .Input("data", InputDep::kShape)
      .Input("axes", InputDep::kValue)
      .Pattern(FusionPattern::kInjective)
      .Doc("removes the unit dims at run-time 1-D axes (output rank: rank - len(axes))")
      .Rule(DynSqueezeRule)
      .SymbolicValues(shape_rules::ForwardIntValues)
      .Reference(ReshapeKernel);
  b.Register("dyn.unsqueeze")
      .View()
      .Input("data", InputDep::kShape)
      .Input("axes", InputDep::kValue)
      .Pattern(FusionPattern::kBroadcast)
      .Doc("inserts unit dims at run-time 1-D output axes (output rank: rank + len(axes))")
      .Rule(DynUnsqueezeRule)
      .SymbolicValues(shape_rules::ForwardIntValues)
      .Reference(ReshapeKernel);
  b.Register("concatenate")
      .VariadicInput("data", InputDep::kShape)
      .Attr("axis", AttrType::kInt, int64_t{0})
      .Pattern(FusionPattern::kInjective)
      .Doc("joins tensors along axis")
      .Rule(ConcatenateRule)
      .SymbolicValues(ConcatenateSymbolic)
      .Reference(ConcatenateKernel);
  b.Register("broadcast_to")
      .Input("data", InputDep::kShape)
      .Attr("shape", AttrType::kIntList)
      .Pattern(FusionPattern::kBroadcast)
      .Doc("NumPy broadcast to a static shape")
      .Rule(BroadcastToRule)
      .Reference(BroadcastToKernel);
  b.Register("dyn.broadcast_to")
      .Input("data", InputDep::kShape)
      .Input("shape", InputDep::kValue)
      .Pattern(FusionPattern::kBroadcast)
      .Doc("broadcast both ways with a run-time 1-D shape (ONNX Expand): a target 1 keeps the "
           "data's dim")
      .Rule(DynBroadcastToRule)
      .Reference(BroadcastToKernel);
  b.Register("tile")
      .Input("data", InputDep::kShape)
      .Attr("reps", AttrType::kIntList)
      .Pattern(FusionPattern::kInjective)
      .Doc("repeats data reps[i] times along each axis")
      .Rule(TileRule)
      .Reference(TileKernel);
  b.Register("dyn.tile")
      .Input("data", InputDep::kShape)
      .Input("reps", InputDep::kValue)
      .Pattern(FusionPattern::kInjective)
      .Doc("tile with run-time 1-D reps")
      .Rule(DynTileRule)
      .Reference(TileKernel);
}

}  // namespace hetpass
