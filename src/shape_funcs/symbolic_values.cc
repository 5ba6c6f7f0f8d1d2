#include "shape_funcs/symbolic_values.h"

#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "passes/shape_funcs/op_ids.h"

namespace hetpass {

const Tensor* ConstantData(const Value* v) {
  const Node* p = v->producer();
  return (p != nullptr && p->kind() == NodeKind::kConstant) ? &p->constant_value() : nullptr;
}

std::optional<IntTable> StaticIntTable(ShapeContext& ctx, int i) {
  if (!IsInteger(ctx.dtype(i))) return std::nullopt;
  auto dims = ctx.Shape(i);
  if (!dims.ok()) return std::nullopt;
  IntTable t;
  int64_t count = 1;
  for (const DimExpr& d : *dims) {
    if (!d.is_constant() || d.constant() < 0) return std::nullopt;
    t.shape.push_back(d.constant());
    count *= d.constant();
    if (count > kMaxSymbolicElements) return std::nullopt;  // data, not a shape table
  }
  auto v = ctx.IntValues(i);
  if (!v.ok() || !v->has_value() || static_cast<int64_t>((*v)->size()) != count) {
    return std::nullopt;
  }
  t.values = **std::move(v);
  return t;
}

const std::vector<DimExpr>* SymbolicValues::Find(const Value* v) const {
  auto it = map_.find(v);
  return it == map_.end() ? nullptr : &it->second;
}

// A float tensor cast from integers with symbolic values holds those integers (exactly, up to
// the float's integer range: ShapeContext::IntValues records that assumption). Exporters write
// `torch.arange(h, dtype=float32)` as Range(0.0, Cast(h), 1.0); seeing through the cast gives the
// range its length `h` instead of `?`. Only shape rules see it (InputsOf with through_casts, as
// infer-types asks): float tensors carry no symbolic values themselves, and symbolic-value
// rules, whose integer arithmetic would misread a float operand, never get it.
const std::vector<DimExpr>* SymbolicValues::FindThroughIntToFloatCast(const Value* v) const {
  if (!v->type().is_tensor() || !IsFloat(v->type().dtype())) return nullptr;
  const Node* p = v->producer();
  if (p == nullptr || p->kind() != NodeKind::kCall || p->op() == nullptr ||
      OpIdOf(*p->op()) != OpId::kCast || p->num_operands() != 1) {
    return nullptr;
  }
  const Value* src = p->operand(0);
  if (!src->type().is_tensor() || !IsInteger(src->type().dtype())) return nullptr;
  return Find(src);
}

std::vector<ShapeInput> SymbolicValues::InputsOf(const Node& node, bool through_casts) const {
  std::vector<ShapeInput> inputs;
  inputs.reserve(node.num_operands());
  for (const Value* v : node.operands()) {
    const std::vector<DimExpr>* sym = Find(v);
    if (sym == nullptr && through_casts) sym = FindThroughIntToFloatCast(v);
    inputs.push_back(ShapeInput{v->type(), ConstantData(v), sym});
  }
  return inputs;
}

namespace {

// Integer bits a float dtype holds exactly (its significand).
int SignificandBits(DType t) {
  switch (t) {
    case DType::kF64: return 53;
    case DType::kF32: return 24;
    case DType::kF16: return 11;
    default: return 8;  // bf16
  }
}

// A float constant scalar (or one-element tensor) holding a positive integer below 2^24.
std::optional<int64_t> IntegralFloatConstant(const Value* v) {
  const Tensor* t = ConstantData(v);
  if (t == nullptr || t->num_elements() != 1 || !IsFloat(t->dtype())) return std::nullopt;
  const double x = t->GetDouble(0);
  if (!(x >= 1 && x <= (1 << 24)) || x != static_cast<double>(static_cast<int64_t>(x))) {
    return std::nullopt;
  }
  return static_cast<int64_t>(x);
}

}  // namespace

void SymbolicValues::PropagateFraction(const Node& node, std::vector<Assumption>* assumptions,
                                       const std::set<std::string>* checkable) {
  if (node.kind() != NodeKind::kCall || node.num_results() != 1) return;
  const Value* out = node.result(0);
  const Type& t = out->type();
  if (!t.is_tensor() || !t.is_static()) return;
  const OpId op = OpIdOf(*node.op());
  auto fraction_of = [&](int i) -> const Fraction* {
    auto it = fractions_.find(node.operand(i));
    return it == fractions_.end() ? nullptr : &it->second;
  };
  if (op == OpId::kCast && IsFloat(t.dtype())) {
    const Value* src = node.operand(0);
    if (!src->type().is_tensor() || !IsInteger(src->type().dtype())) return;
    const std::vector<DimExpr>* v = Find(src);
    if (v == nullptr) return;
    const int bits = SignificandBits(t.dtype());
    for (const DimExpr& d : *v) {
      if (d.is_unknown()) return;  // nothing to follow, nothing the VM could check
      // A constant the float cannot hold exactly ends the trail (no check could mend it).
      if (d.is_constant() && (d.constant() >= (int64_t{1} << bits) ||
                              d.constant() <= -(int64_t{1} << bits))) {
        return;
      }
      std::set<std::string> syms;
      d.CollectSymbols(&syms);
      for (const std::string& sym : syms) {
        if (checkable == nullptr || !checkable->contains(sym)) return;
      }
    }
    Fraction f;
    f.num = *v;
    f.bits = bits;
    for (const DimExpr& d : *v) {
      if (!d.is_constant()) f.exact.push_back(d);
    }
    fractions_[out] = std::move(f);
    return;
  }
  if (!IsFloat(t.dtype()) && op != OpId::kCast) return;
  if ((op == OpId::kDivide || op == OpId::kMultiply) && node.num_operands() == 2) {
    for (int side = 0; side < (op == OpId::kMultiply ? 2 : 1); ++side) {
      const Fraction* a = fraction_of(side);
      const std::optional<int64_t> c = IntegralFloatConstant(node.operand(1 - side));
      // Only an integer is divided or multiplied: one rounding step from an exact value keeps
      // ceil/floor exact, a second one (x / a / b, (x / a) * b) may not.
      if (a == nullptr || !c || a->den != 1) continue;
      Fraction f = *a;
      if (op == OpId::kDivide) {
        if (__builtin_mul_overflow(f.den, *c, &f.den)) return;
      } else {
        // The product must be exact in the float too.
        for (DimExpr& d : f.num) {
          d = d * *c;
          if (!d.is_constant()) f.exact.push_back(d);
        }
      }
      fractions_[out] = std::move(f);
      return;
    }
    return;
  }
  if (op == OpId::kCeil || op == OpId::kFloor) {
    const Fraction* a = fraction_of(0);
    if (a == nullptr) return;
    Fraction f = *a;
    for (DimExpr& d : f.num) {
      d = op == OpId::kCeil ? DimExpr::CeilDiv(d, f.den) : DimExpr::FloorDiv(d, f.den);
    }
    f.den = 1;
    fractions_[out] = std::move(f);
    return;
  }
  if ((op == OpId::kMax || op == OpId::kMin) && t.rank() <= 1 && t.NumElements() == DimExpr(1)) {
    // A reduction to one element (torchvision's max over the batch's image sizes).
    const Fraction* a = fraction_of(0);
    if (a == nullptr || a->num.empty()) return;
    Fraction f = *a;
    DimExpr acc = f.num[0];
    for (size_t i = 1; i < f.num.size(); ++i) {
      acc = op == OpId::kMax ? DimExpr::Max(acc, f.num[i]) : DimExpr::Min(acc, f.num[i]);
    }
    f.num = {acc};
    fractions_[out] = std::move(f);
    return;
  }
  if (op == OpId::kCast && IsInteger(t.dtype()) && CarriesSymbolicValues(t)) {
    const Fraction* a = fraction_of(0);
    if (a == nullptr || static_cast<int64_t>(a->num.size()) > kMaxSymbolicElements) return;
    std::vector<DimExpr> values;
    for (const DimExpr& d : a->num) {
      // The cast truncates toward zero: floor division where the fraction is >= 0.
      if (d.is_unknown() || (a->den != 1 && !DimExpr::ProveNonNegative(d))) return;
      values.push_back(a->den == 1 ? d : DimExpr::FloorDiv(d, a->den));
    }
    // The integers that went in were exact in the float, and so was every quotient (a correctly
    // rounded division of integers below 2^bits lands on the same side of every integer).
    for (const DimExpr& d : a->exact) {
      Assumption e;
      e.kind = Assumption::Kind::kLe;
      e.lhs = d;
      e.rhs = DimExpr((int64_t{1} << a->bits) - 1);
      e.reason = absl::StrFormat("the cast to %s reads %s through %s arithmetic, exact below 2^%d",
                                 DTypeName(t.dtype()), d.ToString(),
                                 DTypeName(node.operand(0)->type().dtype()), a->bits);
      assumptions->push_back(std::move(e));
    }
    map_[out] = std::move(values);
  }
}

void SymbolicValues::Propagate(const Node& node, std::vector<Assumption>* assumptions,
                               const std::set<std::string>* checkable) {
  if (assumptions != nullptr && node.kind() == NodeKind::kCall) {
    PropagateFraction(node, assumptions, checkable);
  }
  if (node.kind() != NodeKind::kCall || !node.op()->symbolic_value_rule()) return;
  for (const Value* v : node.operands()) {
    if (!v->type().is_tensor()) return;
  }
  // Most calls compute float tensors, which carry no values: no rule to run (an elementwise
  // op has a rule for its integer uses, and infer-types asks for every call).
  bool any_carries = false;
  for (const auto& r : node.results()) any_carries = any_carries || CarriesSymbolicValues(r->type());
  if (!any_carries) return;
  ShapeContext ctx(*node.op(), node.attrs(), InputsOf(node), /*enforce_mask=*/false);
  auto values = node.op()->symbolic_value_rule()(ctx);
  if (!values || static_cast<int>(values->size()) != node.num_results()) return;
  for (int i = 0; i < node.num_results(); ++i) {
    const Type& t = node.result(i)->type();
    std::vector<DimExpr>& vals = (*values)[i];
    if (!CarriesSymbolicValues(t)) continue;
    if (static_cast<int64_t>(vals.size()) > kMaxSymbolicElements) continue;
    // The contents must agree with the static element count.
    const DimExpr n = t.NumElements();
    if (n.is_constant() && n.constant() != static_cast<int64_t>(vals.size())) continue;
    map_[node.result(i)] = std::move(vals);
  }
}

}  // namespace hetpass
