// Elementwise and broadcasting ops: unary math, binary arithmetic with NumPy broadcasting,
// comparisons, cast, where. Output shapes come from input shapes only (every input `shape`), so
// none of these ever needs a copy for shape computation. Integer binary ops also propagate symbolic
// values, which lets type inference see through shape arithmetic (`shape_of(x)[0] * 4`).
#include "shape_funcs/elementwise.h"

#include <cmath>
#include <functional>

#include "absl/strings/str_format.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using shape_rules::One;

absl::StatusOr<std::vector<Type>> UnaryRule(ShapeContext& ctx) {
  ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
  return One(Type::Tensor(ctx.dtype(0), {shape.begin(), shape.end()}));
}

absl::StatusOr<std::vector<Type>> BinaryRule(ShapeContext& ctx, bool boolean_result,
                                             bool integer_only) {
  if (ctx.dtype(0) != ctx.dtype(1)) {
    return ctx.Error(absl::StrFormat("operand dtypes differ: %s vs %s", DTypeName(ctx.dtype(0)),
                                     DTypeName(ctx.dtype(1))));
  }
  if (integer_only && !IsInteger(ctx.dtype(0))) {
    return ctx.Error(absl::StrFormat("operands must be integers, got %s", DTypeName(ctx.dtype(0))));
  }
  ASSIGN_OR_RETURN(auto a, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto b, ctx.Shape(1));
  ASSIGN_OR_RETURN(auto out, shape_rules::BroadcastShapes(a, b, ctx));
  return One(Type::Tensor(boolean_result ? DType::kBool : ctx.dtype(0), std::move(out)));
}

using UnaryFn = std::function<double(double)>;
using BinaryFn = std::function<double(double, double)>;
using IntBinaryFn = std::function<std::optional<int64_t>(int64_t, int64_t)>;

ReferenceKernel UnaryKernel(UnaryFn fn) {
  return [fn](absl::Span<const Tensor> in, const Attrs&,
              absl::Span<const Type> out_types) -> absl::StatusOr<std::vector<Tensor>> {
    Tensor out = Tensor::Zeros(out_types[0].dtype(), shape_rules::ConcreteShape(out_types[0]));
    for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, fn(in[0].GetDouble(i)));
    return std::vector<Tensor>{std::move(out)};
  };
}

// Integer arithmetic on int64 values wraps in two's complement (as ONNX runtimes and numpy do)
// instead of overflowing, which is undefined behaviour in C++.
int64_t WrapAdd(int64_t x, int64_t y) {
  int64_t r;
  __builtin_add_overflow(x, y, &r);
  return r;
}
int64_t WrapSub(int64_t x, int64_t y) {
  int64_t r;
  __builtin_sub_overflow(x, y, &r);
  return r;
}
int64_t WrapMul(int64_t x, int64_t y) {
  int64_t r;
  __builtin_mul_overflow(x, y, &r);
  return r;
}
// x / y truncating toward zero, for y != 0; INT64_MIN / -1 wraps to INT64_MIN.
int64_t TruncDivWrapping(int64_t x, int64_t y) {
  if (y == -1) return WrapSub(0, x);
  return x / y;
}

// x mod y with the sign of y (floor modulo, Python's %): C's fmod, moved by y when the signs
// differ. Exact in double (fmod is), unlike x - floor(x / y) * y.
double FloorMod(double x, double y) {
  const double r = std::fmod(x, y);
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
// The integer forms, for y != 0 (INT64_MIN % -1 is 0, never C++'s UB/SIGFPE).
int64_t TruncModInt(int64_t x, int64_t y) { return y == -1 ? 0 : x % y; }
int64_t FloorModInt(int64_t x, int64_t y) {
  const int64_t r = TruncModInt(x, y);
  return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

// Integer tensors are computed in int64 (exact), floats in double. u64 values are their bit
// patterns in int64, exact for the wrapping ops; those that order or divide use u64_fn.
ReferenceKernel BinaryKernel(BinaryFn fn, IntBinaryFn int_fn, IntBinaryFn u64_fn) {
  return [fn, int_fn, u64_fn](absl::Span<const Tensor> in, const Attrs&,
                      absl::Span<const Type> out_types) -> absl::StatusOr<std::vector<Tensor>> {
    const std::vector<int64_t> shape = shape_rules::ConcreteShape(out_types[0]);
    Tensor out = Tensor::Zeros(out_types[0].dtype(), shape);
    const bool integer = !IsFloat(in[0].dtype());
    const IntBinaryFn& ifn = in[0].dtype() == DType::kU64 ? u64_fn : int_fn;
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      const int64_t ia = shape_rules::BroadcastSourceIndex(index, in[0].shape());
      const int64_t ib = shape_rules::BroadcastSourceIndex(index, in[1].shape());
      if (integer && ifn) {
        std::optional<int64_t> r = ifn(in[0].GetInt64(ia), in[1].GetInt64(ib));
        if (!r) return absl::InvalidArgumentError("integer division by zero");
        out.SetInt64(i, *r);
      } else {
        out.SetDouble(i, fn(in[0].GetDouble(ia), in[1].GetDouble(ib)));
      }
      shape_rules::NextIndex(index, shape);
    }
    return std::vector<Tensor>{std::move(out)};
  };
}

// Symbolic values of integer binary ops on 0-d/1-d operands (shape arithmetic).
SymbolicValueRule BinarySymbolic(std::function<std::optional<DimExpr>(DimExpr, DimExpr)> fn) {
  return [fn](ShapeContext& ctx) -> std::optional<std::vector<std::vector<DimExpr>>> {
    if (!IsInteger(ctx.dtype(0)) || ctx.rank(0) > 1 || ctx.rank(1) > 1) return std::nullopt;
    auto a = ctx.IntValues(0);
    auto b = ctx.IntValues(1);
    if (!a.ok() || !b.ok() || !a->has_value() || !b->has_value()) return std::nullopt;
    const auto& av = **a;
    const auto& bv = **b;
    if (av.size() != bv.size() && av.size() != 1 && bv.size() != 1) return std::nullopt;
    // Broadcasting: an empty operand against a one-element one gives an empty result (never an
    // element read from the empty side).
    const size_t n = av.empty() || bv.empty() ? 0 : std::max(av.size(), bv.size());
    std::vector<DimExpr> out;
    for (size_t i = 0; i < n; ++i) {
      auto r = fn(av[av.size() == 1 ? 0 : i], bv[bv.size() == 1 ? 0 : i]);
      if (!r) return std::nullopt;
      out.push_back(*r);
    }
    return std::vector<std::vector<DimExpr>>{std::move(out)};
  };
}

// where(cond, x, y): the three shapes broadcast together; x and y share the dtype.
// Symbolic values of where on 0-d/1-d shape values: each element picks x or y by a condition
// element known to be 0 or 1; an unknown condition still gives x where x and y agree
// (`where(equal(d, 1), 1, d)` is not decidable, `where(c, d, d)` is).
std::optional<std::vector<std::vector<DimExpr>>> WhereSymbolic(ShapeContext& ctx) {
  if (!IsInteger(ctx.dtype(1)) || ctx.rank(0) > 1 || ctx.rank(1) > 1 || ctx.rank(2) > 1) {
    return std::nullopt;
  }
  auto c = ctx.IntValues(0);
  auto x = ctx.IntValues(1);
  auto y = ctx.IntValues(2);
  if (!x.ok() || !y.ok() || !x->has_value() || !y->has_value() || !c.ok()) return std::nullopt;
  const std::vector<DimExpr>& xv = **x;
  const std::vector<DimExpr>& yv = **y;
  std::vector<DimExpr> cv;
  if (c->has_value()) {
    cv = **c;
  } else {
    auto n = ctx.NumValues(0);
    if (!n.ok() || !n->is_constant()) return std::nullopt;
    cv.assign(n->constant(), DimExpr::Unknown());
  }
  size_t n = 1;
  for (size_t len : {cv.size(), xv.size(), yv.size()}) {
    if (len == 0) return std::nullopt;  // empty shape values: nothing to learn
    if (len != 1 && n != 1 && len != n) return std::nullopt;
    if (len != 1) n = len;
  }
  auto at = [](const std::vector<DimExpr>& v, size_t i) { return v[v.size() == 1 ? 0 : i]; };
  std::vector<DimExpr> out;
  for (size_t i = 0; i < n; ++i) {
    const DimExpr ci = at(cv, i), xi = at(xv, i), yi = at(yv, i);
    if (ci.is_constant()) {
      out.push_back(ci.constant() != 0 ? xi : yi);
    } else if (xi == yi && !xi.is_unknown()) {
      out.push_back(xi);
    } else {
      return std::nullopt;
    }
  }
  return std::vector<std::vector<DimExpr>>{std::move(out)};
}

absl::StatusOr<std::vector<Type>> WhereRule(ShapeContext& ctx) {
  if (ctx.dtype(1) != ctx.dtype(2)) {
    return ctx.Error(absl::StrFormat("x and y dtypes differ: %s vs %s", DTypeName(ctx.dtype(1)),
                                     DTypeName(ctx.dtype(2))));
  }
  ASSIGN_OR_RETURN(auto c, ctx.Shape(0));
  ASSIGN_OR_RETURN(auto x, ctx.Shape(1));
  ASSIGN_OR_RETURN(auto y, ctx.Shape(2));
  ASSIGN_OR_RETURN(auto cx, shape_rules::BroadcastShapes(c, x, ctx));
  ASSIGN_OR_RETURN(auto out, shape_rules::BroadcastShapes(cx, y, ctx));
  return One(Type::Tensor(ctx.dtype(1), std::move(out)));
}

absl::StatusOr<std::vector<Tensor>> WhereKernel(absl::Span<const Tensor> in, const Attrs&,
                                                absl::Span<const Type> out_types) {
  const std::vector<int64_t> shape = shape_rules::ConcreteShape(out_types[0]);
  Tensor out = Tensor::Zeros(out_types[0].dtype(), shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const bool take_x =
        in[0].GetDouble(shape_rules::BroadcastSourceIndex(index, in[0].shape())) != 0;
    const Tensor& src = take_x ? in[1] : in[2];
    shape_rules::CopyElements(src, shape_rules::BroadcastSourceIndex(index, src.shape()), out, i);
    shape_rules::NextIndex(index, shape);
  }
  return std::vector<Tensor>{std::move(out)};
}

void RegisterUnary(OpRegistry::Builder& b, std::string name, UnaryFn fn, std::string doc) {
  b.Register(std::move(name))
      .Input("data", InputDep::kShape)
      .Pattern(FusionPattern::kElementwise)
      .Doc(std::move(doc))
      .Rule(UnaryRule)
      .Reference(UnaryKernel(std::move(fn)));
}

void RegisterBinary(OpRegistry::Builder& b, std::string name, BinaryFn fn, IntBinaryFn int_fn,
                    IntBinaryFn u64_fn, std::function<std::optional<DimExpr>(DimExpr, DimExpr)> sym,
                    bool boolean_result, bool integer_only, std::string doc) {
  OpDefBuilder op = b.Register(std::move(name));
  op.Input("lhs", InputDep::kShape)
      .Input("rhs", InputDep::kShape)
      .Pattern(FusionPattern::kBroadcast)
      .Doc(std::move(doc))
      .Rule([boolean_result, integer_only](ShapeContext& ctx) {
        return BinaryRule(ctx, boolean_result, integer_only);
      })
      .Reference(BinaryKernel(std::move(fn), std::move(int_fn), std::move(u64_fn)));
  if (sym) op.SymbolicValues(BinarySymbolic(std::move(sym)));
}


// The integer semantics of a binary op (nullopt: none, the reference computes in double).
// Integer arithmetic wraps (two's complement) like the kernels; division truncates toward
// zero, as in C, ONNX and TVM's `divide`, and the one quotient that does not fit, INT64_MIN /
// -1, wraps to INT64_MIN (never C++'s UB/SIGFPE); x / 0 has no integer result.
// With u64, the operands are u64 bit patterns: the ops that order or divide compare and divide
// them unsigned (floor and truncated modulo agree there), the rest wrap alike.
IntBinaryFn IntSemantics(OpId id, bool u64) {
  using U = uint64_t;
  const auto unsigned_fn = [](std::function<std::optional<U>(U, U)> f) -> IntBinaryFn {
    return [f](int64_t x, int64_t y) -> std::optional<int64_t> {
      std::optional<U> r = f(static_cast<U>(x), static_cast<U>(y));
      if (!r) return std::nullopt;
      return static_cast<int64_t>(*r);
    };
  };
  if (u64) {
    switch (id) {
      case OpId::kDivide:
        return unsigned_fn([](U x, U y) -> std::optional<U> {
          if (y == 0) return std::nullopt;
          return x / y;
        });
      case OpId::kMod:
      case OpId::kFmod:
        return unsigned_fn([](U x, U y) -> std::optional<U> {
          if (y == 0) return std::nullopt;
          return x % y;
        });
      case OpId::kMaximum: return unsigned_fn([](U x, U y) -> std::optional<U> { return std::max(x, y); });
      case OpId::kMinimum: return unsigned_fn([](U x, U y) -> std::optional<U> { return std::min(x, y); });
      case OpId::kGreater: return unsigned_fn([](U x, U y) -> std::optional<U> { return x > y; });
      case OpId::kLess: return unsigned_fn([](U x, U y) -> std::optional<U> { return x < y; });
      case OpId::kRightShift:  // logical; y is unsigned too, so "negative" amounts are huge
        return unsigned_fn([](U x, U y) -> std::optional<U> { return y >= 64 ? 0 : x >> y; });
      default: break;
    }
  }
  switch (id) {
    case OpId::kAdd: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return WrapAdd(x, y); };
    case OpId::kSubtract: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return WrapSub(x, y); };
    case OpId::kMultiply: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return WrapMul(x, y); };
    case OpId::kDivide:
      return [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y == 0) return std::nullopt;
        return TruncDivWrapping(x, y);
      };
    case OpId::kMod:
      return [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y == 0) return std::nullopt;
        return FloorModInt(x, y);
      };
    case OpId::kFmod:
      return [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y == 0) return std::nullopt;
        return TruncModInt(x, y);
      };
    case OpId::kMaximum: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return std::max(x, y); };
    case OpId::kMinimum: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return std::min(x, y); };
    case OpId::kEqual: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return x == y; };
    case OpId::kGreater: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return x > y; };
    case OpId::kLess: return [](int64_t x, int64_t y) -> std::optional<int64_t> { return x < y; };
    // Shifts of a value held in int64 (zero-extended for u8-u32, so arithmetic = logical there);
    // the store truncates to the dtype, which turns shifts by [bits, 64) into 0 as well.
    case OpId::kLeftShift:
      return [](int64_t x, int64_t y) -> std::optional<int64_t> {
        if (y < 0 || y >= 64) return 0;
        return static_cast<int64_t>(static_cast<uint64_t>(x) << y);
      };
    case OpId::kRightShift:
      return [](int64_t x, int64_t y) -> std::optional<int64_t> {
        return x >> (y < 0 || y >= 64 ? 63 : y);
      };
    default: return nullptr;
  }
}

// x < y (swap: y < x) where the symbols' facts decide it: 1 when x + 1 <= y is provable, 0 when
// y <= x is.
std::function<std::optional<DimExpr>(DimExpr, DimExpr)> SymbolicLess(bool swap) {
  return [swap](DimExpr x, DimExpr y) -> std::optional<DimExpr> {
    if (swap) std::swap(x, y);
    if (x.is_unknown() || y.is_unknown()) return std::nullopt;
    if (shape_rules::ProvablyLessOrEqual(x + 1, y)) return DimExpr(1);
    if (shape_rules::ProvablyLessOrEqual(y, x)) return DimExpr(0);
    return std::nullopt;
  };
}

// The symbolic-value semantics of a binary op on shape values (nullptr: none).
std::function<std::optional<DimExpr>(DimExpr, DimExpr)> SymbolicSemantics(OpId id) {
  switch (id) {
    case OpId::kAdd: return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> { return x + y; };
    case OpId::kSubtract: return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> { return x - y; };
    case OpId::kMultiply: return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> { return x * y; };
    case OpId::kDivide:
      return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> {
        // Integer division truncates toward zero. By a positive constant that is floor
        // division where x >= 0 is provable, and max(x, 0)//y - max(-x, 0)//y otherwise: a
        // difference of shapes (U-Net's `skip.size(2) - x.size(2)`) may be negative.
        if (x.is_constant() && y.is_constant()) {
          if (y.constant() == 0) return std::nullopt;
          return DimExpr(TruncDivWrapping(x.constant(), y.constant()));
        }
        if (y.is_constant() && y.constant() > 0) {
          if (DimExpr::ProveNonNegative(x)) return DimExpr::FloorDiv(x, y);
          return DimExpr::FloorDiv(DimExpr::Max(x, 0), y) -
                 DimExpr::FloorDiv(DimExpr::Max(DimExpr(0) - x, 0), y);
        }
        // Both >= 0: truncation is floor division wherever it is defined (`x.size(0) //
        // num_windows` is `batch` when x.size(0) is `batch * windows`).
        if (!y.is_constant() && DimExpr::ProveNonNegative(x) && DimExpr::ProveNonNegative(y)) {
          return DimExpr::FloorDiv(x, y);
        }
        return std::nullopt;
      };
    case OpId::kMod:
      return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> {
        if (x.is_constant() && y.is_constant()) {
          if (y.constant() == 0) return std::nullopt;
          return DimExpr(FloorModInt(x.constant(), y.constant()));
        }
        // Floor modulo is x - floor(x / y) * y for any integer x once y > 0.
        if (y.is_constant() && y.constant() > 0) return x - DimExpr::FloorDiv(x, y) * y;
        return std::nullopt;
      };
    case OpId::kFmod:
      return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> {
        if (!x.is_constant() || !y.is_constant() || y.constant() == 0) return std::nullopt;
        return DimExpr(TruncModInt(x.constant(), y.constant()));
      };
    case OpId::kMaximum: return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> { return DimExpr::Max(x, y); };
    case OpId::kMinimum: return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> { return DimExpr::Min(x, y); };
    // Comparisons decide only what holds for every binding of the symbols: symbols are dims,
    // so >= 0 (`equal(batch, -1)` is false, `greater(n + 1, n)` is true); anything else (is
    // `batch` 1?) stays unknown and the op runs.
    case OpId::kEqual:
      return [](DimExpr x, DimExpr y) -> std::optional<DimExpr> {
        if (x.is_unknown() || y.is_unknown()) return std::nullopt;
        if (x == y) return DimExpr(1);
        if (shape_rules::ProvablyLessOrEqual(x + 1, y) || shape_rules::ProvablyLessOrEqual(y + 1, x)) {
          return DimExpr(0);
        }
        return std::nullopt;
      };
    case OpId::kGreater: return SymbolicLess(/*swap=*/true);
    case OpId::kLess: return SymbolicLess(/*swap=*/false);
    default: return nullptr;
  }
}

}  // namespace

void RegisterElementwiseOps(OpRegistry::Builder& b) {
  // The unary, binary and compare ops: one row each in elementwise_ops.def.
#define HETPASS_UNARY(id, name, cls, expr, doc) \
  RegisterUnary(b, name, [](double x) { return expr; }, doc);
#define HETPASS_BINARY(id, name, cls, expr, doc)                                             \
  RegisterBinary(b, name, [](double x, double y) { return expr; }, IntSemantics(OpId::id, false), \
                 IntSemantics(OpId::id, true), SymbolicSemantics(OpId::id), false,              \
                 ElementwiseDTypes::cls == ElementwiseDTypes::kInteger, doc);
#define HETPASS_COMPARE(id, name, expr, doc)                                                  \
  RegisterBinary(b, name, [](double x, double y) { return (expr) ? 1.0 : 0.0; },            \
                 IntSemantics(OpId::id, false), IntSemantics(OpId::id, true),                \
                 SymbolicSemantics(OpId::id), true, false, doc);
#include "passes/shape_funcs/elementwise_ops.def"

  b.Register("where")
      .Input("condition", InputDep::kShape)
      .Input("x", InputDep::kShape)
      .Input("y", InputDep::kShape)
      .Pattern(FusionPattern::kBroadcast)
      .Doc("condition ? x : y with broadcasting of all three")
      .Rule(WhereRule)
      .SymbolicValues(WhereSymbolic)
      .Reference(WhereKernel);

  b.Register("cast")
      .Input("data", InputDep::kShape)
      .Attr("dtype", AttrType::kDType)
      .Pattern(FusionPattern::kElementwise)
      .Doc("converts elements to `dtype`")
      .Rule([](ShapeContext& ctx) -> absl::StatusOr<std::vector<Type>> {
        ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
        return One(Type::Tensor(ctx.attrs().GetDType("dtype"), {shape.begin(), shape.end()}));
      })
      .SymbolicValues([](ShapeContext& ctx) -> std::optional<std::vector<std::vector<DimExpr>>> {
        if (!IsInteger(ctx.dtype(0)) || !IsInteger(ctx.attrs().GetDType("dtype"))) {
          return std::nullopt;
        }
        auto v = ctx.IntValues(0);
        if (!v.ok() || !v->has_value()) return std::nullopt;
        return std::vector<std::vector<DimExpr>>{**v};
      })
      .Reference([](absl::Span<const Tensor> in, const Attrs&,
                    absl::Span<const Type> out_types) -> absl::StatusOr<std::vector<Tensor>> {
        Tensor out = Tensor::Zeros(out_types[0].dtype(), in[0].shape());
        const bool int_path = !IsFloat(in[0].dtype()) && !IsFloat(out.dtype());
        for (int64_t i = 0; i < out.num_elements(); ++i) {
          if (int_path) {
            out.SetInt64(i, in[0].GetInt64(i));
          } else {
            out.SetDouble(i, in[0].GetDouble(i));
          }
        }
        return std::vector<Tensor>{std::move(out)};
      });
}

}  // namespace hetpass
