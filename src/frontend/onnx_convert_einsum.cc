// ONNX Einsum (opset 12) lowered to transpose, reshape, nn.batch_matmul, sum and where.
//
// 1. Parse. The equation is "term,term,...[->term]", each term letters with at most one
//    "..." (spaces ignored). A term's letters plus its ellipsis dims must equal its operand's
//    rank. Labels become integers: letters 0..51, ellipsis dims 52.. right-aligned across the
//    operands (NumPy broadcasting), so an operand with fewer ellipsis dims takes the last ones.
//    Without "->" the output is the ellipsis dims, then the letters used exactly once, in
//    ASCII order (NumPy's implicit mode).
// 2. Per operand: a label repeated in one term is a diagonal: where(i == j, x, 0) then a sum
//    over the second axis (where, not a multiply by the identity, so an inf off the diagonal
//    does not become NaN). Labels no other term and not the output uses are summed at once.
// 3. Operands are contracted pairwise, left to right. For A and B, with `keep` the labels of
//    the output and of the operands still to come: batch = shared and kept, contracted =
//    shared and not kept, then A's and B's own. A is transposed to [batch, A-own, contracted]
//    and reshaped to [batch.., M, K], B to [batch.., K, N]; nn.batch_matmul (batch dims
//    broadcast) gives [batch.., M, N], reshaped back to [batch.., A-own.., B-own..]. A
//    summed-out ellipsis dim that is 1 on one side only is first dropped from that side.
// 4. The labels left that the output lacks are summed; a transpose puts the rest in output
//    order.
// Reshapes are static when every dim involved is; otherwise the target is computed on the host
// from shape_of (metadata, no copy of data) and the reshape is dyn.reshape. A malformed
// equation (a bad character, a second ellipsis, a term whose subscripts do not match its
// operand's rank, an output label no input has, a repeated output label, dims of one label
// that disagree statically) is an InvalidArgument naming the equation. Dims of one label that
// are symbolic are not compared at run time.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

constexpr int kEllipsisLabel = -1;     // a parsed "..." before expansion
constexpr int kFirstEllipsisDim = 52;  // labels of the ellipsis dims after expansion

using Labels = std::vector<int>;

int LetterLabel(char c) { return c >= 'a' ? 26 + (c - 'a') : c - 'A'; }

// The subscript as written: its letter, or "..." for an ellipsis dim.
std::string LabelName(int label) {
  if (label >= kFirstEllipsisDim) return "...";
  return std::string(1, static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26)));
}

bool Contains(const Labels& l, int x) { return std::find(l.begin(), l.end(), x) != l.end(); }

// One term: letters and at most one ellipsis (kEllipsisLabel).
absl::StatusOr<Labels> ParseTerm(ImportContext& ctx, absl::string_view term,
                                 absl::string_view equation) {
  Labels out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      out.push_back(LetterLabel(c));
    } else if (c == '.') {
      if (term.substr(i, 3) != "..." || ellipsis) {
        return ctx.Error(
            absl::StrCat("equation '", equation, "': malformed ellipsis in term '", term, "'"));
      }
      ellipsis = true;
      out.push_back(kEllipsisLabel);
      i += 2;
    } else {
      return ctx.Error(
          absl::StrFormat("equation '%s': bad character '%c' in term '%s'", equation, c, term));
    }
  }
  return out;
}

// Replaces the ellipsis of `term` by `n` ellipsis-dim labels (the last n of `total`).
Labels ExpandEllipsis(const Labels& term, int n, int total) {
  Labels out;
  for (int l : term) {
    if (l != kEllipsisLabel) {
      out.push_back(l);
      continue;
    }
    for (int j = total - n; j < total; ++j) out.push_back(kFirstEllipsisDim + j);
  }
  return out;
}

// ---- shape helpers -------------------------------------------------------------------------

// One dim of the target of a reshape: the product of some dims of some values.
struct DimRef {
  Value* of;
  int axis;
};
using DimProduct = std::vector<DimRef>;

// Reshapes `x` to dims that are products of known dims: static when all of them are, else
// dyn.reshape with the target computed from shape_of on the host.
absl::StatusOr<Value*> ReshapeToProducts(ImportContext& ctx, Value* x,
                                         const std::vector<DimProduct>& target) {
  std::vector<int64_t> fixed;
  bool all_static = true;
  for (const DimProduct& p : target) {
    int64_t v = 1;
    for (const DimRef& r : p) {
      const Type t = ctx.TypeOf(r.of);
      if (!t.is_tensor() || r.axis >= t.rank()) {  // not typed locally: computed targets
        all_static = false;
        break;
      }
      const DimExpr d = t.shape()[r.axis];
      if (!d.is_constant() || __builtin_mul_overflow(v, d.constant(), &v)) {
        all_static = false;
        break;
      }
    }
    if (!all_static) break;
    fixed.push_back(v);
  }
  if (all_static) return ctx.Op("reshape", {x}, {{"newshape", fixed}});
  std::vector<Value*> parts;
  for (const DimProduct& p : target) {
    Value* v = ctx.Const(Tensor::FromInt64s(DType::kI64, {1}, {1}));
    for (const DimRef& r : p) {
      ASSIGN_OR_RETURN(Value * s, ctx.Op("shape_of", {r.of}));
      ASSIGN_OR_RETURN(Value * d, ctx.Op("strided_slice", {s},
                                         {{"begin", std::vector<int64_t>{r.axis}},
                                          {"end", std::vector<int64_t>{r.axis + 1}}}));
      ASSIGN_OR_RETURN(v, ctx.Op("multiply", {v, d}));
    }
    parts.push_back(v);
  }
  ASSIGN_OR_RETURN(Value * shape, ctx.Op("concatenate", parts, {{"axis", int64_t{0}}}));
  return ctx.Op("dyn.reshape", {x, shape});
}

// One operand during the lowering: its value and the label of each axis.
struct Operand {
  Value* v;
  Labels labels;
};

absl::StatusOr<Operand> Permute(ImportContext& ctx, Operand x, const Labels& order) {
  std::vector<int64_t> axes;
  for (int l : order) {
    axes.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
  }
  bool identity = true;
  for (size_t i = 0; i < axes.size(); ++i)
    identity = identity && axes[i] == static_cast<int64_t>(i);
  if (identity) return Operand{x.v, order};
  ASSIGN_OR_RETURN(Value * t, ctx.Op("transpose", {x.v}, {{"axes", axes}}));
  return Operand{t, order};
}

// Sums the axes whose label `needed` lacks.
absl::StatusOr<Operand> SumUnneeded(ImportContext& ctx, Operand x, const Labels& needed) {
  std::vector<int64_t> axes;
  Labels kept;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (Contains(needed, x.labels[i])) {
      kept.push_back(x.labels[i]);
    } else {
      axes.push_back(static_cast<int64_t>(i));
    }
  }
  if (axes.empty()) return x;
  ASSIGN_OR_RETURN(Value * s, ctx.Op("sum", {x.v}, {{"axis", axes}, {"keepdims", false}}));
  return Operand{s, kept};
}

// Takes the diagonal of every label repeated in x (step 2).
// (Static dims of one label were checked equal before; run-time ones are not checked.)
absl::StatusOr<Operand> Diagonals(ImportContext& ctx, Operand x) {
  for (;;) {
    int i = -1, j = -1;
    for (size_t a = 0; a < x.labels.size() && i < 0; ++a) {
      for (size_t b = a + 1; b < x.labels.size(); ++b) {
        if (x.labels[a] == x.labels[b]) {
          i = static_cast<int>(a);
          j = static_cast<int>(b);
          break;
        }
      }
    }
    if (i < 0) return x;
    const int rank = static_cast<int>(x.labels.size());
    ASSIGN_OR_RETURN(Value * ii, DimIota(ctx, x.v, i));
    ASSIGN_OR_RETURN(Value * jj, DimIota(ctx, x.v, j));
    ASSIGN_OR_RETURN(ii, ctx.Op("expand_dims", {ii}, {{"axis", int64_t{1}}}));
    ASSIGN_OR_RETURN(jj, ctx.Op("expand_dims", {jj}, {{"axis", int64_t{0}}}));
    ASSIGN_OR_RETURN(Value * eye, ctx.Op("equal", {ii, jj}));  // [d, d]
    // Place the [d, d] mask at axes i and j of a rank-`rank` broadcastable shape.
    if (i > 0) {
      ASSIGN_OR_RETURN(
          eye, ctx.Op("expand_dims", {eye}, {{"axis", int64_t{0}}, {"num_newaxis", int64_t{i}}}));
    }
    if (j - i - 1 > 0) {
      ASSIGN_OR_RETURN(eye,
                       ctx.Op("expand_dims", {eye},
                              {{"axis", int64_t{i + 1}}, {"num_newaxis", int64_t{j - i - 1}}}));
    }
    if (rank - j - 1 > 0) {
      ASSIGN_OR_RETURN(eye,
                       ctx.Op("expand_dims", {eye},
                              {{"axis", int64_t{j + 1}}, {"num_newaxis", int64_t{rank - j - 1}}}));
    }
    ASSIGN_OR_RETURN(Value * masked, ctx.Op("where", {eye, x.v, ctx.ScalarLike(x.v, 0.0)}));
    ASSIGN_OR_RETURN(Value * s, ctx.Op("sum", {masked},
                                       {{"axis", std::vector<int64_t>{j}}, {"keepdims", false}}));
    x.labels.erase(x.labels.begin() + j);
    x.v = s;
  }
}

// Step 3: contracts a and b, keeping the labels in `keep`.
absl::StatusOr<Operand> Contract(ImportContext& ctx, Operand a, Operand b, const Labels& keep) {
  // An ellipsis dim summed out here that is 1 on one side only broadcasts (NumPy): drop it
  // from that side (a sum over a unit axis), so the other side sums it alone below.
  auto unit = [&](const Operand& o, int l) {
    const Type t = ctx.TypeOf(o.v);
    const auto at = std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin();
    return t.is_tensor() && at < t.rank() && t.shape()[at].is_constant() &&
           t.shape()[at].constant() == 1;
  };
  for (int l : Labels(a.labels)) {
    if (l < kFirstEllipsisDim || !Contains(b.labels, l) || Contains(keep, l)) continue;
    if (unit(a, l) == unit(b, l)) continue;
    Operand& side = unit(a, l) ? a : b;
    Labels others = side.labels;
    others.erase(std::find(others.begin(), others.end(), l));
    ASSIGN_OR_RETURN(side, SumUnneeded(ctx, side, others));
  }
  Labels need_a = keep, need_b = keep;
  need_a.insert(need_a.end(), b.labels.begin(), b.labels.end());
  need_b.insert(need_b.end(), a.labels.begin(), a.labels.end());
  ASSIGN_OR_RETURN(a, SumUnneeded(ctx, a, need_a));
  ASSIGN_OR_RETURN(b, SumUnneeded(ctx, b, need_b));
  Labels batch, contracted, a_own, b_own;
  for (int l : a.labels) {
    if (!Contains(b.labels, l)) {
      a_own.push_back(l);
    } else if (Contains(keep, l)) {
      batch.push_back(l);
    } else {
      contracted.push_back(l);
    }
  }
  for (int l : b.labels) {
    if (!Contains(a.labels, l)) b_own.push_back(l);
  }
  auto cat = [](std::initializer_list<const Labels*> parts) {
    Labels out;
    for (const Labels* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  ASSIGN_OR_RETURN(a, Permute(ctx, a, cat({&batch, &a_own, &contracted})));
  ASSIGN_OR_RETURN(b, Permute(ctx, b, cat({&batch, &contracted, &b_own})));
  const int nb = static_cast<int>(batch.size());
  const int na = static_cast<int>(a_own.size()), nc = static_cast<int>(contracted.size());
  auto refs = [](Value* v, int from, int count) {
    DimProduct p;
    for (int k = 0; k < count; ++k) p.push_back(DimRef{v, from + k});
    return p;
  };
  std::vector<DimProduct> ta, tb;
  for (int k = 0; k < nb; ++k) {
    ta.push_back(refs(a.v, k, 1));
    tb.push_back(refs(b.v, k, 1));
  }
  ta.push_back(refs(a.v, nb, na));
  ta.push_back(refs(a.v, nb + na, nc));
  tb.push_back(refs(b.v, nb, nc));
  tb.push_back(refs(b.v, nb + nc, static_cast<int>(b_own.size())));
  ASSIGN_OR_RETURN(Value * a3, ReshapeToProducts(ctx, a.v, ta));
  ASSIGN_OR_RETURN(Value * b3, ReshapeToProducts(ctx, b.v, tb));
  ASSIGN_OR_RETURN(Value * r, ctx.Op("nn.batch_matmul", {a3, b3}));
  std::vector<DimProduct> tr;
  for (int k = 0; k < nb; ++k) tr.push_back(refs(r, k, 1));
  for (int k = 0; k < na; ++k) tr.push_back(refs(a.v, nb + k, 1));
  for (size_t k = 0; k < b_own.size(); ++k)
    tr.push_back(refs(b.v, nb + nc + static_cast<int>(k), 1));
  ASSIGN_OR_RETURN(Value * out, ReshapeToProducts(ctx, r, tr));
  return Operand{out, cat({&batch, &a_own, &b_own})};
}

// Step 1: the operands with the label of each axis, and the output's labels.
struct Equation {
  std::string text;  // without spaces, for messages
  std::vector<Operand> ops;
  Labels output;
  int ellipsis_dims = 0;
};

absl::StatusOr<Equation> ParseEquation(ImportContext& ctx, const onnx::NodeProto& n,
                                       const Ins& in) {
  const auto* eq_attr = FindAttr(n, "equation");
  if (eq_attr == nullptr) return ctx.Error("needs the attribute 'equation'");
  std::string equation;
  for (char c : eq_attr->s()) {
    if (c != ' ') equation.push_back(c);
  }
  if (in.empty()) return ctx.Error("needs at least one input");
  std::vector<absl::string_view> sides = absl::StrSplit(equation, "->");
  if (sides.size() > 2) return ctx.Error(absl::StrCat("equation '", equation, "' has two '->'"));
  std::vector<absl::string_view> terms = absl::StrSplit(sides[0], ',');
  if (terms.size() != in.size()) {
    return ctx.Error(absl::StrFormat("equation '%s' has %d terms for %d inputs", equation,
                                     terms.size(), in.size()));
  }
  std::vector<Operand> ops;
  std::vector<Labels> parsed;
  int ellipsis_dims = 0;
  std::vector<int> own_ellipsis;
  for (size_t k = 0; k < terms.size(); ++k) {
    ASSIGN_OR_RETURN(Value * x, Need(ctx, in, k));
    ASSIGN_OR_RETURN(int rank, NeedRank(ctx, x));
    ASSIGN_OR_RETURN(Labels t, ParseTerm(ctx, terms[k], equation));
    const bool has_ellipsis = Contains(t, kEllipsisLabel);
    const int letters = static_cast<int>(t.size()) - (has_ellipsis ? 1 : 0);
    if (has_ellipsis ? letters > rank : letters != rank) {
      return ctx.Error(
          absl::StrFormat("equation '%s': term '%s' has %d subscripts for input %d of rank %d",
                          equation, terms[k], letters, k, rank));
    }
    own_ellipsis.push_back(has_ellipsis ? rank - letters : 0);
    ellipsis_dims = std::max(ellipsis_dims, own_ellipsis.back());
    parsed.push_back(std::move(t));
    ops.push_back(Operand{x, {}});
  }
  for (size_t k = 0; k < ops.size(); ++k) {
    ops[k].labels = ExpandEllipsis(parsed[k], own_ellipsis[k], ellipsis_dims);
  }
  Labels output;
  if (sides.size() == 2) {
    ASSIGN_OR_RETURN(Labels t, ParseTerm(ctx, sides[1], equation));
    output = ExpandEllipsis(t, ellipsis_dims, ellipsis_dims);
    for (size_t i = 0; i < output.size(); ++i) {
      bool found = false;
      for (const Operand& o : ops) found = found || Contains(o.labels, output[i]);
      if (!found || std::count(output.begin(), output.end(), output[i]) > 1) {
        return ctx.Error(absl::StrCat("equation '", equation, "': output subscript ",
                                      LabelName(output[i]),
                                      found ? " appears twice" : " is in no input"));
      }
    }
  } else {
    for (int j = 0; j < ellipsis_dims; ++j) output.push_back(kFirstEllipsisDim + j);
    for (int l = 0; l < kFirstEllipsisDim; ++l) {  // label order is ASCII order
      int uses = 0;
      for (const Operand& o : ops)
        uses += static_cast<int>(std::count(o.labels.begin(), o.labels.end(), l));
      if (uses == 1) output.push_back(l);
    }
  }
  return Equation{equation, std::move(ops), std::move(output), ellipsis_dims};
}

// Static dims of one label must agree (1 broadcasts for ellipsis dims only).
absl::Status CheckLabelDims(ImportContext& ctx, const Equation& eq) {
  const std::vector<Operand>& ops = eq.ops;
  for (int l = 0; l < kFirstEllipsisDim + eq.ellipsis_dims; ++l) {
    std::optional<int64_t> seen;
    for (const Operand& o : ops) {
      const Type t = ctx.TypeOf(o.v);
      if (!t.is_tensor()) continue;
      for (size_t a = 0; a < o.labels.size(); ++a) {
        if (o.labels[a] != l || !t.shape()[a].is_constant()) continue;
        const int64_t d = t.shape()[a].constant();
        if (l >= kFirstEllipsisDim && d == 1) continue;
        if (seen && *seen != d) {
          return ctx.Error(absl::StrFormat("equation '%s': one subscript %s spans dims %d and %d",
                                           eq.text, LabelName(l), *seen, d));
        }
        seen = d;
      }
    }
  }
  return absl::OkStatus();
}

Outs Einsum(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Equation eq, ParseEquation(ctx, n, in));
  RETURN_IF_ERROR(CheckLabelDims(ctx, eq));
  std::vector<Operand>& ops = eq.ops;
  const Labels& output = eq.output;
  // Step 2: diagonals, then the labels only this operand has and the output lacks.
  for (size_t k = 0; k < ops.size(); ++k) {
    ASSIGN_OR_RETURN(ops[k], Diagonals(ctx, ops[k]));
    Labels needed = output;
    for (size_t o = 0; o < ops.size(); ++o) {
      if (o != k) needed.insert(needed.end(), ops[o].labels.begin(), ops[o].labels.end());
    }
    ASSIGN_OR_RETURN(ops[k], SumUnneeded(ctx, ops[k], needed));
  }
  // Step 3: left to right.
  Operand acc = ops[0];
  for (size_t k = 1; k < ops.size(); ++k) {
    Labels keep = output;
    for (size_t o = k + 1; o < ops.size(); ++o) {
      keep.insert(keep.end(), ops[o].labels.begin(), ops[o].labels.end());
    }
    ASSIGN_OR_RETURN(acc, Contract(ctx, acc, ops[k], keep));
  }
  // Step 4.
  ASSIGN_OR_RETURN(acc, SumUnneeded(ctx, acc, output));
  ASSIGN_OR_RETURN(acc, Permute(ctx, acc, output));
  return std::vector<Value*>{acc.v};
}

}  // namespace

void AddEinsumConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"Einsum", Einsum},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
