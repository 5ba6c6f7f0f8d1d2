// Native CPU kernels for reduction groups and nn.softmax; see reduce_kernel.h for the groups
// taken, the semantics kept and why.
//
// Definitions:
//   line      the input viewed as [outer, len, inner] row-major: `len` is the product of the
//             reduced (softmax: the one) axes, `outer` of the axes before them, `inner` after
//   step      an elementwise op of a prologue / epilogue (Step), bound at run time to its
//             scalar operand's value (BoundStep)
//
// Phases:
//   match   MatchReduce / MatchSoftmax walk the body in order: the chain of steps from one f32
//           parameter, exactly one reduction whose resolved axes are adjacent, then steps; or
//           the single nn.softmax. Op identity is this file's business (it binds registry op
//           names to loops, as dense_kernel.cc binds nn.dense to oneDNN), nothing else.
//   run     arguments checked (count, dtype, rank, scalars one element, output shape); the
//           line view computed from the run-time shape; then
//             inner == 1  each line reduced in eight lanes (vectorised), the prologue applied
//                         chunk by chunk into a stack buffer
//             inner  > 1  each outer slice reduced row by row into accumulators for a block of
//                         inner (vectorised across it; the order per output is the reference's)
//           and the epilogue applied in place over the output.
//
// Known gaps: non-adjacent axis sets, argmax / argmin, f16 / f64, steps other than those
// listed (exp, log, ... would need double-precision libm calls to match the reference), a
// single thread only.
#include "compile_engine/reduce_kernel.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/group_provider.h"
#include "compile_engine/reduce_match.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/concrete_shapes.h"

namespace hetpass {
namespace {

using namespace ::hetpass::reduce_match;  // NOLINT: the groups this file runs

// Values per chunk of a prologue applied into a stack buffer.
constexpr int64_t kChunk = 256;

// ---- loops ----------------------------------------------------------------------------------

// Explicit 4-wide vectors (GCC vector extensions, one SSE register). The compiler does not
// if-convert float selects in plain loops under -ftrapping-math, so max / min / exp would
// stay scalar without them. (8-wide vectors are no gain: at the baseline ISA GCC scalarises
// their compares, and rows as short as attention's 12 leave half-empty tails.) The loop
// functions below are compiled twice (HETPASS_CLONES: AVX2, i.e. 3-operand VEX code, and the
// baseline, chosen once by the CPU at load); both round alike (no FMA contraction in ISO C++).
using F4 = float __attribute__((vector_size(16)));
using I4 = int32_t __attribute__((vector_size(16)));
using D2 = double __attribute__((vector_size(16)));
#define HETPASS_INLINE [[gnu::always_inline]] inline
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HETPASS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define HETPASS_CLONES
#endif

HETPASS_INLINE F4 Load4(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
HETPASS_INLINE void Store4(float* p, F4 v) { std::memcpy(p, &v, sizeof(v)); }
HETPASS_INLINE F4 Splat4(float x) { return F4{x, x, x, x}; }
// The first n (< 4) values of p, then `pad`.
HETPASS_INLINE F4 LoadPartial4(const float* p, int64_t n, float pad) {
  F4 v = Splat4(pad);
  for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  return v;
}

// Sum lanes in double: the low and high halves of an f32 vector widened. With SSE2 as two
// cvtps2pd (GCC turns the generic form into four scalar cvtss2sd: 5x slower sums).
HETPASS_INLINE void AddWidened(D2& lo, D2& hi, F4 v) {
#if defined(__SSE2__)
  const __m128 m = reinterpret_cast<__m128>(v);
  lo += reinterpret_cast<D2>(_mm_cvtps_pd(m));
  hi += reinterpret_cast<D2>(_mm_cvtps_pd(_mm_movehl_ps(m, m)));
#else
  lo += D2{v[0], v[1]};
  hi += D2{v[2], v[3]};
#endif
}

// Lane-wise sum of a line in double (eight lanes in four registers: enough to hide the add
// latency).
struct SumLanes {
  static constexpr D2 kMinusZero = {-0.0, -0.0};  // -0 + x == x, also for x = -0
  D2 v[4] = {kMinusZero, kMinusZero, kMinusZero, kMinusZero};
  HETPASS_INLINE void Add(const float* p, int64_t n) {
    D2 a = v[0], b = v[1], c = v[2], d = v[3];  // in registers
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      AddWidened(a, b, Load4(p + i));
      AddWidened(c, d, Load4(p + i + 4));
    }
    for (; i + 4 <= n; i += 4) AddWidened(a, b, Load4(p + i));
    if (i < n) AddWidened(c, d, LoadPartial4(p + i, n - i, -0.0f));
    v[0] = a, v[1] = b, v[2] = c, v[3] = d;
  }
  HETPASS_INLINE double Total() const {
    const D2 s = (v[0] + v[1]) + (v[2] + v[3]);
    return s[0] + s[1];
  }
};

// acc replaced by x only when x is strictly better: the reference's std::max / std::min.
template <bool kIsMax, typename T>
HETPASS_INLINE T Better(T acc, T x) {
  if constexpr (kIsMax) {
    return acc < x ? x : acc;
  } else {
    return x < acc ? x : acc;
  }
}

// Max (kIsMax) or min of a line: every lane starts at `first` (the line's first value, or
// -inf for softmax) and is replaced only by a strictly better value, so the result is the
// reference's sequential std::max / std::min: a NaN wins only when it comes first.
template <bool kIsMax>
struct ExtremeLanes {
  F4 v0, v1;
  explicit ExtremeLanes(float first) : v0(Splat4(first)), v1(Splat4(first)) {}
  HETPASS_INLINE void Add(const float* p, int64_t n) {
    F4 a = v0, b = v1;  // in registers
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      a = Better<kIsMax>(a, Load4(p + i));
      b = Better<kIsMax>(b, Load4(p + i + 4));
    }
    for (; i + 4 <= n; i += 4) a = Better<kIsMax>(a, Load4(p + i));
    for (; i < n; ++i) b[0] = Better<kIsMax>(b[0], p[i]);
    v0 = a, v1 = b;
  }
  HETPASS_INLINE float Total() const {
    float r = v0[0];
    for (int j = 1; j < 4; ++j) r = Better<kIsMax>(r, v0[j]);
    for (int j = 0; j < 4; ++j) r = Better<kIsMax>(r, v1[j]);
    return r;
  }
};

struct BoundStep {
  StepKind kind;
  bool scalar_left;
  float c;
};

// dst[i] = step(src[i]) for one step; dst may be src. Each case is one vectorisable loop.
HETPASS_CLONES void ApplyStep(const BoundStep& s, const float* src, float* dst, int64_t n) {
  const float c = s.c;
  switch (s.kind) {
    case StepKind::kNegative:
      for (int64_t i = 0; i < n; ++i) dst[i] = -src[i];
      return;
    case StepKind::kAbs:
      for (int64_t i = 0; i < n; ++i) dst[i] = std::fabs(src[i]);
      return;
    case StepKind::kSquare:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * src[i];
      return;
    case StepKind::kAdd:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] + c;
      return;
    case StepKind::kSubtract:
      if (s.scalar_left) {
        for (int64_t i = 0; i < n; ++i) dst[i] = c - src[i];
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = src[i] - c;
      }
      return;
    case StepKind::kMultiply:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * c;
      return;
    case StepKind::kDivide:
      if (s.scalar_left) {
        for (int64_t i = 0; i < n; ++i) dst[i] = c / src[i];
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = src[i] / c;
      }
      return;
    case StepKind::kPower:
      if (c == 2.0f) {  // exact: the double square of a float, rounded once, as the reference
        for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * src[i];
      } else if (c == 1.0f) {
        if (dst != src) std::memcpy(dst, src, n * sizeof(float));
      } else {
        for (int64_t i = 0; i < n; ++i) {
          dst[i] =
              static_cast<float>(std::pow(static_cast<double>(src[i]), static_cast<double>(c)));
        }
      }
      return;
    // The extended steps are the device kernels' (MatchReduce(f, /*extended=*/false) never
    // yields them here); computed as the reference does all the same, in double, rounded once.
    case StepKind::kRelu:
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] > 0 ? src[i] : 0.0f;
      return;
    case StepKind::kExp:
    case StepKind::kSigmoid:
    case StepKind::kTanh:
    case StepKind::kSqrt:
    case StepKind::kLog:
    case StepKind::kFloor:
    case StepKind::kCeil:
      for (int64_t i = 0; i < n; ++i) {
        const double x = src[i];
        double y = x;
        switch (s.kind) {
          case StepKind::kExp: y = std::exp(x); break;
          case StepKind::kSigmoid: y = 1.0 / (1.0 + std::exp(-x)); break;
          case StepKind::kTanh: y = std::tanh(x); break;
          case StepKind::kSqrt: y = std::sqrt(x); break;
          case StepKind::kLog: y = std::log(x); break;
          case StepKind::kFloor: y = std::floor(x); break;
          default: y = std::ceil(x); break;
        }
        dst[i] = static_cast<float>(y);
      }
      return;
    case StepKind::kMaximum:  // std::max / std::min with the scalar on the step's side
      for (int64_t i = 0; i < n; ++i) dst[i] = s.scalar_left ? std::max(c, src[i]) : std::max(src[i], c);
      return;
    case StepKind::kMinimum:
      for (int64_t i = 0; i < n; ++i) dst[i] = s.scalar_left ? std::min(c, src[i]) : std::min(src[i], c);
      return;
  }
}

// The values src[0..n) after the steps: src itself when there are none, else `buf`.
HETPASS_INLINE const float* Stepped(absl::Span<const BoundStep> steps, const float* src, float* buf,
                                    int64_t n) {
  if (steps.empty()) return src;
  ApplyStep(steps[0], src, buf, n);
  for (size_t k = 1; k < steps.size(); ++k) ApplyStep(steps[k], buf, buf, n);
  return buf;
}

// One last-axis line (len > 0) reduced after the prologue.
template <typename Lanes>
HETPASS_INLINE void ReduceLine(Lanes& lanes, absl::Span<const BoundStep> steps, const float* row,
                               int64_t len) {
  alignas(64) float buf[kChunk];
  for (int64_t off = 0; off < len; off += kChunk) {
    const int64_t n = std::min(kChunk, len - off);
    lanes.Add(Stepped(steps, row + off, buf, n), n);
  }
}

HETPASS_INLINE float FirstStepped(absl::Span<const BoundStep> steps, const float* row) {
  float v;
  return *Stepped(steps, row, &v, 1);
}

HETPASS_CLONES void ReduceLastAxis(ReduceKind kind, absl::Span<const BoundStep> steps,
                                   const float* x, float* out, int64_t outer, int64_t len) {
  for (int64_t o = 0; o < outer; ++o) {
    const float* row = x + o * len;
    switch (kind) {
      case ReduceKind::kSum:
      case ReduceKind::kMean: {
        SumLanes lanes;
        ReduceLine(lanes, steps, row, len);
        const double s = lanes.Total();
        out[o] = static_cast<float>(kind == ReduceKind::kMean ? s / static_cast<double>(len) : s);
        break;
      }
      case ReduceKind::kProd: {  // in order, in double: the reference's rounding exactly
        alignas(64) float buf[kChunk];
        double p = 1.0;
        for (int64_t off = 0; off < len; off += kChunk) {
          const int64_t n = std::min(kChunk, len - off);
          const float* v = Stepped(steps, row + off, buf, n);
          for (int64_t i = 0; i < n; ++i) p *= v[i];
        }
        out[o] = static_cast<float>(p);
        break;
      }
      case ReduceKind::kMax: {
        ExtremeLanes<true> lanes(FirstStepped(steps, row));
        ReduceLine(lanes, steps, row, len);
        out[o] = lanes.Total();
        break;
      }
      case ReduceKind::kMin: {
        ExtremeLanes<false> lanes(FirstStepped(steps, row));
        ReduceLine(lanes, steps, row, len);
        out[o] = lanes.Total();
        break;
      }
    }
  }
}

// e[j] = Better(e[j], v[j]) for j < n.
template <bool kIsMax>
HETPASS_INLINE void FoldBetter(float* e, const float* v, int64_t n) {
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) Store4(e + j, Better<kIsMax>(Load4(e + j), Load4(v + j)));
  for (; j < n; ++j) e[j] = Better<kIsMax>(e[j], v[j]);
}

// [outer, len, inner] with inner > 1, in blocks of kChunk along inner: row k of the block
// folded into kChunk accumulators on the stack; per output the order is the reference's
// (first value, then k = 1, 2, ...).
HETPASS_CLONES void ReduceMiddleAxes(ReduceKind kind, absl::Span<const BoundStep> steps,
                                     const float* x, float* out, int64_t outer, int64_t len,
                                     int64_t inner) {
  alignas(64) float buf[kChunk];
  alignas(64) double acc[kChunk];  // sum, mean, prod
  alignas(64) float ext[kChunk];   // max, min
  const bool extreme = kind == ReduceKind::kMax || kind == ReduceKind::kMin;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j0 = 0; j0 < inner; j0 += kChunk) {
      const int64_t n = std::min(kChunk, inner - j0);
      const float* first = Stepped(steps, x + o * len * inner + j0, buf, n);
      if (extreme) {
        std::copy(first, first + n, ext);
      } else {
        for (int64_t j = 0; j < n; ++j) acc[j] = first[j];
      }
      for (int64_t k = 1; k < len; ++k) {
        const float* v = Stepped(steps, x + (o * len + k) * inner + j0, buf, n);
        switch (kind) {
          case ReduceKind::kSum:
          case ReduceKind::kMean:
            for (int64_t j = 0; j < n; ++j) acc[j] += v[j];
            break;
          case ReduceKind::kProd:
            for (int64_t j = 0; j < n; ++j) acc[j] *= v[j];
            break;
          case ReduceKind::kMax:
            FoldBetter<true>(ext, v, n);
            break;
          case ReduceKind::kMin:
            FoldBetter<false>(ext, v, n);
            break;
        }
      }
      float* dst = out + o * inner + j0;
      if (extreme) {
        std::copy(ext, ext + n, dst);
      } else if (kind == ReduceKind::kMean) {
        const double d = static_cast<double>(len);
        for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<float>(acc[j] / d);
      } else {
        for (int64_t j = 0; j < n; ++j) dst[j] = static_cast<float>(acc[j]);
      }
    }
  }
}

// e^x for x <= 0 or NaN, four at a time (Cephes expf: range reduction by ln 2 in two parts,
// degree-5 polynomial; relative error ~1e-7); NaN stays NaN.
HETPASS_INLINE F4 ExpNonPositive(F4 x) {
  // Below e^-86 the result is 0 (the reference's is below 5e-38): p * 2^n then stays a normal
  // number (n >= -124), as a subnormal product costs a microcode assist (~100 cycles), also in
  // lanes whose result is discarded.
  const F4 min_arg = Splat4(-86.0f);
  const F4 round = Splat4(12582912.0f);  // 1.5 * 2^23: adding it rounds to an integer
  const I4 tiny = x < min_arg;           // false for NaN
  const F4 xc = tiny ? min_arg : x;
  const F4 t = xc * 1.44269504088896341f + round;
  const F4 n = t - round;
  const F4 r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  const F4 z = r * r;
  F4 p = Splat4(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  const I4 e = reinterpret_cast<I4>(t) - reinterpret_cast<I4>(round);  // n, as an integer
  const F4 scale = reinterpret_cast<F4>((e + 127) << 23);              // 2^n
  return tiny ? Splat4(0.0f) : p * scale;
}

// dst[i] = e^(src[i] - sub[i]) (sub_stride 1) or e^(src[i] - sub[0]) (sub_stride 0), i < n; the
// sum of the results added to `sum` in double.
HETPASS_INLINE void ExpMinus(const float* src, const float* sub, int sub_stride, float* dst,
                             int64_t n, SumLanes& sum) {
  int64_t i = 0;
  const F4 sub0 = Splat4(sub[0]);
  D2 lo = sum.v[0], hi = sum.v[1];  // in registers, not through `sum`
  for (; i + 4 <= n; i += 4) {
    const F4 e = ExpNonPositive(Load4(src + i) - (sub_stride ? Load4(sub + i) : sub0));
    Store4(dst + i, e);
    AddWidened(lo, hi, e);
  }
  if (i < n) {
    const F4 s = sub_stride ? LoadPartial4(sub + i, n - i, 0.0f) : sub0;
    const F4 e = ExpNonPositive(LoadPartial4(src + i, n - i, -INFINITY) - s);  // pads give 0
    for (int64_t k = 0; k < n - i; ++k) dst[i + k] = e[k];
    AddWidened(lo, hi, e);
  }
  sum.v[0] = lo;
  sum.v[1] = hi;
}

HETPASS_CLONES void SoftmaxLastAxis(const float* x, float* y, int64_t outer, int64_t len) {
  for (int64_t o = 0; o < outer; ++o) {
    const float* row = x + o * len;
    float* dst = y + o * len;
    ExtremeLanes<true> m(-std::numeric_limits<float>::infinity());
    m.Add(row, len);
    const float max = m.Total();
    SumLanes sum;
    ExpMinus(row, &max, 0, dst, len, sum);
    const float scale = static_cast<float>(1.0 / sum.Total());
    for (int64_t i = 0; i < len; ++i) dst[i] *= scale;
  }
}

// [outer, len, inner] with inner > 1, in blocks of kChunk along inner (max, sums and scales
// of a block on the stack).
HETPASS_CLONES void SoftmaxMiddleAxis(const float* x, float* y, int64_t outer, int64_t len,
                                      int64_t inner) {
  alignas(64) float max[kChunk];
  alignas(64) double sum[kChunk];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j0 = 0; j0 < inner; j0 += kChunk) {
      const int64_t n = std::min(kChunk, inner - j0);
      const float* in = x + o * len * inner + j0;
      float* out = y + o * len * inner + j0;
      std::fill(max, max + n, -std::numeric_limits<float>::infinity());
      std::fill(sum, sum + n, 0.0);
      for (int64_t k = 0; k < len; ++k) FoldBetter<true>(max, in + k * inner, n);
      for (int64_t k = 0; k < len; ++k) {
        SumLanes unused;
        float* dst = out + k * inner;
        ExpMinus(in + k * inner, max, 1, dst, n, unused);
        for (int64_t j = 0; j < n; ++j) sum[j] += dst[j];
      }
      float* scale = max;  // max is no longer needed
      for (int64_t j = 0; j < n; ++j) scale[j] = static_cast<float>(1.0 / sum[j]);
      for (int64_t k = 0; k < len; ++k) {
        float* dst = out + k * inner;
        for (int64_t j = 0; j < n; ++j) dst[j] *= scale[j];
      }
    }
  }
}

// ---- kernels --------------------------------------------------------------------------------

std::vector<BoundStep> Bind(const std::vector<Step>& steps, absl::Span<const TensorArg> args) {
  std::vector<BoundStep> bound;
  bound.reserve(steps.size());
  for (const Step& s : steps) {
    bound.push_back(
        BoundStep{s.kind, s.scalar_left, s.scalar < 0 ? 0.0f : *args[s.scalar].as<float>()});
  }
  return bound;
}

class ReduceInstance final : public KernelInstance {
 public:
  explicit ReduceInstance(const ReduceGroup& group) : group_(group) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const ReduceGroup& g = group_;
    RETURN_IF_ERROR(CheckCount(g.sig, args));
    const TensorArg& in = args[g.data];
    const TensorArg& out = args[g.sig.num_params];
    RETURN_IF_ERROR(CheckTensor(g.sig, in, g.sig.Arg("data", g.data), g.rank));
    RETURN_IF_ERROR(CheckScalars(g.sig, args));
    RETURN_IF_ERROR(CheckResult(g.sig, out, ReducedShape(g, in.shape)));
    const LineView v = ViewOf(in.shape, g.reduced);
    const int64_t n_out = out.num_elements();
    if (n_out == 0) return absl::OkStatus();
    float* y = out.as<float>();
    const std::vector<BoundStep> prologue = Bind(g.prologue, args);
    if (v.len == 0) {  // the reference's empty reduction: 1 for prod, 0 otherwise
      std::fill(y, y + n_out, g.kind == ReduceKind::kProd ? 1.0f : 0.0f);
    } else if (v.inner == 1) {
      ReduceLastAxis(g.kind, prologue, in.as<const float>(), y, v.outer, v.len);
    } else {
      ReduceMiddleAxes(g.kind, prologue, in.as<const float>(), y, v.outer, v.len, v.inner);
    }
    for (const BoundStep& s : Bind(g.epilogue, args)) ApplyStep(s, y, y, n_out);
    return absl::OkStatus();
  }

 private:
  const ReduceGroup& group_;
};

class SoftmaxInstance final : public KernelInstance {
 public:
  explicit SoftmaxInstance(const SoftmaxGroup& group) : group_(group) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const SoftmaxGroup& g = group_;
    RETURN_IF_ERROR(CheckCount(g.sig, args));
    const TensorArg& in = args[0];
    const TensorArg& out = args[1];
    RETURN_IF_ERROR(CheckTensor(g.sig, in, g.sig.Arg("data", 0), g.rank));
    RETURN_IF_ERROR(CheckResult(g.sig, out, in.shape));
    std::vector<bool> mask(g.rank, false);
    mask[g.axis] = true;
    const LineView v = ViewOf(in.shape, mask);
    if (out.num_elements() == 0) return absl::OkStatus();
    if (v.inner == 1) {
      SoftmaxLastAxis(in.as<const float>(), out.as<float>(), v.outer, v.len);
    } else {
      SoftmaxMiddleAxis(in.as<const float>(), out.as<float>(), v.outer, v.len, v.inner);
    }
    return absl::OkStatus();
  }

 private:
  const SoftmaxGroup& group_;
};

class ReduceKernel final : public CompiledKernel {
 public:
  explicit ReduceKernel(ReduceGroup group) : group_(std::move(group)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<ReduceInstance>(group_));
  }
  std::string Describe() const override { return absl::StrFormat("native reduce[%s]", group_.ops); }

 private:
  const ReduceGroup group_;
};

class SoftmaxKernel final : public CompiledKernel {
 public:
  explicit SoftmaxKernel(SoftmaxGroup group) : group_(std::move(group)) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<SoftmaxInstance>(group_));
  }
  std::string Describe() const override { return "native softmax"; }

 private:
  const SoftmaxGroup group_;
};

}  // namespace

bool IsReduceGroup(const Function& primitive) { return MatchReduce(primitive, /*any_axes=*/false).has_value(); }

bool IsSoftmaxGroup(const Function& primitive) { return MatchSoftmax(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileReduceOrSoftmaxGroup(
    const Function& primitive) {
  if (std::optional<ReduceGroup> g = MatchReduce(primitive, /*any_axes=*/false)) {
    return std::unique_ptr<CompiledKernel>(std::make_unique<ReduceKernel>(*std::move(g)));
  }
  if (std::optional<SoftmaxGroup> g = MatchSoftmax(primitive)) {
    return std::unique_ptr<CompiledKernel>(std::make_unique<SoftmaxKernel>(*std::move(g)));
  }
  return absl::UnimplementedError(absl::StrFormat(
      "@%s: not a reduction group (steps, one adjacent-axis sum/mean/prod/max/min, steps) or "
      "a softmax group",
      primitive.name()));
}


const KernelProvider& ReduceKernelProvider() {
  static const GroupProvider provider({"native.reduce", kNeedsKernelLibrary, nullptr,
                                       &CompileReduceOrSoftmaxGroup, &ReduceRuns,
                                       [](const OpDef& op) { return ReduceFuses(op, false); }});
  return provider;
}

}  // namespace hetpass
