// Symbolic tensor dimensions.
//
// A dimension is a static integer, an expression over named symbols (`n`, `n*4`, `(h + 1)//2`,
// `min(k, n)`), or unknown (`?`). Every DimExpr is kept in one canonical form, so structural
// equality is semantic equality for the polynomial part:
//   - constants are stored inline (no allocation: concrete shape functions stay cheap);
//   - +, -, * are normalised to a sum of terms `coeff * atom * atom ...` with a constant part;
//     terms are ordered by a total order on atoms that depends on names only (deterministic);
//   - atoms are symbols and the non-polynomial operators floordiv, mod, min and max, whose
//     operands are themselves canonical; they simplify when the divisor divides a term
//     (`(n*4 + 3)//4 == n`), when operands are constant, or when min/max operands differ by a
//     constant;
//   - min, max, floordiv and mod also simplify by what is provable about their operands: every
//     symbol is a dimension, so it is >= 0, and a DimFacts adds more (`seq <= 128` from an
//     assumption). `max(0, n - 2)` stays, `max(0, n + 2)` is `n + 2`, `min(n, max(0, n - 2))` is
//     `max(0, n - 2)`, `(x//2 + 1)//2` is `(x + 2)//4`. The constructors use the symbols' signs
//     only; Simplify(facts) rebuilds an expression with the facts of a function;
//   - anything combined with an unknown dimension is unknown.
#ifndef HETPASS_IR_DIM_EXPR_H_
#define HETPASS_IR_DIM_EXPR_H_

#include <cstdint>
#include <memory>
#include <set>
#include <ostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hetpass {

struct DimNode;
class DimFacts;

// An interval of values; kNegInf / kPosInf (INT64_MIN / INT64_MAX) stand for "unbounded".
struct DimBounds {
  static constexpr int64_t kNegInf = INT64_MIN;
  static constexpr int64_t kPosInf = INT64_MAX;
  int64_t lo = kNegInf;
  int64_t hi = kPosInf;
};

class DimExpr {
 public:
  enum class Kind { kConstant, kSymbol, kUnknown, kSum, kFloorDiv, kMod, kMin, kMax };

  DimExpr() = default;  // the constant 0
  DimExpr(int64_t value) : value_(value) {}  // NOLINT: implicit on purpose, dims are mostly ints
  static DimExpr Symbol(absl::string_view name);
  static DimExpr Unknown();

  Kind kind() const;
  bool is_constant() const { return node_ == nullptr; }
  bool is_unknown() const { return kind() == Kind::kUnknown; }
  bool is_symbol() const { return kind() == Kind::kSymbol; }
  int64_t constant() const { return value_; }  // valid when is_constant()
  const std::string& symbol_name() const;      // valid when is_symbol()
  // True if no symbol and no unknown occurs (then it is a constant, by canonicalisation).
  bool is_static() const { return is_constant(); }
  // True if the expression contains an unknown anywhere.
  bool has_unknown() const { return is_unknown(); }  // unknown absorbs everything

  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a) { return DimExpr(0) - a; }
  // With `facts`, what they prove simplifies too (see DimFacts); without, symbols are >= 0.
  static DimExpr FloorDiv(const DimExpr& a, const DimExpr& b, const DimFacts* facts = nullptr);
  static DimExpr Mod(const DimExpr& a, const DimExpr& b, const DimFacts* facts = nullptr);
  static DimExpr Min(const DimExpr& a, const DimExpr& b, const DimFacts* facts = nullptr);
  static DimExpr Max(const DimExpr& a, const DimExpr& b, const DimFacts* facts = nullptr);
  // Ceiling division, expressed as -((-a) // b).
  static DimExpr CeilDiv(const DimExpr& a, const DimExpr& b, const DimFacts* facts = nullptr);

  // Interval arithmetic over the symbols' bounds ([0, +inf) unless facts say more). Sound:
  // every value the expression takes lies in the interval (overflow widens to unbounded).
  DimBounds Bounds(const DimFacts* facts = nullptr) const;
  // Whether `e >= 0` (`a <= b`) holds for every value of the symbols allowed by the facts. A
  // bounded proof: interval arithmetic, the facts' non-negative expressions, and case splits on
  // min/max terms (`n - max(0, n - 2) >= 0` as `n >= 0` and `2 >= 0`). False means "not proved".
  static bool ProveNonNegative(const DimExpr& e, const DimFacts* facts = nullptr);
  static bool ProveLessEqual(const DimExpr& a, const DimExpr& b, const DimFacts* facts = nullptr);
  // The same expression rebuilt under `facts`: `max(0, n - 2) + min(2, n)` is `n` given n >= 2.
  DimExpr Simplify(const DimFacts& facts) const;

  // Structural equality of canonical forms. Note: `?` == `?` structurally (two unknown dims
  // print alike); use is_unknown() where "provably equal" is meant.
  bool operator==(const DimExpr& o) const;
  bool operator!=(const DimExpr& o) const { return !(*this == o); }
  // Total order (names and numbers only, never pointers): used to canonicalise and to sort.
  static int Compare(const DimExpr& a, const DimExpr& b);
  size_t Hash() const;
  template <typename H>
  friend H AbslHashValue(H h, const DimExpr& d) {
    return H::combine(std::move(h), d.Hash());
  }

  // Text form, parseable back by the IR parser: `n*4 + 1`, `(h + 1)//2`, `min(k, n)`, `?`.
  std::string ToString() const;

  using Bindings = absl::flat_hash_map<std::string, int64_t>;
  // Evaluates with every symbol bound; errors name the unbound symbol, unknown dims and
  // division by zero.
  absl::StatusOr<int64_t> Evaluate(const Bindings& bindings) const;
  // Replaces symbols by expressions (unmapped symbols stay).
  DimExpr Substitute(const absl::flat_hash_map<std::string, DimExpr>& map) const;
  void CollectSymbols(std::set<std::string>* out) const;

  // Internal representation (used by dim_expr.cc and by the printer of sums).
  const DimNode* node() const { return node_.get(); }
  explicit DimExpr(std::shared_ptr<const DimNode> node) : node_(std::move(node)) {}

 private:
  int64_t value_ = 0;
  std::shared_ptr<const DimNode> node_;  // null: the constant value_
};

// One term of a canonical sum: coeff * factors[0] * factors[1] * ... (factors are atoms, sorted).
struct DimTerm {
  int64_t coeff = 1;
  std::vector<DimExpr> factors;
};

struct DimNode {
  DimExpr::Kind kind;
  DimBounds bounds;            // with symbols >= 0 and no other facts (computed once)
  std::string name;            // kSymbol
  std::vector<DimExpr> args;   // kFloorDiv, kMod (2), kMin, kMax (2, sorted)
  int64_t constant = 0;        // kSum: the constant part
  std::vector<DimTerm> terms;  // kSum: at least one term; never a lone atom with coeff 1
  size_t hash = 0;
};

// Facts about symbols that hold wherever an expression is used: bounds (`seq` in [0, 128]) and
// expressions known to be >= 0 (`n - k` from `k <= n`). Built from a function's assumptions
// (FactsFromAssumptions in assumption.h); every symbol is >= 0 without being told.
class DimFacts {
 public:
  // Narrows the symbol's interval to [lo, hi] (intersected with what is known).
  void Bound(absl::string_view symbol, int64_t lo, int64_t hi);
  // Records `a <= b`: a bound when one side is a symbol and the other a constant, otherwise the
  // non-negative expression `b - a` for the prover.
  void AddLessEqual(const DimExpr& a, const DimExpr& b);
  bool empty() const { return symbols_.empty() && non_negative_.empty(); }
  // The symbol's interval: [0, +inf) unless bounded.
  DimBounds SymbolBounds(const std::string& symbol) const;
  bool has_symbol_bounds() const { return !symbols_.empty(); }
  const std::vector<DimExpr>& non_negative() const { return non_negative_; }

 private:
  absl::flat_hash_map<std::string, DimBounds> symbols_;
  std::vector<DimExpr> non_negative_;
};

// For tests and logs (gtest prints a DimExpr through this).
std::ostream& operator<<(std::ostream& os, const DimExpr& e);
std::string ShapeToString(const std::vector<DimExpr>& shape);  // "[n, 1024]"

}  // namespace hetpass

#endif  // HETPASS_IR_DIM_EXPR_H_
