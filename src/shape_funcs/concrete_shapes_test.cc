// Property tests of concrete_shapes.h: on many random cases (fixed seeds), the registry's
// symbolic shape rule, run through OpDef::InferTypes with constant dims and constant value
// inputs, gives exactly the concrete helper's shape, and errors exactly when the helper errors,
// with the same message. The two are separate computations (DimExpr arithmetic with min/max
// simplification against plain int64 loops), so a change to either side that is not made to the
// other fails here. Slices are also run through the reference kernel on an iota tensor, which
// checks the helper's per-axis start and stride (what the JIT's index arithmetic uses).
//
// Inputs whose arithmetic overflows int64 inside the rule are left out, because the rule then
// gives an unknown dim `?` where the helper gives the exact (or saturated) value: slice strides
// within a dim of +-INT64_MAX, and slice_mode "size" begin + size sums past int64.
#include "shape_funcs/concrete_shapes.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shape_funcs/test_util.h"

namespace hetpass::testing {
namespace {

constexpr int64_t kBig = int64_t{1} << 40;  // a product of two overflows int64
constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;

std::vector<DimExpr> Dims(absl::Span<const int64_t> shape) { return {shape.begin(), shape.end()}; }

std::string Text(absl::Span<const int64_t> v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

// Counts of the outcomes seen, so each test can check it exercised both.
struct Outcomes {
  int ok = 0;
  int errors = 0;
};

// Compares the rule's result for `op` with the helper's (status and shape). The rule's message
// is "op '<op>': " followed by the helper's when `same_message`.
void Compare(absl::string_view op, const absl::StatusOr<std::vector<Type>>& rule,
             const absl::Status& helper, const ShapeVector& shape, bool same_message,
             Outcomes& outcomes) {
  ASSERT_EQ(rule.ok(), helper.ok())
      << "rule: " << (rule.ok() ? (*rule)[0].ToString() : std::string(rule.status().message()))
      << "\nhelper: " << helper << " " << Text(shape);
  if (!helper.ok()) {
    ++outcomes.errors;
    if (same_message) {
      EXPECT_EQ(rule.status().message(), absl::StrCat("op '", op, "': ", helper.message()));
    }
    return;
  }
  ++outcomes.ok;
  ASSERT_EQ(rule->size(), 1u);
  EXPECT_EQ((*rule)[0].ToString(), Type::Tensor(DType::kF32, Dims(shape)).ToString());
}

std::vector<int64_t> RandomShape(std::mt19937& rng, int max_rank, int max_dim) {
  std::vector<int64_t> s(rng() % (max_rank + 1));
  for (int64_t& d : s) d = static_cast<int64_t>(rng() % (max_dim + 1));
  return s;
}

// Runs `one_case(rng, outcomes)` `n` times from `seed`; returns the outcomes.
template <typename F>
Outcomes RunCases(unsigned seed, int n, F one_case) {
  std::mt19937 rng(seed);
  Outcomes outcomes;
  for (int i = 0; i < n; ++i) one_case(rng, outcomes);
  return outcomes;
}

// ---- NumPy broadcasting ------------------------------------------------------------------------

// Tests BroadcastInto against add's rule: shapes of rank 0-4 derived from each other (equal dims,
// 1s, missing leading dims, or other values), so both outcomes are frequent.
TEST(ConcreteShapesTest, BroadcastMatchesTheRule) {
  const Outcomes outcomes = RunCases(1201, 3000, [](std::mt19937& rng, Outcomes& seen) {
    const std::vector<int64_t> a = RandomShape(rng, 4, 4);
    std::vector<int64_t> b(a.end() - std::min<size_t>(a.size(), rng() % 5), a.end());
    for (int64_t& d : b) {
      const unsigned r = rng() % 6;
      d = r == 0 ? 1 : r == 1 ? static_cast<int64_t>(rng() % 5) : d;
    }
    if (rng() % 4 == 0) b.insert(b.begin(), static_cast<int64_t>(rng() % 4));
    SCOPED_TRACE(absl::StrCat(Text(a), " with ", Text(b)));
    ShapeVector acc(a.begin(), a.end());
    const bool ok = BroadcastInto(acc, b);
    const absl::Status helper = ok ? absl::OkStatus() : absl::InvalidArgumentError("no broadcast");
    // The rule's message names the dimension; the JIT names the operands instead.
    Compare("add", Infer("add", {}, {In(F32(Dims(a))), In(F32(Dims(b)))}), helper, acc,
            /*same_message=*/false, seen);
  });
  EXPECT_GT(outcomes.ok, 1000);
  EXPECT_GT(outcomes.errors, 300);
}

// ---- reshape -----------------------------------------------------------------------------------

// A reshape target for `in`: half of them valid by construction (adjacent dims merged, some
// kept as 0, one replaced by -1), the others random values among 0, -1, -2, small dims and
// 2^40 (products that overflow int64).
std::vector<int64_t> RandomNewshape(const std::vector<int64_t>& in, std::mt19937& rng) {
  std::vector<int64_t> ns;
  if (rng() % 2 == 0) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (!ns.empty() && rng() % 3 == 0) {
        ns.back() *= in[i];
      } else {
        ns.push_back(in[i]);
      }
    }
    for (size_t i = 0; i < ns.size(); ++i) {
      if (i < in.size() && ns[i] == in[i] && rng() % 3 == 0) ns[i] = 0;
    }
    if (!ns.empty() && rng() % 2 == 0) ns[rng() % ns.size()] = -1;
    return ns;
  }
  const int64_t values[] = {0, -1, -1, -2, 1, 2, 3, 4, 6, kBig};
  ns.resize(rng() % 5);
  for (int64_t& v : ns) v = values[rng() % std::size(values)];
  return ns;
}

// Tests ReshapeShape against reshape's and dyn.reshape's rules (0, -1, more than one -1,
// unsupported negatives, element count mismatches, overflowing products), messages included.
TEST(ConcreteShapesTest, ReshapeMatchesTheRule) {
  const Outcomes outcomes = RunCases(1202, 3000, [](std::mt19937& rng, Outcomes& seen) {
    const std::vector<int64_t> in = RandomShape(rng, 4, 4);
    const std::vector<int64_t> ns = RandomNewshape(in, rng);
    SCOPED_TRACE(absl::StrCat(Text(in), " to ", Text(ns)));
    ShapeVector out;
    const absl::Status helper = ReshapeShape(in, ns, out);
    Compare("reshape", Infer("reshape", {{"newshape", ns}}, {In(F32(Dims(in)))}), helper, out,
            /*same_message=*/true, seen);
    const Tensor values = I64s(ns);
    Compare("dyn.reshape", Infer("dyn.reshape", {}, {In(F32(Dims(in))), InV(values)}), helper, out,
            /*same_message=*/true, seen);
  });
  EXPECT_GT(outcomes.ok, 1500);
  EXPECT_GT(outcomes.errors, 1500);
}

// ---- strided_slice -----------------------------------------------------------------------------

int64_t RandomIndex(std::mt19937& rng) {
  const int64_t extremes[] = {kMaxDim, -kMaxDim, kMaxDim + 1, -kMaxDim - 1,
                              kBig,    -kBig,    INT64_MAX,   INT64_MIN};
  if (rng() % 8 == 0) return extremes[rng() % std::size(extremes)];
  return static_cast<int64_t>(rng() % 17) - 8;
}

int64_t RandomStride(std::mt19937& rng) {
  // Not within a dim of +-INT64_MAX: the rule's ceil division overflows there (see the top).
  const int64_t extremes[] = {kMaxDim, -kMaxDim, kBig, -kBig, INT64_MIN};
  if (rng() % 10 == 0) return extremes[rng() % std::size(extremes)];
  return static_cast<int64_t>(rng() % 9) - 4;
}

struct RandomSlice {
  std::vector<int64_t> begin, end, strides, axes;
  bool size_mode = false;
};

RandomSlice MakeSlice(int64_t rank, std::mt19937& rng) {
  RandomSlice s;
  s.size_mode = rng() % 5 == 0;
  const size_t n = rng() % 10 == 0 ? rank + 1 : rng() % (rank + 1);
  for (size_t i = 0; i < n; ++i) {
    s.begin.push_back(s.size_mode ? static_cast<int64_t>(rng() % 17) - 8 : RandomIndex(rng));
    // size mode: a size (-1: to the end) small enough that begin + size stays in int64.
    s.end.push_back(s.size_mode ? static_cast<int64_t>(rng() % 10) - 1 : RandomIndex(rng));
  }
  if (rng() % 15 == 0 && !s.end.empty()) s.end.pop_back();
  switch (rng() % 4) {
    case 0:
      break;  // default strides
    case 1:
      s.strides = {RandomStride(rng)};
      break;
    default:
      for (size_t i = 0; i < n + (rng() % 15 == 0); ++i) s.strides.push_back(RandomStride(rng));
  }
  if (rng() % 3 == 0) {
    // A random permutation of the axes written positive or negative, sometimes with an axis out
    // of range or given twice.
    std::vector<int64_t> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = i < perm.size() ? perm[i] : 0;
      s.axes.push_back(rng() % 2 == 0 ? a : a - rank);
    }
    if (!s.axes.empty() && rng() % 8 == 0) s.axes[rng() % s.axes.size()] = rank;
    if (s.axes.size() > 1 && rng() % 8 == 0) s.axes[1] = s.axes[0];
  }
  return s;
}

// Checks start/stride against the reference kernel: sliced out of an iota, element k of the
// result (multi-index idx) is the iota's value at start + idx * stride per axis.
void CheckStarts(const std::string& op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                 const std::vector<int64_t>& in, const ShapeVector& out,
                 const std::vector<int64_t>& start_stride) {
  absl::StatusOr<std::vector<Tensor>> ref = RunRef(op, attrs, inputs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  const std::vector<int64_t> got = Ints((*ref)[0]);
  std::vector<int64_t> idx(out.size(), 0), strides(in.size(), 1);
  for (int j = static_cast<int>(in.size()) - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * in[j + 1];
  for (size_t k = 0; k < got.size(); ++k) {
    int64_t src = 0;
    for (size_t j = 0; j < in.size(); ++j) {
      src += (start_stride[2 * j] + idx[j] * start_stride[2 * j + 1]) * strides[j];
    }
    ASSERT_EQ(got[k], src) << "element " << k;
    for (int j = static_cast<int>(out.size()) - 1; j >= 0 && ++idx[j] == out[j]; --j) idx[j] = 0;
  }
}

// Tests StridedSliceShape against strided_slice's and dyn.strided_slice's rules: negative and
// out-of-range begin/end (up to INT64_MIN/MAX), negative, zero and INT64_MIN strides, 1 or n
// strides, axes (negative, out of range, duplicated), slice_mode "size", and more begin values
// than dims; messages included, and starts/strides through the reference kernel.
TEST(ConcreteShapesTest, StridedSliceMatchesTheRule) {
  std::mt19937 rng(1203);
  Outcomes outcomes;
  int checked_starts = 0;
  for (int i = 0; i < 4000; ++i) {
    const int64_t rank = 1 + static_cast<int64_t>(rng() % 4);
    std::vector<int64_t> in(rank);
    for (int64_t& d : in) d = static_cast<int64_t>(rng() % 7);
    const RandomSlice s = MakeSlice(rank, rng);
    SCOPED_TRACE(absl::StrCat(Text(in), " begin ", Text(s.begin), " end ", Text(s.end), " strides ",
                              Text(s.strides), " axes ", Text(s.axes),
                              s.size_mode ? " (size)" : ""));
    const std::string mode = s.size_mode ? "size" : "end";
    ShapeVector out;
    std::vector<int64_t> start_stride(2 * rank);
    const absl::Status helper = StridedSliceShape(
        in, SliceArgs{s.begin, s.end, s.strides, s.axes, s.size_mode}, out, start_stride.data());
    const Attrs attrs = {{"begin", s.begin},
                         {"end", s.end},
                         {"strides", s.strides},
                         {"axes", s.axes},
                         {"slice_mode", mode}};
    Compare("strided_slice", Infer("strided_slice", attrs, {In(F32(Dims(in)))}), helper, out,
            /*same_message=*/true, outcomes);
    int64_t elements = 1;
    for (int64_t d : in) elements *= d;
    std::vector<int64_t> iota(elements);
    std::iota(iota.begin(), iota.end(), 0);
    const Tensor data = IT(in, iota);
    if (helper.ok()) {
      CheckStarts("strided_slice", attrs, {data}, in, out, start_stride);
      ++checked_starts;
    }
    // dyn.strided_slice takes no axes: it gets the same values without them.
    if (!s.axes.empty()) continue;
    const Tensor b = I64s(s.begin), e = I64s(s.end), st = I64s(s.strides);
    const Attrs dyn_attrs = {{"slice_mode", mode}};
    Compare("dyn.strided_slice",
            Infer("dyn.strided_slice", dyn_attrs, {In(F32(Dims(in))), InV(b), InV(e), InV(st)}),
            helper, out, /*same_message=*/true, outcomes);
    if (helper.ok())
      CheckStarts("dyn.strided_slice", dyn_attrs, {data, b, e, st}, in, out, start_stride);
  }
  EXPECT_GT(outcomes.ok, 3000);
  EXPECT_GT(outcomes.errors, 500);
  EXPECT_GT(checked_starts, 2000);
}

// ---- broadcast_to ------------------------------------------------------------------------------

// Tests BroadcastToShape against broadcast_to's and dyn.broadcast_to's rules: targets derived
// from the input (kept, 1s expanded, leading dims added) or mutated (other values, negative
// dims anywhere, a lower rank); messages included.
TEST(ConcreteShapesTest, BroadcastToMatchesTheRule) {
  const Outcomes outcomes = RunCases(1204, 2000, [](std::mt19937& rng, Outcomes& seen) {
    const std::vector<int64_t> in = RandomShape(rng, 3, 3);
    std::vector<int64_t> target = in;
    for (int64_t& d : target) {
      if (d == 1 || rng() % 6 == 0) d = static_cast<int64_t>(rng() % 5);
    }
    const size_t leading = rng() % 3;
    for (size_t k = 0; k < leading; ++k) target.insert(target.begin(), rng() % 4);
    if (!target.empty() && rng() % 8 == 0) target[rng() % target.size()] = -1 - (rng() % 3);
    if (!target.empty() && rng() % 10 == 0) target.erase(target.begin());
    SCOPED_TRACE(absl::StrCat(Text(in), " to ", Text(target)));
    ShapeVector out;
    const absl::Status helper = BroadcastToShape(in, target, out);
    Compare("broadcast_to", Infer("broadcast_to", {{"shape", target}}, {In(F32(Dims(in)))}), helper,
            out, /*same_message=*/true, seen);
    // dyn.broadcast_to broadcasts both ways (ONNX Expand): a target 1 keeps the input's dim.
    ShapeVector both_out;
    const absl::Status both = BroadcastToShape(in, target, both_out, /*both_ways=*/true);
    const Tensor values = I64s(target);
    Compare("dyn.broadcast_to", Infer("dyn.broadcast_to", {}, {In(F32(Dims(in))), InV(values)}),
            both, both_out, /*same_message=*/true, seen);
  });
  EXPECT_GT(outcomes.ok, 1500);
  EXPECT_GT(outcomes.errors, 500);
}

}  // namespace
}  // namespace hetpass::testing
