// Concrete shape arithmetic of broadcasting, reshape, strided_slice, broadcast_to and reduced
// axes (see concrete_shapes.h). Every branch mirrors the symbolic rule it stands for, in the same
// order, so the first error reported is the rule's: the property test compares both on random
// cases.
#include "shape_funcs/concrete_shapes.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// As ShapeToString of the rules' DimExprs; `unknown_at` prints as `?` (reshape's -1).
std::string ShapeText(absl::Span<const int64_t> shape, int unknown_at = -1) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    if (static_cast<int>(i) == unknown_at) {
      s += "?";
    } else {
      absl::StrAppend(&s, shape[i]);
    }
  }
  return s + "]";
}

// Product of `dims`; false when it overflows int64. `*overflow_at` gets the factor at which it
// did (reshape's message names it).
bool CheckedProduct(absl::Span<const int64_t> dims, int64_t* product,
                    int64_t* overflow_at = nullptr) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(p, d, &p)) {
      if (overflow_at != nullptr) *overflow_at = d;
      return false;
    }
  }
  *product = p;
  return true;
}

// A begin/end value normalised against dim `d` and clamped into [lo, hi] (slice.cc's Clamp).
int64_t ClampSliceIndex(int64_t x, int64_t d, int64_t lo, int64_t hi) {
  if (x >= shape_rules::kMaxDim) return hi;
  if (x <= -shape_rules::kMaxDim) return lo;
  if (x < 0) x += d;
  return std::min(std::max(x, lo), hi);
}

// ceil(x / s) for x >= 0, s >= 1, without the overflow of (x + s - 1) / s.
int64_t CeilDiv(int64_t x, int64_t s) { return x == 0 ? 0 : (x - 1) / s + 1; }

}  // namespace

bool BroadcastInto(ShapeVector& acc, absl::Span<const int64_t> b) {
  if (b.size() > acc.size()) acc.insert(acc.begin(), b.size() - acc.size(), 1);
  const size_t offset = acc.size() - b.size();
  for (size_t j = 0; j < b.size(); ++j) {
    int64_t& d = acc[offset + j];
    if (d == b[j] || b[j] == 1) continue;
    if (d != 1) return false;
    d = b[j];
  }
  return true;
}

absl::Status ReshapeShape(absl::Span<const int64_t> in, absl::Span<const int64_t> newshape,
                          ShapeVector& out) {
  out.clear();
  int infer_at = -1;
  for (size_t i = 0; i < newshape.size(); ++i) {
    int64_t x = newshape[i];
    if (x == 0) {
      if (i >= in.size()) {
        return Invalid(
            absl::StrFormat("newshape[%d] = 0 copies a dim the rank-%d input lacks", i, in.size()));
      }
      x = in[i];
    } else if (x == -1) {
      if (infer_at >= 0) return Invalid("newshape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (x < 0) {
      return Invalid(
          absl::StrFormat("newshape value %d is not supported (only 0 and -1 are special)", x));
    }
    out.push_back(x);
  }
  // The known dims are every output dim but the inferred one (1 there keeps the product).
  if (infer_at >= 0) out[infer_at] = 1;
  int64_t total = 0, known = 0, overflow_at = 0;
  const bool total_ok = CheckedProduct(in, &total);
  const bool known_ok = CheckedProduct(out, &known, &overflow_at);
  if (infer_at >= 0) {
    if (total_ok && known_ok && (known == 0 || total % known != 0)) {
      return Invalid(absl::StrFormat("cannot infer -1: %d elements do not split into %s", total,
                                     ShapeText(out, infer_at)));
    }
    if (!total_ok) {
      return Invalid(absl::StrFormat(
          "cannot infer -1: the element count of input shape %s overflows int64", ShapeText(in)));
    }
    if (!known_ok) {
      return Invalid(absl::StrFormat(
          "cannot infer -1: the product of the known new dims overflows int64 at dim %d",
          overflow_at));
    }
    out[infer_at] = total / known;
  } else if (!total_ok || !known_ok || total != known) {
    // An overflowing count cannot equal one that fits, and two overflowing ones are no tensor.
    auto count = [](bool ok, int64_t n) {
      return ok ? absl::StrCat(n) : std::string("more than 2^63 - 1");
    };
    return Invalid(absl::StrFormat("element count mismatch: %s has %s elements, %s has %s",
                                   ShapeText(in), count(total_ok, total), ShapeText(out),
                                   count(known_ok, known)));
  }
  return absl::OkStatus();
}

absl::Status StridedSliceShape(absl::Span<const int64_t> in, const SliceArgs& args,
                               ShapeVector& out, int64_t* start_stride) {
  const size_t n = args.begin.size();
  const int64_t rank = static_cast<int64_t>(in.size());
  if (args.end.size() != n) {
    return Invalid(absl::StrFormat("begin has %d values but end has %d", n, args.end.size()));
  }
  const absl::Span<const int64_t> strides = args.strides;
  if (!strides.empty() && strides.size() != 1 && strides.size() != n) {
    return Invalid(absl::StrFormat("strides has %d values; expected 1 or %d", strides.size(), n));
  }
  absl::InlinedVector<int64_t, 6> axes;
  if (args.axes.empty()) {
    if (static_cast<int64_t>(n) > rank) {
      return Invalid(absl::StrFormat("%d begin values for rank %d", n, rank));
    }
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  } else if (args.axes.size() != n) {
    return Invalid(absl::StrFormat("axes has %d values but begin has %d", args.axes.size(), n));
  } else {
    // As shape_rules::NormalizeAxes.
    absl::InlinedVector<bool, 6> seen(rank, false);
    for (int64_t a : args.axes) {
      if (a < -rank || a >= rank) {
        return Invalid(absl::StrFormat("axis %d is out of range for rank %d", a, rank));
      }
      const int64_t axis = a < 0 ? a + rank : a;
      if (seen[axis]) return Invalid(absl::StrFormat("axis %d is given twice", a));
      seen[axis] = true;
      axes.push_back(axis);
    }
  }
  out.assign(in.begin(), in.end());
  if (start_stride != nullptr) {
    for (int64_t j = 0; j < rank; ++j) start_stride[2 * j] = 0, start_stride[2 * j + 1] = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = axes[i], d = in[a];
    int64_t b = args.begin[i], e = args.end[i];
    int64_t s = strides.empty() ? 1 : strides[strides.size() == 1 ? 0 : i];
    if (args.size_mode) {
      // end = begin + size (size -1: to the end); strides are ignored, as in Relay. A sum past
      // int64 saturates, which the clamp reads as "to the end" / "from the start".
      if (b < 0) b += d;
      if (e == -1) {
        e = shape_rules::kMaxDim;
      } else if (__builtin_add_overflow(b, e, &e)) {
        e = b > 0 ? INT64_MAX : INT64_MIN;
      }
      s = 1;
    }
    if (s == 0) return Invalid("strides must be non-zero");
    if (s == INT64_MIN) {
      return Invalid(
          absl::StrFormat("stride %d is not supported (its negation overflows int64)", s));
    }
    int64_t start, len;
    if (s > 0) {
      start = ClampSliceIndex(b, d, 0, d);
      len = CeilDiv(std::max<int64_t>(ClampSliceIndex(e, d, 0, d) - start, 0), s);
    } else {
      start = ClampSliceIndex(b, d, -1, d - 1);
      len = CeilDiv(std::max<int64_t>(start - ClampSliceIndex(e, d, -1, d - 1), 0), -s);
    }
    out[a] = len;
    if (start_stride != nullptr) start_stride[2 * a] = start, start_stride[2 * a + 1] = s;
  }
  return absl::OkStatus();
}

absl::Status BroadcastToShape(absl::Span<const int64_t> in, absl::Span<const int64_t> target,
                              ShapeVector& out, bool both_ways) {
  if (in.size() > target.size()) {
    return Invalid(
        absl::StrFormat("cannot broadcast rank %d to the lower rank %d", in.size(), target.size()));
  }
  const size_t offset = target.size() - in.size();
  out.assign(target.begin(), target.end());
  for (size_t j = 0; j < target.size(); ++j) {
    if (target[j] < 0) return Invalid(absl::StrFormat("target dim %d is negative", target[j]));
    if (j < offset || in[j - offset] == 1 || in[j - offset] == target[j]) continue;
    if (both_ways && target[j] == 1) {
      out[j] = in[j - offset];
      continue;
    }
    return Invalid(absl::StrFormat("cannot broadcast %s to %s", ShapeText(in), ShapeText(target)));
  }
  return absl::OkStatus();
}

std::optional<std::vector<bool>> ReducedAxisMask(absl::Span<const int64_t> axes, bool exclude,
                                                 int64_t rank) {
  std::vector<bool> reduced(rank, axes.empty() && !exclude);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    std::vector<bool>::reference r = reduced[a < 0 ? a + rank : a];  // false until listed
    if (r) return std::nullopt;
    r = true;
  }
  if (exclude) reduced.flip();
  return reduced;
}

}  // namespace hetpass
