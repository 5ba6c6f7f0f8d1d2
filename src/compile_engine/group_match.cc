// Library-neutral group matching (see group_match.h).
#include "compile_engine/group_match.h"

#include <algorithm>
#include <variant>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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

std::string AnchorEpilogue::Arg(absl::string_view role, int param) const {
  return absl::StrFormat("%s (%s)", role, param_names[param]);
}

std::optional<AnchorEpilogue> MatchAnchorEpilogue(const Function& f, OpId anchor, bool allow_add) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  const auto& nodes = body.nodes();
  if (nodes.empty() || nodes.size() > 3 || body.results().size() != 1) return std::nullopt;

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
  if (i < nodes.size() &&
      (IsCallOf(*nodes[i], OpId::kNnBiasAdd) || (allow_add && IsCallOf(*nodes[i], OpId::kAdd)))) {
    const Node& b = *nodes[i];
    g.bias_node = &b;
    g.bias_is_add = IsCallOf(b, OpId::kAdd);
    if (b.num_operands() != 2 || b.num_results() != 1) return std::nullopt;
    const int cur_operand = b.operand(0) == cur ? 0 : (g.bias_is_add && b.operand(1) == cur ? 1 : -1);
    if (cur_operand < 0) return std::nullopt;
    g.bias = ParamIndex(body, b.operand(1 - cur_operand));
    if (g.bias < 0 || g.bias == g.data || g.bias == g.weight ||
        !IsF32Tensor(g.param_types[g.bias], 1)) {
      return std::nullopt;
    }
    cur = b.result(0);
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
