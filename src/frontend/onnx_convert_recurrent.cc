// ONNX converters of the recurrent family: RNN, GRU and LSTM (opset 14 forms; the opset 7
// forms are the same without `layout`), unrolled over a static sequence length into registry
// ops, or an IR `loop` over a symbolic (or long) one. The conventions are in onnx_converters.h.
//
// Layout 0 is X[T, B, I], initial_h/c[D, B, H], Y[T, D, B, H], Y_h/Y_c[D, B, H]; layout 1 puts
// the batch first (X[B, T, I], initial_h[B, D, H], Y[B, T, D, H], Y_h[B, D, H]) and is
// transposed to layout 0 on the way in and back on the way out. Per direction d (forward,
// reverse, or both, d = 0 forward):
//   1. The input projection of every step at once: XW = nn.dense(X, W[d]) + Wb (+ Rb where the
//      recurrence adds it unconditionally), [T, B, G*H], G the gate count (RNN 1, GRU 3 in
//      z r h order, LSTM 4 in i o f c order).
//   2. Steps t = 0..T-1 (reverse: T-1..0), each from take(XW, t) and nn.dense(h, R[d]):
//        RNN   h' = f(x + h R^T + b)
//        GRU   z = f(..), r = f(..), n = g(x_h + (r * h) R_h^T + Rb_h)       (linear_before_reset
//        0)
//                                   n = g(x_h + r * (h R_h^T + Rb_h))         (linear_before_reset
//                                   1)
//              h' = (1 - z) * n + z * h
//        LSTM  i = f(.. + P_i * c), f = f(.. + P_f * c), c~ = g(..), c' = f * c + i * c~,
//              o = f(.. + P_o * c'), h' = o * h(c')
//      `clip` bounds every gate's pre-activation (the input of f and g). The activation names
//      are ONNX's (Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
//      HardSigmoid, Elu, Softsign, Softplus; case-insensitive as ONNX Runtime); their alphas
//      and betas are taken in order by the activations that use them.
//   3. With sequence_lens, a step past a sequence's length leaves its h and c unchanged and
//      writes 0 to Y: where(t < len, h', h). Both directions then agree with ONNX (reverse
//      starts at len - 1 for each sequence) and Y_h holds the last valid step.
// Y stacks the steps' h (concatenate of expand_dims), Y_h and Y_c the final states.
//
// A sequence length that is symbolic (PyTorch exports LSTM with a dynamic one), or static but
// longer than kMaxUnrolledSteps, runs the step of 2. as the body of one IR `loop` per
// direction (the form the ONNX Loop importer builds): T trips, the time index, h (and c)
// carried, each step's y a scan output; the body reads XW, R and the lengths as captures. The
// reverse direction's time index counts down from T - 1 and its stacked Y is put back in time
// order by a take.
// Not supported: LSTM's input_forget = 1 (Unimplemented).
#include "frontend/onnx_converters.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "frontend/onnx_converter_helpers.h"
#include "passes/support/status_macros.h"

namespace hetpass::onnx_frontend {
namespace {

// Unrolling emits ~10-20 ops per step and direction; past this a loop is the better form.
constexpr int64_t kMaxUnrolledSteps = 64;

// Far above any real model's; keeps 2 * gates * hidden well inside int64.
constexpr int64_t kMaxHidden = int64_t{1} << 32;

// What distinguishes the three ops.
enum class Cell { kRnn, kGru, kLstm };

struct CellInfo {
  int gates;
  std::vector<std::string> default_activations;
};

CellInfo InfoOf(Cell cell) {
  switch (cell) {
    case Cell::kRnn:
      return {1, {"Tanh"}};
    case Cell::kGru:
      return {3, {"Sigmoid", "Tanh"}};
    case Cell::kLstm:
      return {4, {"Sigmoid", "Tanh", "Tanh"}};
  }
  return {1, {"Tanh"}};
}

// One activation with its parameters.
struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

// Parses `names` with ONNX Runtime's rule: each activation that takes an alpha (beta) takes
// the next value of activation_alpha (activation_beta), or its default when they run out.
absl::StatusOr<std::vector<Activation>> ParseActivations(ImportContext& ctx,
                                                         const onnx::NodeProto& n,
                                                         const std::vector<std::string>& names) {
  std::vector<float> alphas, betas;
  if (const auto* a = FindAttr(n, "activation_alpha"))
    alphas.assign(a->floats().begin(), a->floats().end());
  if (const auto* a = FindAttr(n, "activation_beta"))
    betas.assign(a->floats().begin(), a->floats().end());
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    Activation act{absl::AsciiStrToLower(raw)};
    // The defaults of the parameters it takes (ONNX Runtime's); nullopt: takes none.
    std::optional<double> da, db;
    if (act.name == "affine") {
      da = 1.0, db = 0.0;
    } else if (act.name == "leakyrelu") {
      da = 0.01;
    } else if (act.name == "thresholdedrelu" || act.name == "elu") {
      da = 1.0;
    } else if (act.name == "scaledtanh") {
      da = 1.0, db = 1.0;
    } else if (act.name == "hardsigmoid") {
      da = 0.2, db = 0.5;
    } else if (act.name != "relu" && act.name != "tanh" && act.name != "sigmoid" &&
               act.name != "softsign" && act.name != "softplus") {
      return ctx.Error(absl::StrCat("unknown activation '", raw, "'"));
    }
    if (da) act.alpha = ai < alphas.size() ? alphas[ai++] : *da;
    if (db) act.beta = bi < betas.size() ? betas[bi++] : *db;
    out.push_back(act);
  }
  return out;
}

absl::StatusOr<Value*> Apply(ImportContext& ctx, const Activation& act, Value* x) {
  auto scalar = [&](double v) { return ctx.ScalarLike(x, v); };
  const std::string& f = act.name;
  if (f == "sigmoid") return ctx.Op("sigmoid", {x});
  if (f == "tanh") return ctx.Op("tanh", {x});
  if (f == "relu") return ctx.Op("nn.relu", {x});
  if (f == "affine") {
    ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, scalar(act.alpha)}));
    return ctx.Op("add", {y, scalar(act.beta)});
  }
  if (f == "leakyrelu") return LeakyReluOf(ctx, x, act.alpha);
  if (f == "thresholdedrelu") return ThresholdedReluOf(ctx, x, act.alpha);
  if (f == "scaledtanh") {
    ASSIGN_OR_RETURN(Value * y, ctx.Op("multiply", {x, scalar(act.beta)}));
    ASSIGN_OR_RETURN(y, ctx.Op("tanh", {y}));
    return ctx.Op("multiply", {y, scalar(act.alpha)});
  }
  if (f == "hardsigmoid") return HardSigmoidOf(ctx, x, act.alpha, act.beta);
  if (f == "elu") return EluOf(ctx, x, act.alpha);
  if (f == "softsign") return SoftsignOf(ctx, x);
  return SoftplusOf(ctx, x);  // the names were checked by ParseActivations
}

// The static dims of `v`'s type, or an error naming `what` and its expected form.
absl::StatusOr<std::vector<int64_t>> StaticDims(ImportContext& ctx, const Value* v,
                                                absl::string_view what, int rank) {
  const Type t = ctx.TypeOf(v);
  if (!t.is_tensor()) return ctx.Unimplemented(absl::StrCat(what, " has an unknown type"));
  if (t.rank() != rank) {
    return ctx.Error(absl::StrFormat("%s must have rank %d, got %d", what, rank, t.rank()));
  }
  std::vector<int64_t> dims;
  for (const DimExpr& d : t.shape()) {
    if (!d.is_constant()) {
      return ctx.Unimplemented(absl::StrCat(what, " needs static dims, got ", t.ToString()));
    }
    dims.push_back(d.constant());
  }
  return dims;
}

// Everything one converter call needs, validated.
struct RecurrentSpec {
  Cell cell = Cell::kRnn;
  int gates = 1;
  int64_t hidden = 0;
  int64_t steps = 0;  // a static T to unroll, or 0: an IR loop
  int directions = 1;
  bool reverse_only = false;
  bool batch_first = false;
  std::optional<double> clip;
  bool linear_before_reset = false;
  std::vector<Activation> activations;  // per direction: activations[d * per_direction + k]
  int per_direction = 1;
};

class Unroller {
 public:
  Unroller(ImportContext& ctx, const RecurrentSpec& spec) : ctx_(ctx), spec_(spec) {}

  // One direction's outputs, layout 0.
  struct Result {
    Value* y;  // [T, B, H]
    Value* h;  // [B, H]
    Value* c;  // [B, H] (LSTM)
  };

  // Direction d of the op, inputs in layout 0: unrolled over a static T (spec_.steps > 0),
  // else one IR loop.
  absl::StatusOr<Result> Run(int d, bool reverse, Value* x, Value* w, Value* r, Value* b,
                             Value* lens, Value* h0, Value* c0, Value* p) {
    ASSIGN_OR_RETURN(Direction dir, Prepare(d, x, w, r, b, lens, h0, c0, p));
    if (spec_.steps == 0) return RunLoop(dir, reverse, x);
    std::vector<Value*> ys(spec_.steps, nullptr);
    Value* h = dir.h0;
    Value* c = dir.c0;
    for (int64_t s = 0; s < spec_.steps; ++s) {
      const int64_t t = reverse ? spec_.steps - 1 - s : s;
      ASSIGN_OR_RETURN(StepResult st, Step(dir, ctx_.Const(Tensor::Scalar(DType::kI64, t)), h, c));
      ASSIGN_OR_RETURN(ys[t], ctx_.Op("expand_dims", {st.y}, {{"axis", int64_t{0}}}));
      h = st.h;
      c = st.c;
    }
    ASSIGN_OR_RETURN(Value * y, ctx_.Op("concatenate", ys, {{"axis", int64_t{0}}}));
    return Result{y, h, c};
  }

 private:
  // What every step of one direction reads (computed once, outside the steps or the loop).
  struct Direction {
    Value* xw;  // [T, B, G*H]: X W^T + Wb (+ Rb except for GRU)
    Value* rd;  // [G*H, H]
    Value* rb;  // [G*H] (GRU only) or nullptr
    // GRU: R's z and r rows, its h rows, and Rb's parts (nullptr without B). Sliced once here,
    // not per step (a loop body would slice again on every trip).
    Value* r_zr;
    Value* r_h;
    Value* rb_zr;
    Value* rb_h;
    Value* peep[3];  // LSTM: P_i, P_o, P_f, or nullptr without P
    Value* lens;
    Value* h0;
    Value* c0;
    const Activation* acts;
  };
  struct StepResult {
    Value* y;  // h' where step t is inside its sequence, else 0
    Value* h;
    Value* c;
  };

  absl::StatusOr<Direction> Prepare(int d, Value* x, Value* w, Value* r, Value* b, Value* lens,
                                    Value* h0, Value* c0, Value* p) {
    const int64_t gh = spec_.gates * spec_.hidden;
    Direction dir{};
    dir.lens = lens;
    dir.acts = &spec_.activations[d * spec_.per_direction];
    ASSIGN_OR_RETURN(Value * wd, Pick(w, d));
    ASSIGN_OR_RETURN(dir.rd, Pick(r, d));
    ASSIGN_OR_RETURN(dir.xw, ctx_.Op("nn.dense", {x, wd}));  // [T, B, G*H]
    if (b != nullptr) {
      ASSIGN_OR_RETURN(Value * bd, Pick(b, d));
      ASSIGN_OR_RETURN(Value * wb, Cols(bd, 0, 0, gh));
      ASSIGN_OR_RETURN(dir.rb, Cols(bd, 0, gh, 2 * gh));
      ASSIGN_OR_RETURN(dir.xw, ctx_.Op("add", {dir.xw, wb}));
      if (spec_.cell != Cell::kGru) {
        // RNN and LSTM add both biases to every gate: once for all steps.
        ASSIGN_OR_RETURN(dir.xw, ctx_.Op("add", {dir.xw, dir.rb}));
        dir.rb = nullptr;
      }
    }
    if (spec_.cell == Cell::kGru) {
      // R rows: z [0, H), r [H, 2H), h [2H, 3H); nn.dense(h, rows) = h rows^T.
      const int64_t hs = spec_.hidden;
      ASSIGN_OR_RETURN(dir.r_zr, Cols(dir.rd, 0, 0, 2 * hs));
      ASSIGN_OR_RETURN(dir.r_h, Cols(dir.rd, 0, 2 * hs, 3 * hs));
      if (dir.rb != nullptr) {
        ASSIGN_OR_RETURN(dir.rb_zr, Cols(dir.rb, 0, 0, 2 * hs));
        ASSIGN_OR_RETURN(dir.rb_h, Cols(dir.rb, 0, 2 * hs, 3 * hs));
      }
    }
    if (p != nullptr) {
      ASSIGN_OR_RETURN(Value * pd, Pick(p, d));
      for (int k = 0; k < 3; ++k) {
        ASSIGN_OR_RETURN(dir.peep[k], Cols(pd, 0, k * spec_.hidden, (k + 1) * spec_.hidden));
      }
    }
    if (h0 != nullptr) {
      ASSIGN_OR_RETURN(dir.h0, Pick(h0, d));
    } else {
      ASSIGN_OR_RETURN(dir.h0, Zeros(x));
    }
    if (spec_.cell == Cell::kLstm) {
      if (c0 != nullptr) {
        ASSIGN_OR_RETURN(dir.c0, Pick(c0, d));
      } else {
        ASSIGN_OR_RETURN(dir.c0, Zeros(x));
      }
    }
    return dir;
  }

  // Step t (an i64 scalar value) from state h, c.
  absl::StatusOr<StepResult> Step(const Direction& dir, Value* t, Value* h, Value* c) {
    ASSIGN_OR_RETURN(Value * xt, ctx_.Op("take", {dir.xw, t},
                                         {{"axis", int64_t{0}}, {"mode", std::string("fast")}}));
    Value* h_new = nullptr;
    Value* c_new = nullptr;
    switch (spec_.cell) {
      case Cell::kRnn: {
        ASSIGN_OR_RETURN(Value * hr, ctx_.Op("nn.dense", {h, dir.rd}));
        ASSIGN_OR_RETURN(Value * pre, ctx_.Op("add", {xt, hr}));
        ASSIGN_OR_RETURN(h_new, Gate(dir.acts[0], pre));
        break;
      }
      case Cell::kGru: {
        ASSIGN_OR_RETURN(h_new, GruStep(dir, xt, h));
        break;
      }
      case Cell::kLstm: {
        ASSIGN_OR_RETURN(Value * hr, ctx_.Op("nn.dense", {h, dir.rd}));
        ASSIGN_OR_RETURN(Value * pre, ctx_.Op("add", {xt, hr}));
        ASSIGN_OR_RETURN(std::tie(h_new, c_new), LstmStep(dir, pre, c));
        break;
      }
    }
    if (dir.lens == nullptr) return StepResult{h_new, h_new, c_new};
    // [B, 1]: does step t lie inside each sequence?
    ASSIGN_OR_RETURN(Value * inside, ctx_.Op("less", {t, dir.lens}));
    ASSIGN_OR_RETURN(inside, ctx_.Op("expand_dims", {inside}, {{"axis", int64_t{1}}}));
    StepResult out{nullptr, nullptr, nullptr};
    ASSIGN_OR_RETURN(out.y, ctx_.Op("where", {inside, h_new, ctx_.ScalarLike(h_new, 0)}));
    ASSIGN_OR_RETURN(out.h, ctx_.Op("where", {inside, h_new, h}));
    if (c_new != nullptr) {
      ASSIGN_OR_RETURN(out.c, ctx_.Op("where", {inside, c_new, c}));
    }
    return out;
  }

  // A symbolic T: `loop(T, true, t0, h0[, c0]) (iter, cond, t, h[, c]) { step t; yield true,
  // t + dt, h'[, c'], y }`, the scan output stacking y in iteration order (reversed back for
  // the reverse direction by a take). The time index t is carried (from 0 up, or from T - 1
  // down) rather than computed from the loop's host-side iteration number, so it can live on
  // the device beside the state: no copy per trip. The step reads XW, R, the biases and the
  // lengths as captures.
  absl::StatusOr<Result> RunLoop(const Direction& dir, bool reverse, Value* x) {
    const bool lstm = spec_.cell == Cell::kLstm;
    auto i64 = [&](int64_t v) {
      return ctx_.Const(Tensor::Scalar(DType::kI64, static_cast<double>(v)));
    };
    ASSIGN_OR_RETURN(Value * shape, ctx_.Op("shape_of", {x}));
    ASSIGN_OR_RETURN(Value * trips, ctx_.Op("take", {shape, i64(0)},
                                            {{"axis", int64_t{0}}, {"mode", std::string("fast")}}));
    ASSIGN_OR_RETURN(Value * last, ctx_.Op("subtract", {trips, i64(1)}));  // T - 1
    Value* t0 = reverse ? last : i64(0);
    auto owned = std::make_unique<Node>(NodeKind::kLoop);
    owned->AddOperand(trips);
    owned->AddOperand(ctx_.Const(Tensor::Scalar(DType::kBool, 1)));
    owned->AddOperand(t0);
    owned->AddOperand(dir.h0);
    if (lstm) owned->AddOperand(dir.c0);
    owned->set_loc(NamedLocation(ctx_.current().name()));
    Node* loop = ctx_.block()->Append(std::move(owned));
    Block* body = loop->region(0);
    auto param = [&](const char* name, Type type) {
      Value* p = body->AddParam(Type(), name);
      ctx_.SetLocalType(p, std::move(type));
      return p;
    };
    param("iter", Type::Tensor(DType::kI64, {}));
    param("cond", Type::Tensor(DType::kBool, {}));
    Value* t = param("t", Type::Tensor(DType::kI64, {}));
    Value* h = param("h", ctx_.TypeOf(dir.h0));
    Value* c = lstm ? param("c", ctx_.TypeOf(dir.c0)) : nullptr;
    Block* outer = ctx_.block();
    ctx_.set_block(body);
    std::vector<Value*> yields;
    absl::StatusOr<StepResult> st = [&]() -> absl::StatusOr<StepResult> {
      ASSIGN_OR_RETURN(StepResult r, Step(dir, t, h, c));
      ASSIGN_OR_RETURN(Value * t_next, ctx_.Op("add", {t, i64(reverse ? -1 : 1)}));
      yields = {ctx_.Const(Tensor::Scalar(DType::kBool, 1)), t_next, r.h};
      if (lstm) yields.push_back(r.c);
      yields.push_back(r.y);
      return r;
    }();
    ctx_.set_block(outer);
    if (!st.ok()) return st.status();
    body->set_results(yields);
    ctx_.SetLocalType(loop->AddResult(), Type::Tensor(DType::kI64, {}));  // the final t
    Result res{nullptr, loop->AddResult(), nullptr};
    ctx_.SetLocalType(res.h, ctx_.TypeOf(dir.h0));
    if (lstm) {
      res.c = loop->AddResult();
      ctx_.SetLocalType(res.c, ctx_.TypeOf(dir.c0));
    }
    res.y = loop->AddResult();
    const Type yt = ctx_.TypeOf(st->y);
    const Type xt = ctx_.TypeOf(x);
    if (yt.is_tensor() && xt.is_tensor()) {
      std::vector<DimExpr> dims{xt.shape()[0]};
      dims.insert(dims.end(), yt.shape().begin(), yt.shape().end());
      ctx_.SetLocalType(res.y, Type::Tensor(yt.dtype(), std::move(dims)));
    }
    if (reverse) {
      // Iteration k computed time T-1-k: take rows T-1, T-2, .., 0.
      ASSIGN_OR_RETURN(Value * k, DimIota(ctx_, res.y, 0));
      ASSIGN_OR_RETURN(Value * rows, ctx_.Op("subtract", {last, k}));
      ASSIGN_OR_RETURN(res.y, ctx_.Op("take", {res.y, rows},
                                      {{"axis", int64_t{0}}, {"mode", std::string("fast")}}));
    }
    return res;
  }

 private:
  // v[d] of a per-direction tensor.
  absl::StatusOr<Value*> Pick(Value* v, int d) {
    return ctx_.Op("take", {v, ctx_.Const(Tensor::Scalar(DType::kI64, d))},
                   {{"axis", int64_t{0}}, {"mode", std::string("fast")}});
  }
  // Elements [begin, end) along `axis`.
  absl::StatusOr<Value*> Cols(Value* v, int64_t axis, int64_t begin, int64_t end) {
    return ctx_.Op("strided_slice", {v},
                   {{"begin", std::vector<int64_t>{begin}},
                    {"end", std::vector<int64_t>{end}},
                    {"axes", std::vector<int64_t>{axis}}});
  }
  // Gate k of a [B, G*H] pre-activation.
  absl::StatusOr<Value*> GateCols(Value* v, int k) {
    return Cols(v, 1, k * spec_.hidden, (k + 1) * spec_.hidden);
  }
  // [B, H] zeros, B read from x's shape (metadata only).
  absl::StatusOr<Value*> Zeros(Value* x) {
    ASSIGN_OR_RETURN(Value * s, ctx_.Op("shape_of", {x}));
    ASSIGN_OR_RETURN(Value * batch, Cols(s, 0, 1, 2));
    ASSIGN_OR_RETURN(
        Value * shape,
        ctx_.Op("concatenate",
                {batch, ctx_.Const(Tensor::FromInt64s(DType::kI64, {1}, {spec_.hidden}))},
                {{"axis", int64_t{0}}}));
    return ctx_.Op("dyn.zeros", {shape}, {{"dtype", ctx_.DTypeOf(x)}});
  }
  // act(clip(pre)).
  absl::StatusOr<Value*> Gate(const Activation& act, Value* pre) {
    if (spec_.clip) {
      ASSIGN_OR_RETURN(pre, ctx_.Op("maximum", {pre, ctx_.ScalarLike(pre, -*spec_.clip)}));
      ASSIGN_OR_RETURN(pre, ctx_.Op("minimum", {pre, ctx_.ScalarLike(pre, *spec_.clip)}));
    }
    return Apply(ctx_, act, pre);
  }

  absl::StatusOr<Value*> GruStep(const Direction& dir, Value* xt, Value* h) {
    const int64_t hs = spec_.hidden;
    const Activation* acts = dir.acts;
    ASSIGN_OR_RETURN(Value * hzr, ctx_.Op("nn.dense", {h, dir.r_zr}));
    if (dir.rb_zr != nullptr) {
      ASSIGN_OR_RETURN(hzr, ctx_.Op("add", {hzr, dir.rb_zr}));
    }
    ASSIGN_OR_RETURN(Value * x_zr, Cols(xt, 1, 0, 2 * hs));
    ASSIGN_OR_RETURN(Value * x_h, Cols(xt, 1, 2 * hs, 3 * hs));
    ASSIGN_OR_RETURN(Value * zr, ctx_.Op("add", {x_zr, hzr}));
    ASSIGN_OR_RETURN(Value * z, GateCols(zr, 0));
    ASSIGN_OR_RETURN(z, Gate(acts[0], z));
    ASSIGN_OR_RETURN(Value * r, GateCols(zr, 1));
    ASSIGN_OR_RETURN(r, Gate(acts[0], r));
    Value* hh = nullptr;
    if (spec_.linear_before_reset) {
      ASSIGN_OR_RETURN(hh, ctx_.Op("nn.dense", {h, dir.r_h}));
      if (dir.rb_h != nullptr) {
        ASSIGN_OR_RETURN(hh, ctx_.Op("add", {hh, dir.rb_h}));
      }
      ASSIGN_OR_RETURN(hh, ctx_.Op("multiply", {r, hh}));
    } else {
      ASSIGN_OR_RETURN(Value * rh, ctx_.Op("multiply", {r, h}));
      ASSIGN_OR_RETURN(hh, ctx_.Op("nn.dense", {rh, dir.r_h}));
      if (dir.rb_h != nullptr) {
        ASSIGN_OR_RETURN(hh, ctx_.Op("add", {hh, dir.rb_h}));
      }
    }
    ASSIGN_OR_RETURN(hh, ctx_.Op("add", {x_h, hh}));
    ASSIGN_OR_RETURN(hh, Gate(acts[1], hh));
    // (1 - z) * n + z * h = n + z * (h - n).
    ASSIGN_OR_RETURN(Value * diff, ctx_.Op("subtract", {h, hh}));
    ASSIGN_OR_RETURN(diff, ctx_.Op("multiply", {z, diff}));
    return ctx_.Op("add", {hh, diff});
  }

  absl::StatusOr<std::pair<Value*, Value*>> LstmStep(const Direction& dir, Value* pre,
                                                     Value* c) {
    const Activation* acts = dir.acts;
    // Gate order i o f c; peepholes P = [P_i, P_o, P_f].
    auto peephole = [&](Value* g, int k, Value* state) -> absl::StatusOr<Value*> {
      if (dir.peep[k] == nullptr) return g;
      ASSIGN_OR_RETURN(Value * m, ctx_.Op("multiply", {dir.peep[k], state}));
      return ctx_.Op("add", {g, m});
    };
    ASSIGN_OR_RETURN(Value * i, GateCols(pre, 0));
    ASSIGN_OR_RETURN(i, peephole(i, 0, c));
    ASSIGN_OR_RETURN(i, Gate(acts[0], i));
    ASSIGN_OR_RETURN(Value * f, GateCols(pre, 2));
    ASSIGN_OR_RETURN(f, peephole(f, 2, c));
    ASSIGN_OR_RETURN(f, Gate(acts[0], f));
    ASSIGN_OR_RETURN(Value * cc, GateCols(pre, 3));
    ASSIGN_OR_RETURN(cc, Gate(acts[1], cc));
    ASSIGN_OR_RETURN(Value * fc, ctx_.Op("multiply", {f, c}));
    ASSIGN_OR_RETURN(Value * ic, ctx_.Op("multiply", {i, cc}));
    ASSIGN_OR_RETURN(Value * c_new, ctx_.Op("add", {fc, ic}));
    ASSIGN_OR_RETURN(Value * o, GateCols(pre, 1));
    ASSIGN_OR_RETURN(o, peephole(o, 1, c_new));
    ASSIGN_OR_RETURN(o, Gate(acts[0], o));
    ASSIGN_OR_RETURN(Value * hc, Apply(ctx_, acts[2], c_new));
    ASSIGN_OR_RETURN(Value * h_new, ctx_.Op("multiply", {o, hc}));
    return std::make_pair(h_new, c_new);
  }

  ImportContext& ctx_;
  const RecurrentSpec& spec_;
};

// Reads and checks the attributes and input shapes (see the header comment for the forms).
// The attributes: direction, layout, clip, linear_before_reset, input_forget, activations.
absl::StatusOr<RecurrentSpec> ReadAttributes(ImportContext& ctx, const onnx::NodeProto& n,
                                             Cell cell) {
  RecurrentSpec spec;
  spec.cell = cell;
  const CellInfo info = InfoOf(cell);
  spec.gates = info.gates;
  spec.per_direction = static_cast<int>(info.default_activations.size());
  const std::string direction = StringAttr(n, "direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.Error(
        absl::StrCat("direction must be forward, reverse or bidirectional, got '", direction, "'"));
  }
  spec.directions = direction == "bidirectional" ? 2 : 1;
  spec.reverse_only = direction == "reverse";
  const int64_t layout = IntAttr(n, "layout", 0);
  if (layout != 0 && layout != 1)
    return ctx.Error(absl::StrCat("layout must be 0 or 1, got ", layout));
  spec.batch_first = layout == 1;
  if (const auto* a = FindAttr(n, "clip")) {
    if (!(a->f() > 0)) return ctx.Error(absl::StrCat("clip must be positive, got ", a->f()));
    spec.clip = a->f();
  }
  const int64_t lbr = IntAttr(n, "linear_before_reset", 0);
  if (lbr != 0 && lbr != 1)
    return ctx.Error(absl::StrCat("linear_before_reset must be 0 or 1, got ", lbr));
  spec.linear_before_reset = lbr == 1;
  if (cell == Cell::kLstm && IntAttr(n, "input_forget", 0) != 0) {
    return ctx.Unimplemented("input_forget = 1 is not supported");
  }
  std::vector<std::string> names;
  if (const auto* a = FindAttr(n, "activations"))
    names.assign(a->strings().begin(), a->strings().end());
  if (names.empty()) {
    for (int d = 0; d < spec.directions; ++d) {
      names.insert(names.end(), info.default_activations.begin(), info.default_activations.end());
    }
  } else if (static_cast<int>(names.size()) == spec.per_direction && spec.directions == 2) {
    names.insert(names.end(), names.begin(), names.end());  // one list for both directions
  }
  if (static_cast<int>(names.size()) != spec.per_direction * spec.directions) {
    return ctx.Error(absl::StrFormat("activations has %d names, needs %d (%d per direction)",
                                     names.size(), spec.per_direction * spec.directions,
                                     spec.per_direction));
  }
  ASSIGN_OR_RETURN(spec.activations, ParseActivations(ctx, n, names));
  return spec;
}

// The input shapes against the attributes; sets the hidden size (from R) and the steps to
// unroll.
absl::Status CheckInputs(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in,
                         RecurrentSpec& spec) {
  const Cell cell = spec.cell;
  ASSIGN_OR_RETURN(Value * x, Need(ctx, in, 0));
  ASSIGN_OR_RETURN(Value * w, Need(ctx, in, 1));
  ASSIGN_OR_RETURN(Value * r, Need(ctx, in, 2));
  ASSIGN_OR_RETURN(std::vector<int64_t> rs, StaticDims(ctx, r, "R", 3));
  ASSIGN_OR_RETURN(std::vector<int64_t> ws, StaticDims(ctx, w, "W", 3));
  spec.hidden = rs[2];
  if (const auto* a = FindAttr(n, "hidden_size"); a != nullptr && a->i() != spec.hidden) {
    return ctx.Error(
        absl::StrFormat("hidden_size is %d but R is [%s]", a->i(), absl::StrJoin(rs, ", ")));
  }
  // Bounded so that gates * 2 * hidden cannot overflow (a hostile R declares any dims).
  if (spec.hidden <= 0 || spec.hidden > kMaxHidden) {
    return ctx.Error(
        absl::StrFormat("the hidden size must be in [1, %d], got %d", kMaxHidden, spec.hidden));
  }
  const int64_t gh = spec.gates * spec.hidden;
  if (rs[0] != spec.directions || rs[1] != gh) {
    return ctx.Error(absl::StrFormat("R must be [%d, %d, %d], got [%s]", spec.directions, gh,
                                     spec.hidden, absl::StrJoin(rs, ", ")));
  }
  const Type xt = ctx.TypeOf(x);
  if (!xt.is_tensor()) return ctx.Unimplemented("X has an unknown type");
  if (xt.rank() != 3) return ctx.Error(absl::StrCat("X must have rank 3, got ", xt.ToString()));
  const DimExpr in_dim = xt.shape()[2];
  if (ws[0] != spec.directions || ws[1] != gh ||
      (in_dim.is_constant() && in_dim.constant() != ws[2])) {
    return ctx.Error(absl::StrFormat("W must be [%d, %d, %s], got [%s]", spec.directions, gh,
                                     in_dim.ToString(), absl::StrJoin(ws, ", ")));
  }
  auto check = [&](size_t i, absl::string_view what, std::vector<int64_t> want) -> absl::Status {
    Value* v = In(in, i);
    if (v == nullptr) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::vector<int64_t> got,
                     StaticDims(ctx, v, what, static_cast<int>(want.size())));
    if (got != want) {
      return ctx.Error(absl::StrFormat("%s must be [%s], got [%s]", what, absl::StrJoin(want, ", "),
                                       absl::StrJoin(got, ", ")));
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check(3, "B", {spec.directions, 2 * gh}));
  if (cell == Cell::kLstm) RETURN_IF_ERROR(check(7, "P", {spec.directions, 3 * spec.hidden}));
  for (size_t i : {size_t{5}, size_t{6}}) {
    Value* v = In(in, i);
    if (v == nullptr || (i == 6 && cell != Cell::kLstm)) continue;
    // Only dims known here are checked: PyTorch builds its zero initial states with
    // ConstantOfShape of a computed shape, whose dims the local types do not know yet.
    const Type t = ctx.TypeOf(v);
    if (!t.is_tensor()) continue;
    auto differs = [&](int axis, int64_t want) {
      const DimExpr& d = t.shape()[axis];
      return d.is_constant() && d.constant() != want;
    };
    if (t.rank() != 3 || differs(2, spec.hidden) ||
        differs(spec.batch_first ? 1 : 0, spec.directions)) {
      return ctx.Error(absl::StrFormat("%s must have %d directions and hidden size %d, got %s",
                                       i == 5 ? "initial_h" : "initial_c", spec.directions,
                                       spec.hidden, t.ToString()));
    }
  }
  // A static T up to kMaxUnrolledSteps is unrolled; otherwise (symbolic, 0 or long) the steps
  // run in an IR loop: steps = 0.
  const DimExpr steps = xt.shape()[spec.batch_first ? 1 : 0];
  spec.steps = steps.is_constant() && steps.constant() >= 1 && steps.constant() <= kMaxUnrolledSteps
                   ? steps.constant()
                   : 0;
  return absl::OkStatus();
}

template <Cell kCell>
Outs Recurrent(ImportContext& ctx, const onnx::NodeProto& n, const Ins& in) {
  ASSIGN_OR_RETURN(RecurrentSpec spec, ReadAttributes(ctx, n, kCell));
  RETURN_IF_ERROR(CheckInputs(ctx, n, in, spec));
  Value* x = in[0];
  Value* h0 = In(in, 5);
  Value* c0 = kCell == Cell::kLstm ? In(in, 6) : nullptr;
  const std::vector<int64_t> swap01{1, 0, 2};
  if (spec.batch_first) {
    ASSIGN_OR_RETURN(x, ctx.Op("transpose", {x}, {{"axes", swap01}}));
    if (h0 != nullptr) {
      ASSIGN_OR_RETURN(h0, ctx.Op("transpose", {h0}, {{"axes", swap01}}));
    }
    if (c0 != nullptr) {
      ASSIGN_OR_RETURN(c0, ctx.Op("transpose", {c0}, {{"axes", swap01}}));
    }
  }
  Value* lens = In(in, 4);
  if (lens != nullptr) {
    if (ctx.RankOf(lens) != 1) return ctx.Error("sequence_lens must be 1-D");
    if (ctx.DTypeOf(lens) != DType::kI64) {
      ASSIGN_OR_RETURN(lens, ctx.Op("cast", {lens}, {{"dtype", DType::kI64}}));
    }
    // Lengths all equal to T mask nothing (the usual exported constant).
    if (auto c = ConstInts(ctx, lens);
        c && std::all_of(c->begin(), c->end(), [&](int64_t l) { return l == spec.steps; })) {
      lens = nullptr;
    }
  }
  Unroller unroller(ctx, spec);
  std::vector<Value*> ys, hs, cs;
  for (int d = 0; d < spec.directions; ++d) {
    const bool reverse = spec.reverse_only || d == 1;
    ASSIGN_OR_RETURN(Unroller::Result res,
                     unroller.Run(d, reverse, x, in[1], in[2], In(in, 3), lens, h0, c0,
                                  kCell == Cell::kLstm ? In(in, 7) : nullptr));
    ASSIGN_OR_RETURN(Value * y, ctx.Op("expand_dims", {res.y}, {{"axis", int64_t{1}}}));
    ASSIGN_OR_RETURN(Value * h, ctx.Op("expand_dims", {res.h}, {{"axis", int64_t{0}}}));
    ys.push_back(y);
    hs.push_back(h);
    if (res.c != nullptr) {
      ASSIGN_OR_RETURN(Value * c, ctx.Op("expand_dims", {res.c}, {{"axis", int64_t{0}}}));
      cs.push_back(c);
    }
  }
  auto join = [&](std::vector<Value*> parts, int64_t axis) -> absl::StatusOr<Value*> {
    if (parts.size() == 1) return parts[0];
    return ctx.Op("concatenate", parts, {{"axis", axis}});
  };
  ASSIGN_OR_RETURN(Value * y, join(ys, 1));    // [T, D, B, H]
  ASSIGN_OR_RETURN(Value * y_h, join(hs, 0));  // [D, B, H]
  Value* y_c = nullptr;
  if (!cs.empty()) {
    ASSIGN_OR_RETURN(y_c, join(cs, 0));
  }
  if (spec.batch_first) {
    ASSIGN_OR_RETURN(y, ctx.Op("transpose", {y}, {{"axes", std::vector<int64_t>{2, 0, 1, 3}}}));
    ASSIGN_OR_RETURN(y_h, ctx.Op("transpose", {y_h}, {{"axes", swap01}}));
    if (y_c != nullptr) {
      ASSIGN_OR_RETURN(y_c, ctx.Op("transpose", {y_c}, {{"axes", swap01}}));
    }
  }
  std::vector<Value*> outs{y, y_h};
  if (kCell == Cell::kLstm) outs.push_back(y_c);
  return outs;
}

}  // namespace

void AddRecurrentConverters(ConverterTable& table) {
  constexpr ConverterEntry kEntries[] = {
      {"GRU", Recurrent<Cell::kGru>},
      {"LSTM", Recurrent<Cell::kLstm>},
      {"RNN", Recurrent<Cell::kRnn>},
  };
  table.insert(table.end(), std::begin(kEntries), std::end(kEntries));
}

}  // namespace hetpass::onnx_frontend
