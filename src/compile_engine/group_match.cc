// Library-neutral group matching (see group_match.h).
#include "compile_engine/group_match.h"

#include <algorithm>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/shape_funcs/channel_layout.h"
#include "passes/shape_funcs/op_registry.h"

namespace hetpass::group_match {

bool IsCallOf(const Node& n, OpId op) {
  return n.kind() == NodeKind::kCall && n.op() != nullptr && OpIdOf(*n.op()) == op;
}

bool IsF32Tensor(const Type& t, int rank) {
  return t.is_tensor() && t.dtype() == DType::kF32 && t.rank() == rank;
}

int ParamIndex(const Block& body, const Value* v) {
  return v->is_param() && v->param_block() == &body ? v->index() : -1;
}

std::optional<int64_t> IntAttr(const Node& n, absl::string_view name, int64_t default_value) {
  const AttrValue* a = n.attrs().Find(name);
  if (a == nullptr) return default_value;
  if (const int64_t* v = std::get_if<int64_t>(a)) return *v;
  return std::nullopt;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ", "));
}

absl::Status CheckF32Arg(absl::string_view function, absl::string_view name,
                         absl::string_view short_name, const TensorArg& a, int rank,
                         bool needs_data) {
  if (a.dtype != DType::kF32 || static_cast<int>(a.shape.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s must be an f32 tensor of rank %d, got %s%s",
                                                      function, name, rank, DTypeName(a.dtype),
                                                      ShapeString(a.shape)));
  }
  for (int64_t d : a.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s has a negative dim: %s", function,
                                                        short_name, ShapeString(a.shape)));
    }
  }
  if (needs_data && a.data == nullptr && a.num_elements() > 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s has no data", function, short_name));
  }
  return absl::OkStatus();
}

std::string AnchorEpilogue::Arg(absl::string_view role, int param) const {
  return absl::StrFormat("%s (%s)", role, param_names[param]);
}

namespace {

// The parameter `add` node `n` adds to `cur` (either operand), or -1.
int OtherParam(const Block& body, const Node& n, const Value* cur) {
  if (n.num_operands() != 2 || n.num_results() != 1) return -1;
  if (n.operand(0) == cur) return ParamIndex(body, n.operand(1));
  if (n.operand(1) == cur) return ParamIndex(body, n.operand(0));
  return -1;
}

}  // namespace

std::optional<AnchorEpilogue> MatchAnchorEpilogue(const Function& f, OpId anchor, bool allow_add,
                                                  int bias_rank, bool allow_residual) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  const auto& nodes = body.nodes();
  if (nodes.empty() || nodes.size() > (allow_residual ? 4u : 3u) || body.results().size() != 1) {
    return std::nullopt;
  }

  AnchorEpilogue g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  for (const auto& p : body.params()) {
    g.param_names.push_back("%" + p->name());
    g.param_types.push_back(p->type());
  }
  const Node& a = *nodes[0];
  if (!IsCallOf(a, anchor) || a.num_operands() != 2 || a.num_results() != 1) return std::nullopt;
  g.anchor = &a;
  g.data = ParamIndex(body, a.operand(0));
  g.weight = ParamIndex(body, a.operand(1));
  if (g.data < 0 || g.weight < 0 || g.data == g.weight) return std::nullopt;
  const Value* cur = a.result(0);

  size_t i = 1;
  // With a residual, an `add` of a parameter that is not bias-shaped is the residual's.
  const bool add_is_residual =
      allow_residual && i < nodes.size() && IsCallOf(*nodes[i], OpId::kAdd) && [&] {
        const int other = OtherParam(body, *nodes[i], cur);
        return other >= 0 && !IsF32Tensor(g.param_types[other], bias_rank);
      }();
  if (i < nodes.size() && !add_is_residual &&
      (IsCallOf(*nodes[i], OpId::kNnBiasAdd) || (allow_add && IsCallOf(*nodes[i], OpId::kAdd)))) {
    const Node& b = *nodes[i];
    g.bias_node = &b;
    g.bias_is_add = IsCallOf(b, OpId::kAdd);
    if (b.num_operands() != 2 || b.num_results() != 1) return std::nullopt;
    const int cur_operand = b.operand(0) == cur ? 0 : (g.bias_is_add && b.operand(1) == cur ? 1 : -1);
    if (cur_operand < 0) return std::nullopt;
    g.bias = ParamIndex(body, b.operand(1 - cur_operand));
    if (g.bias < 0 || g.bias == g.data || g.bias == g.weight ||
        !IsF32Tensor(g.param_types[g.bias], bias_rank)) {
      return std::nullopt;
    }
    cur = b.result(0);
    ++i;
  }
  if (allow_residual && i < nodes.size() && IsCallOf(*nodes[i], OpId::kAdd)) {
    // The residual: a parameter of exactly the running value's type (no broadcast).
    const int r = OtherParam(body, *nodes[i], cur);
    if (r < 0 || r == g.data || r == g.weight || r == g.bias || !cur->type().is_tensor() ||
        !IsF32Tensor(g.param_types[r], cur->type().rank()) ||
        g.param_types[r].shape() != cur->type().shape()) {
      return std::nullopt;
    }
    g.residual = r;
    cur = nodes[i]->result(0);
    ++i;
  }
  if (i < nodes.size() && IsCallOf(*nodes[i], OpId::kNnRelu)) {
    const Node& relu = *nodes[i];
    if (relu.num_operands() != 1 || relu.num_results() != 1 || relu.operand(0) != cur) {
      return std::nullopt;
    }
    g.relu = true;
    cur = relu.result(0);
    ++i;
  }
  if (i != nodes.size() || body.results()[0] != cur) return std::nullopt;
  return g;
}

bool IsEpilogueOp(OpId op, bool allow_add) {
  return op == OpId::kNnBiasAdd || op == OpId::kNnRelu || (allow_add && op == OpId::kAdd);
}

bool DeclaredResultIsF32(const Function& f, int rank) {
  if (f.result_types().empty()) return true;
  if (f.result_types().size() != 1) return false;
  const Type& r = f.result_types()[0];
  return r.is_unset() || IsF32Tensor(r, rank);
}

std::optional<DenseGroup> MatchDenseGroup(const Function& f) {
  // The bias: nn.bias_add on the last axis, or an `add` of a 1-D [N] parameter (NumPy
  // broadcasting over the last axis: what ONNX MatMul + Add exports give).
  std::optional<AnchorEpilogue> m = MatchAnchorEpilogue(f, OpId::kNnDense, /*allow_add=*/true);
  if (!m) return std::nullopt;
  DenseGroup g;
  static_cast<AnchorEpilogue&>(g) = *std::move(m);
  // Data of rank >= 2 ([.., K], e.g. a transformer's [batch, seq, K]) is one GEMM over the
  // flattened leading dims.
  const int data_rank = g.param_types[g.data].is_tensor() ? g.param_types[g.data].rank() : 0;
  if (data_rank < 2 || !IsF32Tensor(g.param_types[g.data], data_rank) ||
      !IsF32Tensor(g.param_types[g.weight], 2)) {
    return std::nullopt;
  }
  g.data_rank = data_rank;
  const std::optional<int64_t> units = IntAttr(*g.anchor, "units", 0);
  const DimExpr& n_dim = g.param_types[g.weight].shape()[0];
  if (!units || (*units > 0 && n_dim.is_constant() && n_dim.constant() != *units)) {
    return std::nullopt;
  }
  if (g.has_bias() && g.bias_is_add) {
    // [N] against the dense result's last dim (the weight's rows): equal, not broadcast.
    const DimExpr& len = g.param_types[g.bias].shape()[0];
    if (len.is_unknown() || len != n_dim) return std::nullopt;
  } else if (g.has_bias()) {
    const std::optional<int64_t> axis = IntAttr(*g.bias_node, "axis", 1);
    if (!axis || (*axis != -1 && *axis != data_rank - 1)) return std::nullopt;
  }
  if (!DeclaredResultIsF32(f, data_rank)) return std::nullopt;
  return g;
}

namespace {

// The attributes of a conv2d / conv2d_transpose with the registry's defaults filled in, read as
// its shape rule reads them; nullopt if any is malformed (type inference rejects the call
// anyway). `transposed` also reads output_padding and refuses one that reaches the stride (see
// DeconvGroup).
std::optional<Attrs> ReadWindow(const Node& anchor, ConvWindow& g, std::array<int64_t, 2>* output_padding) {
  absl::StatusOr<Attrs> attrs = anchor.op()->CheckAttrs(anchor.attrs());
  if (!attrs.ok()) return std::nullopt;
  const std::vector<int64_t>& p = attrs->GetIntList("padding");
  if (p.size() == 1) {
    g.pad = {p[0], p[0], p[0], p[0]};
  } else if (p.size() == 2) {
    g.pad = {p[0], p[1], p[0], p[1]};
  } else if (p.size() == 4) {
    g.pad = {p[0], p[1], p[2], p[3]};
  } else {
    return std::nullopt;
  }
  if (std::any_of(g.pad.begin(), g.pad.end(), [](int64_t v) { return v < 0; })) return std::nullopt;
  auto pair = [&](absl::string_view name, std::array<int64_t, 2>& out, int64_t min) {
    const std::vector<int64_t>& v = attrs->GetIntList(name);
    if (v.size() != 1 && v.size() != 2) return false;
    out = {v[0], v.back()};
    return out[0] >= min && out[1] >= min;
  };
  if (!pair("strides", g.stride, 1) || !pair("dilation", g.dilation, 1)) return std::nullopt;
  if (output_padding != nullptr) {
    if (!pair("output_padding", *output_padding, 0)) return std::nullopt;
    if ((*output_padding)[0] >= g.stride[0] || (*output_padding)[1] >= g.stride[1]) return std::nullopt;
  }
  g.groups = attrs->GetInt("groups");
  if (g.groups <= 0) return std::nullopt;
  return *std::move(attrs);
}

// The anchor + epilogue of a conv-like group over rank-4 f32 data and weights, the bias (if
// any) on NCHW's channel axis and an f32 rank-4 result; nullopt otherwise.
template <typename Group>
std::optional<Group> MatchWindowGroup(const Function& f, OpId anchor) {
  std::optional<AnchorEpilogue> m = MatchAnchorEpilogue(f, anchor, /*allow_add=*/false);
  if (!m) return std::nullopt;
  Group g;
  static_cast<AnchorEpilogue&>(g) = *std::move(m);
  if (!IsF32Tensor(g.param_types[g.data], 4) || !IsF32Tensor(g.param_types[g.weight], 4)) {
    return std::nullopt;
  }
  if (g.has_bias()) {  // the channel axis of NCHW
    const std::optional<int64_t> axis = IntAttr(*g.bias_node, "axis", 1);
    if (!axis || (*axis != 1 && *axis != -3)) return std::nullopt;
  }
  if (!DeclaredResultIsF32(f, 4)) return std::nullopt;
  return g;
}

}  // namespace

namespace {

// The conv's data and result layouts as blocks (0 = NCHW) when the kernels take them: NCHW or
// NCHW<b>c with b in {4, 8, 16} (oneDNN's nChw4c / nChw8c / nChw16c), an OIHW kernel.
std::optional<std::array<int64_t, 2>> ConvLayouts(const Attrs& attrs) {
  const std::optional<int64_t> in = ParseChannelLayout(attrs.GetString("data_layout"));
  const std::string& out_name = attrs.GetString("out_layout");
  const std::optional<int64_t> out = out_name.empty() ? in : ParseChannelLayout(out_name);
  auto supported = [](std::optional<int64_t> b) {
    return b && (*b == 0 || *b == 4 || *b == 8 || *b == 16);
  };
  if (!supported(in) || !supported(out) || attrs.GetString("kernel_layout") != "OIHW") {
    return std::nullopt;
  }
  return std::array<int64_t, 2>{*in, *out};
}

}  // namespace

std::optional<ConvGroup> MatchConvGroup(const Function& f) {
  if (!IsPrimitive(f) || f.body().nodes().empty()) return std::nullopt;
  const Node& first = *f.body().nodes()[0];
  if (!IsCallOf(first, OpId::kNnConv2d)) return std::nullopt;
  ConvWindow window;
  std::optional<Attrs> attrs = ReadWindow(first, window, nullptr);
  if (!attrs) return std::nullopt;
  const std::optional<std::array<int64_t, 2>> layouts = ConvLayouts(*attrs);
  if (!layouts) return std::nullopt;
  const auto [in_block, out_block] = *layouts;
  if (in_block == 0 && out_block == 0) {
    std::optional<ConvGroup> g = MatchWindowGroup<ConvGroup>(f, OpId::kNnConv2d);
    if (g) static_cast<ConvWindow&>(*g) = window;
    return g;
  }
  // Blocked: the bias (if any) is an add of [OC/b, 1, 1, b] on a blocked result, nn.bias_add
  // on an NCHW one.
  std::optional<AnchorEpilogue> m =
      MatchAnchorEpilogue(f, OpId::kNnConv2d, /*allow_add=*/out_block > 0,
                          /*bias_rank=*/out_block > 0 ? 4 : 1, /*allow_residual=*/out_block > 0);
  if (!m) return std::nullopt;
  ConvGroup g;
  static_cast<AnchorEpilogue&>(g) = *std::move(m);
  static_cast<ConvWindow&>(g) = window;
  g.in_block = in_block;
  g.out_block = out_block;
  if (!IsF32Tensor(g.param_types[g.data], in_block > 0 ? 5 : 4) ||
      !IsF32Tensor(g.param_types[g.weight], 4)) {
    return std::nullopt;
  }
  if (g.has_bias() && out_block == 0) {
    const std::optional<int64_t> axis = IntAttr(*g.bias_node, "axis", 1);
    if (!axis || (*axis != 1 && *axis != -3)) return std::nullopt;
  } else if (g.has_bias()) {
    const std::vector<DimExpr>& b = g.param_types[g.bias].shape();
    const DimExpr& oc = g.param_types[g.weight].shape()[0];
    if (!g.bias_is_add || !b[1].is_constant() || b[1].constant() != 1 || !b[2].is_constant() ||
        b[2].constant() != 1 || !b[3].is_constant() || b[3].constant() != out_block ||
        !oc.is_constant() || !b[0].is_constant() || b[0].constant() * out_block != oc.constant()) {
      return std::nullopt;
    }
  }
  if (!DeclaredResultIsF32(f, out_block > 0 ? 5 : 4)) return std::nullopt;
  return g;
}

absl::StatusOr<ConvShape> ConvShapeOf(const ConvGroup& g, absl::Span<const int64_t> x,
                                      absl::Span<const int64_t> w) {
  const int64_t channels = g.in_block > 0 ? x[1] * g.in_block : x[1];
  ConvShape s{x[0], channels, x[2], x[3], w[0], w[1], w[2], w[3], 0, 0};
  if (s.icg * g.groups != s.c) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: nn.conv2d channels differ: %s has %d channels but %s expects %d (%d x %d groups)",
        g.function, g.Arg("data", g.data), s.c, g.Arg("weight", g.weight), s.icg * g.groups, s.icg,
        g.groups));
  }
  if (s.oc % g.groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s has %d output channels, not divisible by %d groups", g.function,
                        g.Arg("weight", g.weight), s.oc, g.groups));
  }
  const int64_t span_h = s.h + g.pad[0] + g.pad[2] - g.dilation[0] * (s.kh - 1) - 1;
  const int64_t span_w = s.w + g.pad[1] + g.pad[3] - g.dilation[1] * (s.kw - 1) - 1;
  if (span_h < 0 || span_w < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: nn.conv2d window [%d, %d] (dilation [%d, %d]) is larger than %s padded by [%d, %d, "
        "%d, %d]",
        g.function, s.kh, s.kw, g.dilation[0], g.dilation[1], g.Arg("data", g.data), g.pad[0],
        g.pad[1], g.pad[2], g.pad[3]));
  }
  s.oh = span_h / g.stride[0] + 1;
  s.ow = span_w / g.stride[1] + 1;
  return s;
}

std::optional<DeconvGroup> MatchDeconvGroup(const Function& f) {
  std::optional<DeconvGroup> g = MatchWindowGroup<DeconvGroup>(f, OpId::kNnConv2dTranspose);
  if (!g || !ReadWindow(*g->anchor, *g, &g->output_padding)) return std::nullopt;
  return g;
}

absl::StatusOr<DeconvShape> DeconvShapeOf(const DeconvGroup& g, absl::Span<const int64_t> x,
                                          absl::Span<const int64_t> w) {
  DeconvShape s{x[0], x[1], x[2], x[3], w[1], w[2], w[3], w[1] * g.groups, 0, 0};
  if (w[0] != s.c) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: nn.conv2d_transpose channels differ: %s has %d channels but %s [C, OC/groups, KH, "
        "KW] has %d",
        g.function, g.Arg("data", g.data), s.c, g.Arg("weight", g.weight), w[0]));
  }
  if (s.c % g.groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s has %d channels, not divisible by %d groups", g.function,
                        g.Arg("data", g.data), s.c, g.groups));
  }
  s.oh = g.stride[0] * (s.h - 1) + g.output_padding[0] + g.dilation[0] * (s.kh - 1) + 1 - g.pad[0] -
         g.pad[2];
  s.ow = g.stride[1] * (s.w - 1) + g.output_padding[1] + g.dilation[1] * (s.kw - 1) + 1 - g.pad[1] -
         g.pad[3];
  if (s.oh < 0 || s.ow < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: nn.conv2d_transpose padding [%d, %d, %d, %d] crops more than the [%d, %d] output "
        "of %s",
        g.function, g.pad[0], g.pad[1], g.pad[2], g.pad[3], s.oh + g.pad[0] + g.pad[2],
        s.ow + g.pad[1] + g.pad[3], g.Arg("data", g.data)));
  }
  return s;
}

std::string BatchMatmulGroup::Arg(absl::string_view role, int param) const {
  return absl::StrFormat("%s (%s)", role, param_names[param]);
}

std::optional<BatchMatmulGroup> MatchBatchMatmulGroup(const Function& f, int max_rank) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& mm = *body.nodes()[0];
  if (!IsCallOf(mm, OpId::kNnBatchMatmul) || mm.num_operands() != 2 || mm.num_results() != 1 ||
      body.results()[0] != mm.result(0)) {
    return std::nullopt;
  }
  BatchMatmulGroup g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  for (const auto& p : body.params()) g.param_names.push_back("%" + p->name());
  g.a = ParamIndex(body, mm.operand(0));
  g.b = ParamIndex(body, mm.operand(1));
  if (g.a < 0 || g.b < 0) return std::nullopt;
  const Type& ta = body.param(g.a)->type();
  const Type& tb = body.param(g.b)->type();
  if (!ta.is_tensor() || !tb.is_tensor()) return std::nullopt;
  g.a_rank = ta.rank();
  g.b_rank = tb.rank();
  g.out_rank = std::max(g.a_rank, g.b_rank);
  if (g.a_rank < 2 || g.b_rank < 2 || g.out_rank > max_rank || !IsF32Tensor(ta, g.a_rank) ||
      !IsF32Tensor(tb, g.b_rank)) {
    return std::nullopt;
  }
  return g;
}

std::optional<std::vector<int64_t>> BatchMatmulShape(absl::Span<const int64_t> a, absl::Span<const int64_t> b,
                                                     std::vector<int64_t>* a_padded, std::vector<int64_t>* b_padded) {
  const size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> ad(r, 1), bd(r, 1), want(r, 1);
  std::copy(a.begin(), a.end(), ad.end() - static_cast<std::ptrdiff_t>(a.size()));
  std::copy(b.begin(), b.end(), bd.end() - static_cast<std::ptrdiff_t>(b.size()));
  if (bd[r - 2] != ad[r - 1]) return std::nullopt;
  for (size_t i = 0; i + 2 < r; ++i) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) return std::nullopt;
    want[i] = ad[i] == 1 ? bd[i] : ad[i];
  }
  want[r - 2] = ad[r - 2];
  want[r - 1] = bd[r - 1];
  *a_padded = std::move(ad);
  *b_padded = std::move(bd);
  return want;
}

}  // namespace hetpass::group_match
