// ONNX converters of the signal family (opset 17): HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix, DFT and STFT, built from registry ops:
//
//   windows   w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), n = arange(size), N = size
//             (periodic) or size - 1 (symmetric), in f64 and cast to output_datatype.
//   mel       the ONNX reference's triangular filters, elementwise over (bin j, filter i): the
//             filter edges l <= c <= h are floor((dft_length + 1) * hz / sample_rate) of
//             num_mel_bins + 2 points spaced evenly on the mel scale; the weight rises
//             (j - l) / (c - l) on [l, c] (1 at c when l == c) and falls (h - j) / (h - c) on
//             [c, h), the fall taking precedence as in the reference's second loop.
//   DFT       a dense product with a [K, N] cos / sin matrix built from two iotas, K output
//             frequencies by N input samples along `axis` (moved last): for a complex input
//             re + i im, forward X = (re C + im S) + i (im C - re S), inverse
//             x = ((re C - im S) + i (re S + im C)) / L, C = cos(theta), S = sin(theta),
//             theta = 2 pi ((k n) mod L) / L. The angle is reduced in int64 before it becomes
//             a float, so large k n lose no precision; the products run in f64 (NumPy's FFT
//             is f64 too) and the result is cast back to the input's dtype. dft_length L
//             pads with zeros (columns past N do not exist) or truncates (columns n >= L are
//             masked to 0); onesided keeps K = L / 2 + 1 frequencies, for the inverse too, as
//             the reference does. This is O(K N) per transform, not an FFT: a known
//             limitation (docs/onnx.md), and static matrices above 2^24 elements are refused.
//   STFT      frames gathered with take along the signal axis (index f * frame_step + t), times
//             the window, then the DFT above along the frame axis.
// Lengths that are graph inputs (size, dft_length, frame_step, frame_length, num_mel_bins)
// become arange stops (`value` inputs): their shapes are known at run time only, and only those
// scalars travel to the host.
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <cstdint>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// Limits on what constant inputs may ask for, so that a hostile size is an error naming it
// rather than a multi-gigabyte allocation at run time: a length (window, DFT, frame, mel bin
// count) of 2^24 samples is already far beyond what an O(n^2) DFT or a filter bank uses, and a
// dense matrix (the DFT's, MelWeightMatrix's output) of 2^24 elements is 128 MB in f64. Lengths
// that are run-time values are not bounded here.
constexpr int64_t kMaxLength = int64_t{1} << 24;
constexpr int64_t kMaxDftMatrix = int64_t{1} << 24;
constexpr double kTwoPi = 2 * std::numbers::pi;

Value* I64(ImportContext& ctx, int64_t v) { return ctx.Const(Tensor::Scalar(DType::kI64, v)); }
Value* F64(ImportContext& ctx, double v) { return ctx.Const(Tensor::Scalar(DType::kF64, v)); }

// A scalar integer input (a length, a count, a step) as i64; a constant one must lie in
// [min, kMaxLength).
absl::StatusOr<Value*> LengthInput(ImportContext& ctx, Value* v, absl::string_view what,
                                   int64_t min) {
  const Type t = ctx.TypeOf(v);
  if (!t.is_tensor() || t.rank() != 0 || !IsInteger(t.dtype())) {
    return ctx.Error(absl::StrCat(what, " must be an integer scalar, got ",
                                  t.is_tensor() ? t.ToString() : "an untyped value"));
  }
  if (auto c = ConstInts(ctx, v); c && c->size() == 1) {
    if ((*c)[0] < min || (*c)[0] >= kMaxLength) {
      return ctx.Error(absl::StrFormat("%s must be in [%d, 2^24), got %d", what, min, (*c)[0]));
    }
  }
  return CastTo(ctx, v, DType::kI64);
}

// output_datatype (default float), as a DType.
absl::StatusOr<DType> OutputDType(ImportContext& ctx, const onnx::NodeProto& n) {
  auto dt = DTypeFromOnnx(static_cast<int32_t>(IntAttr(n, "output_datatype", 1)));
  if (!dt.ok()) return ctx.Unimplemented(absl::StrCat("output_datatype: ", dt.status().message()));
  return *dt;
}

// A 0/1 attribute.
absl::StatusOr<bool> Flag(ImportContext& ctx, const onnx::NodeProto& n, absl::string_view name,
                          int64_t def) {
  const int64_t v = IntAttr(n, name, def);
  if (v != 0 && v != 1) return ctx.Error(absl::StrFormat("%s must be 0 or 1, got %d", name, v));
  return v == 1;
}

// ---- windows ---------------------------------------------------------------------------------

// The generalised cosine window a0 - a1 cos(theta) + a2 cos(2 theta), theta = 2 pi n / N.
struct CosineWindow {
  double a0, a1, a2;
};

Outs Window(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in, CosineWindow c) {
  ASSIGN_OR_RETURN(Value * size_in, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * size, LengthInput(ctx, size_in, "size", 0));
  ASSIGN_OR_RETURN(const DType out, OutputDType(ctx, n));
  ASSIGN_OR_RETURN(const bool periodic, Flag(ctx, n, "periodic", 1));
  ASSIGN_OR_RETURN(Value * idx, IotaTo(ctx, size));
  Value* denom = size;
  if (!periodic) {
    ASSIGN_OR_RETURN(denom, ctx.Op("subtract", {size, I64(ctx, 1)}));
  }
  ASSIGN_OR_RETURN(Value * nf, CastTo(ctx, idx, DType::kF64));
  ASSIGN_OR_RETURN(Value * df, CastTo(ctx, denom, DType::kF64));
  ASSIGN_OR_RETURN(Value * theta, ctx.Op("multiply", {nf, F64(ctx, kTwoPi)}));
  ASSIGN_OR_RETURN(theta, ctx.Op("divide", {theta, df}));
  ASSIGN_OR_RETURN(Value * cos1, ctx.Op("cos", {theta}));
  ASSIGN_OR_RETURN(Value * w, ctx.Op("multiply", {cos1, F64(ctx, -c.a1)}));
  ASSIGN_OR_RETURN(w, ctx.Op("add", {w, F64(ctx, c.a0)}));
  if (c.a2 != 0) {
    ASSIGN_OR_RETURN(Value * theta2, ctx.Op("multiply", {theta, F64(ctx, 2)}));
    ASSIGN_OR_RETURN(Value * cos2, ctx.Op("cos", {theta2}));
    ASSIGN_OR_RETURN(cos2, ctx.Op("multiply", {cos2, F64(ctx, c.a2)}));
    ASSIGN_OR_RETURN(w, ctx.Op("add", {w, cos2}));
  }
  return One(CastTo(ctx, w, out));
}

Outs HannWindow(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  return Window(ctx, n, in, {0.5, 0.5, 0});
}
Outs HammingWindow(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  return Window(ctx, n, in, {25.0 / 46, 21.0 / 46, 0});
}
Outs BlackmanWindow(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  return Window(ctx, n, in, {0.42, 0.5, 0.08});
}

// ---- MelWeightMatrix -------------------------------------------------------------------------

// A float scalar input as f64.
absl::StatusOr<Value*> FloatScalar(ImportContext& ctx, Value* v, absl::string_view what) {
  const Type t = ctx.TypeOf(v);
  if (!t.is_tensor() || t.rank() != 0 || !IsFloat(t.dtype())) {
    return ctx.Error(absl::StrCat(what, " must be a floating-point scalar"));
  }
  return CastTo(ctx, v, DType::kF64);
}

// 2595 log10(1 + hz / 700).
absl::StatusOr<Value*> HzToMel(ImportContext& ctx, Value* hz) {
  ASSIGN_OR_RETURN(Value * r, ctx.Op("divide", {hz, F64(ctx, 700)}));
  ASSIGN_OR_RETURN(r, ctx.Op("add", {r, F64(ctx, 1)}));
  ASSIGN_OR_RETURN(r, ctx.Op("log", {r}));
  return ctx.Op("multiply", {r, F64(ctx, 2595 / std::numbers::ln10)});
}

// v[idx + offset] for the i64 iota `idx`, as f64.
absl::StatusOr<Value*> Shifted(ImportContext& ctx, Value* v, Value* idx, int64_t offset) {
  ASSIGN_OR_RETURN(Value * at, ctx.Op("add", {idx, I64(ctx, offset)}));
  ASSIGN_OR_RETURN(Value * t, ctx.Op("take", {v, at}, {{"axis", int64_t{0}}}));
  return CastTo(ctx, t, DType::kF64);
}

Outs MelWeightMatrix(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(const std::vector<Value*> v, NeedFirst(ctx, in, 5));
  ASSIGN_OR_RETURN(const DType out, OutputDType(ctx, n));
  ASSIGN_OR_RETURN(Value * bins, LengthInput(ctx, v[0], "num_mel_bins", 1));
  ASSIGN_OR_RETURN(Value * dft_length, LengthInput(ctx, v[1], "dft_length", 1));
  ASSIGN_OR_RETURN(Value * rate, LengthInput(ctx, v[2], "sample_rate", 1));
  ASSIGN_OR_RETURN(Value * lower, FloatScalar(ctx, v[3], "lower_edge_hertz"));
  ASSIGN_OR_RETURN(Value * upper, FloatScalar(ctx, v[4], "upper_edge_hertz"));
  const auto m_const = ConstInts(ctx, v[0]), l_const = ConstInts(ctx, v[1]);
  if (m_const && l_const && m_const->size() == 1 && l_const->size() == 1 &&
      ((*l_const)[0] / 2 + 1) * (*m_const)[0] > kMaxDftMatrix) {
    return ctx.Error(absl::StrFormat(
        "a %d x %d weight matrix (dft_length %d, num_mel_bins %d) is above the 2^24 elements "
        "accepted", (*l_const)[0] / 2 + 1, (*m_const)[0], (*l_const)[0], (*m_const)[0]));
  }
  // The num_mel_bins + 2 filter edges, in spectrogram bins.
  ASSIGN_OR_RETURN(Value * points, ctx.Op("add", {bins, I64(ctx, 2)}));
  ASSIGN_OR_RETURN(Value * p_idx, IotaTo(ctx, points));
  ASSIGN_OR_RETURN(Value * low_mel, HzToMel(ctx, lower));
  ASSIGN_OR_RETURN(Value * high_mel, HzToMel(ctx, upper));
  ASSIGN_OR_RETURN(Value * step, ctx.Op("subtract", {high_mel, low_mel}));
  ASSIGN_OR_RETURN(Value * points_f, CastTo(ctx, points, DType::kF64));
  ASSIGN_OR_RETURN(step, ctx.Op("divide", {step, points_f}));
  ASSIGN_OR_RETURN(Value * mel, CastTo(ctx, p_idx, DType::kF64));
  ASSIGN_OR_RETURN(mel, ctx.Op("multiply", {mel, step}));
  ASSIGN_OR_RETURN(mel, ctx.Op("add", {mel, low_mel}));
  ASSIGN_OR_RETURN(Value * hz, ctx.Op("divide", {mel, F64(ctx, 2595)}));
  ASSIGN_OR_RETURN(hz, ctx.Op("power", {F64(ctx, 10), hz}));
  ASSIGN_OR_RETURN(hz, ctx.Op("subtract", {hz, F64(ctx, 1)}));
  ASSIGN_OR_RETURN(hz, ctx.Op("multiply", {hz, F64(ctx, 700)}));
  ASSIGN_OR_RETURN(Value * len_f, CastTo(ctx, dft_length, DType::kF64));
  ASSIGN_OR_RETURN(len_f, ctx.Op("add", {len_f, F64(ctx, 1)}));
  ASSIGN_OR_RETURN(Value * edge, ctx.Op("multiply", {len_f, hz}));
  ASSIGN_OR_RETURN(Value * rate_f, CastTo(ctx, rate, DType::kF64));
  ASSIGN_OR_RETURN(edge, ctx.Op("divide", {edge, rate_f}));
  ASSIGN_OR_RETURN(edge, ctx.Op("floor", {edge}));
  ASSIGN_OR_RETURN(edge, CastTo(ctx, edge, DType::kI64));
  // Filter i has edges l, c, h = edge[i], edge[i + 1], edge[i + 2]: [1, M] against bins j [S, 1].
  ASSIGN_OR_RETURN(Value * i_idx, IotaTo(ctx, bins));
  ASSIGN_OR_RETURN(Value * l, Shifted(ctx, edge, i_idx, 0));
  ASSIGN_OR_RETURN(Value * c, Shifted(ctx, edge, i_idx, 1));
  ASSIGN_OR_RETURN(Value * h, Shifted(ctx, edge, i_idx, 2));
  ASSIGN_OR_RETURN(Value * spec, ctx.Op("divide", {dft_length, I64(ctx, 2)}));
  ASSIGN_OR_RETURN(spec, ctx.Op("add", {spec, I64(ctx, 1)}));
  ASSIGN_OR_RETURN(Value * j, IotaTo(ctx, spec));
  ASSIGN_OR_RETURN(j, CastTo(ctx, j, DType::kF64));
  ASSIGN_OR_RETURN(j, ctx.Op("expand_dims", {j}, {{"axis", int64_t{1}}}));
  Value* zero = F64(ctx, 0);
  Value* one = F64(ctx, 1);
  // Rising edge on [l, c]: (j - l) / (c - l), or 1 at j == c when l == c.
  ASSIGN_OR_RETURN(Value * up, ctx.Op("subtract", {j, l}));
  ASSIGN_OR_RETURN(Value * up_span, ctx.Op("subtract", {c, l}));
  ASSIGN_OR_RETURN(up_span, ctx.Op("maximum", {up_span, one}));
  ASSIGN_OR_RETURN(up, ctx.Op("divide", {up, up_span}));
  ASSIGN_OR_RETURN(Value * flat, ctx.Op("equal", {c, l}));
  ASSIGN_OR_RETURN(up, ctx.Op("where", {flat, one, up}));
  ASSIGN_OR_RETURN(Value * below, ctx.Op("less", {j, l}));
  ASSIGN_OR_RETURN(Value * above, ctx.Op("greater", {j, c}));
  ASSIGN_OR_RETURN(Value * w, ctx.Op("where", {above, zero, up}));
  ASSIGN_OR_RETURN(w, ctx.Op("where", {below, zero, w}));
  // Falling edge on [c, h): (h - j) / (h - c), written over the rising one.
  ASSIGN_OR_RETURN(Value * down, ctx.Op("subtract", {h, j}));
  ASSIGN_OR_RETURN(Value * down_span, ctx.Op("subtract", {h, c}));
  ASSIGN_OR_RETURN(down_span, ctx.Op("maximum", {down_span, one}));
  ASSIGN_OR_RETURN(down, ctx.Op("divide", {down, down_span}));
  ASSIGN_OR_RETURN(Value * before_c, ctx.Op("less", {j, c}));
  ASSIGN_OR_RETURN(Value * before_h, ctx.Op("less", {j, h}));
  ASSIGN_OR_RETURN(Value * fall, ctx.Op("where", {before_h, down, w}));
  ASSIGN_OR_RETURN(w, ctx.Op("where", {before_c, w, fall}));
  return One(CastTo(ctx, w, out));
}

// ---- DFT -------------------------------------------------------------------------------------

// x[..., part] with the last (complex) dim dropped.
absl::StatusOr<Value*> Part(ImportContext& ctx, Value* x, int rank, int64_t part) {
  const int64_t last = rank - 1;
  ASSIGN_OR_RETURN(Value * s, ctx.Op("strided_slice", {x},
                                     {{"begin", std::vector<int64_t>{part}},
                                      {"end", std::vector<int64_t>{part + 1}},
                                      {"axes", std::vector<int64_t>{last}}}));
  return ctx.Op("squeeze", {s}, {{"axis", std::vector<int64_t>{last}}});
}

// The static dim `axis` of x, or nullopt.
std::optional<int64_t> StaticDim(ImportContext& ctx, Value* x, int64_t axis) {
  const Type t = ctx.TypeOf(x);
  if (!t.is_tensor() || axis >= t.rank() || !t.shape()[axis].is_constant()) return std::nullopt;
  return t.shape()[axis].constant();
}

// The transform of x [.., N along axis, .., 1 or 2] into [.., K along axis, .., 2] (the file
// comment has the algorithm). `length` is L as an i64 scalar, or nullptr for L = N.
absl::StatusOr<Value*> DftAlong(ImportContext& ctx, Value* x, int64_t axis, Value* length,
                                bool onesided, bool inverse) {
  ASSIGN_OR_RETURN(const int rank, NeedRank(ctx, x));
  if (rank < 2) return ctx.Error(absl::StrCat("input must have rank >= 2, got ", rank));
  const DType dt = ctx.DTypeOf(x);
  if (!IsFloat(dt)) return ctx.Error(absl::StrCat("input must be floating point, got ", DTypeName(dt)));
  const std::optional<int64_t> parts = StaticDim(ctx, x, rank - 1);
  if (!parts || (*parts != 1 && *parts != 2)) {
    return ctx.Error(absl::StrCat("the last dim of the input must be 1 (real) or 2 (complex), got ",
                                  ctx.TypeOf(x).ToString()));
  }
  const int64_t a = NormAxis(axis, rank);
  if (a < 0 || a > rank - 2) {
    return ctx.Error(absl::StrFormat("axis %d is out of range for rank %d (the last dim holds the "
                                     "real and imaginary parts)", axis, rank));
  }
  const std::optional<int64_t> n_in = StaticDim(ctx, x, a);
  std::optional<int64_t> l_const = n_in;
  if (length != nullptr) {
    auto c = ConstInts(ctx, length);
    l_const = c && c->size() == 1 ? std::optional<int64_t>((*c)[0]) : std::nullopt;
  } else {
    ASSIGN_OR_RETURN(length, DimOf(ctx, x, a));
  }
  if (l_const && n_in) {
    const int64_t k = onesided ? *l_const / 2 + 1 : *l_const;
    if (k > kMaxDftMatrix / std::max<int64_t>(*n_in, 1)) {
      return ctx.Unimplemented(absl::StrFormat(
          "a DFT of %d outputs from %d samples: its %d x %d matrix is above the 2^24 elements "
          "this O(n^2) form accepts", k, *n_in, k, *n_in));
    }
  }
  // The [K, N] angle matrix, reduced mod L in int64.
  Value* k_count = length;
  if (onesided) {
    ASSIGN_OR_RETURN(k_count, ctx.Op("divide", {length, I64(ctx, 2)}));
    ASSIGN_OR_RETURN(k_count, ctx.Op("add", {k_count, I64(ctx, 1)}));
  }
  ASSIGN_OR_RETURN(Value * k, IotaTo(ctx, k_count));
  ASSIGN_OR_RETURN(k, ctx.Op("expand_dims", {k}, {{"axis", int64_t{1}}}));
  ASSIGN_OR_RETURN(Value * n, DimIota(ctx, x, a));
  ASSIGN_OR_RETURN(Value * kn, ctx.Op("multiply", {k, n}));
  ASSIGN_OR_RETURN(kn, ctx.Op("mod", {kn, length}));
  ASSIGN_OR_RETURN(Value * theta, CastTo(ctx, kn, DType::kF64));
  ASSIGN_OR_RETURN(Value * len_f, CastTo(ctx, length, DType::kF64));
  ASSIGN_OR_RETURN(theta, ctx.Op("multiply", {theta, F64(ctx, kTwoPi)}));
  ASSIGN_OR_RETURN(theta, ctx.Op("divide", {theta, len_f}));
  ASSIGN_OR_RETURN(Value * cos_m, ctx.Op("cos", {theta}));
  ASSIGN_OR_RETURN(Value * sin_m, ctx.Op("sin", {theta}));
  if (!(l_const && n_in && *n_in <= *l_const)) {
    // Samples past L are truncated: their columns are zero.
    ASSIGN_OR_RETURN(Value * kept, ctx.Op("less", {n, length}));
    ASSIGN_OR_RETURN(cos_m, ctx.Op("where", {kept, cos_m, F64(ctx, 0)}));
    ASSIGN_OR_RETURN(sin_m, ctx.Op("where", {kept, sin_m, F64(ctx, 0)}));
  }
  // Real and imaginary parts [.., N] with the transformed axis last.
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i) {
    if (i != a) perm.push_back(i);
  }
  perm.push_back(a);
  std::vector<Value*> part_in;
  for (int64_t p = 0; p < *parts; ++p) {
    ASSIGN_OR_RETURN(Value * v, Part(ctx, x, rank, p));
    if (a != rank - 2) {
      ASSIGN_OR_RETURN(v, ctx.Op("transpose", {v}, {{"axes", perm}}));
    }
    ASSIGN_OR_RETURN(v, CastTo(ctx, v, DType::kF64));
    part_in.push_back(v);
  }
  // (re + i im)(C -/+ i S): the sign of S is + for the inverse.
  ASSIGN_OR_RETURN(Value * re, ctx.Op("nn.dense", {part_in[0], cos_m}));
  ASSIGN_OR_RETURN(Value * im, ctx.Op("nn.dense", {part_in[0], sin_m}));
  if (!inverse) {
    ASSIGN_OR_RETURN(im, ctx.Op("negative", {im}));
  }
  if (part_in.size() == 2) {
    ASSIGN_OR_RETURN(Value * im_c, ctx.Op("nn.dense", {part_in[1], cos_m}));
    ASSIGN_OR_RETURN(Value * im_s, ctx.Op("nn.dense", {part_in[1], sin_m}));
    ASSIGN_OR_RETURN(re, ctx.Op(inverse ? "subtract" : "add", {re, im_s}));
    ASSIGN_OR_RETURN(im, ctx.Op("add", {im, im_c}));
  }
  if (inverse) {
    ASSIGN_OR_RETURN(re, ctx.Op("divide", {re, len_f}));
    ASSIGN_OR_RETURN(im, ctx.Op("divide", {im, len_f}));
  }
  // [.., K, 2] with K back at `axis`.
  const Attrs last{{"axis", int64_t{-1}}};
  ASSIGN_OR_RETURN(re, ctx.Op("expand_dims", {re}, last));
  ASSIGN_OR_RETURN(im, ctx.Op("expand_dims", {im}, last));
  ASSIGN_OR_RETURN(Value * y, ctx.Op("concatenate", {re, im}, last));
  if (a != rank - 2) {
    std::vector<int64_t> back;
    for (int64_t p = 0; p < rank - 1; ++p) back.push_back(p == a ? rank - 2 : (p < a ? p : p - 1));
    back.push_back(rank - 1);
    ASSIGN_OR_RETURN(y, ctx.Op("transpose", {y}, {{"axes", back}}));
  }
  return CastTo(ctx, y, dt);
}

Outs Dft(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(const bool onesided, Flag(ctx, n, "onesided", 0));
  ASSIGN_OR_RETURN(const bool inverse, Flag(ctx, n, "inverse", 0));
  int64_t axis = IntAttr(n, "axis", 1);
  if (Value* a = In(in, 2)) {  // opset 20 moved axis to an input
    ASSIGN_OR_RETURN(std::vector<int64_t> av, RequireConstInts(ctx, a, "axis"));
    if (av.size() != 1) return ctx.Error("axis must be a scalar");
    axis = av[0];
  }
  Value* length = nullptr;
  if (Value* l = In(in, 1)) {
    ASSIGN_OR_RETURN(length, LengthInput(ctx, l, "dft_length", 1));
  }
  return One(DftAlong(ctx, x, axis, length, onesided, inverse));
}

Outs Stft(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(Value * signal, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * step_in, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(const bool onesided, Flag(ctx, n, "onesided", 1));
  Value* window = In(in, 2);
  Value* frame_length = In(in, 3);
  ASSIGN_OR_RETURN(const int rank, NeedRank(ctx, signal));
  if (rank != 3) {
    return ctx.Error(absl::StrCat("signal must be [batch, length, 1 or 2], got rank ", rank));
  }
  ASSIGN_OR_RETURN(Value * step, LengthInput(ctx, step_in, "frame_step", 1));
  Value* len = nullptr;
  if (window != nullptr) {
    const Type wt = ctx.TypeOf(window);
    if (!wt.is_tensor() || wt.rank() != 1) return ctx.Error("window must be 1-D");
    ASSIGN_OR_RETURN(len, DimOf(ctx, window, 0));
  }
  if (frame_length != nullptr) {
    ASSIGN_OR_RETURN(Value * fl, LengthInput(ctx, frame_length, "frame_length", 1));
    const int64_t w = window ? StaticDim(ctx, window, 0).value_or(-1) : -1;
    const auto f = ConstInts(ctx, fl);
    if (w >= 0 && f && f->size() == 1 && (*f)[0] != w) {
      return ctx.Error(absl::StrFormat("frame_length %d differs from the window's length %d",
                                       (*f)[0], w));
    }
    len = fl;
  }
  if (len == nullptr) return ctx.Error("needs a window or a frame_length");
  // frames = (signal_length - len) / step + 1, none when the signal is shorter than a frame.
  ASSIGN_OR_RETURN(Value * sig_len, DimOf(ctx, signal, 1));
  ASSIGN_OR_RETURN(Value * spare, ctx.Op("subtract", {sig_len, len}));
  ASSIGN_OR_RETURN(Value * frames, ctx.Op("divide", {spare, step}));
  ASSIGN_OR_RETURN(frames, ctx.Op("add", {frames, I64(ctx, 1)}));
  ASSIGN_OR_RETURN(Value * short_signal, ctx.Op("less", {spare, I64(ctx, 0)}));
  ASSIGN_OR_RETURN(frames, ctx.Op("where", {short_signal, I64(ctx, 0), frames}));
  ASSIGN_OR_RETURN(Value * f, IotaTo(ctx, frames));
  ASSIGN_OR_RETURN(f, ctx.Op("expand_dims", {f}, {{"axis", int64_t{1}}}));
  ASSIGN_OR_RETURN(f, ctx.Op("multiply", {f, step}));
  ASSIGN_OR_RETURN(Value * t, IotaTo(ctx, len));
  ASSIGN_OR_RETURN(Value * idx, ctx.Op("add", {f, t}));
  // [batch, frames, len, parts]
  ASSIGN_OR_RETURN(Value * x, ctx.Op("take", {signal, idx}, {{"axis", int64_t{1}}}));
  if (window != nullptr) {
    ASSIGN_OR_RETURN(Value * w, CastTo(ctx, window, ctx.DTypeOf(signal)));
    ASSIGN_OR_RETURN(w, ctx.Op("expand_dims", {w}, {{"axis", int64_t{1}}}));
    ASSIGN_OR_RETURN(x, ctx.Op("multiply", {x, w}));
  }
  return One(DftAlong(ctx, x, 2, nullptr, onesided, false));
}

}  // namespace

void AddSignalConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"BlackmanWindow", BlackmanWindow},
      {"DFT", Dft},
      {"HammingWindow", HammingWindow},
      {"HannWindow", HannWindow},
      {"MelWeightMatrix", MelWeightMatrix},
      {"STFT", Stft},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
