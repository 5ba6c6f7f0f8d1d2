// Tests of the ONNX Compress, ReverseSequence, Einsum, RNN, GRU and LSTM converters for what
// ONNX's node tests (the onnx.conformance ctest) do not cover: einsum with an ellipsis, a
// diagonal, three operands and a symbolic dim; malformed equations; Compress on sim with its
// inputs on the device copying only the count; bidirectional GRU and LSTM with sequence_lens
// and a symbolic batch against a reference written out here in loops; error paths.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/pass/pass_manager.h"
#include "passes/pass/pass_registry.h"
#include "passes/runtime/device.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"
#include "support/onnx_one_node_model.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

struct RunResult {
  std::vector<Tensor> outputs;
  runtime::DeviceCounters counters;
};

// Imports `m`, compiles it with the default pipeline for `target` (with inputs and outputs
// placed on the accelerator when `on_device`) and runs it once.
absl::StatusOr<RunResult> RunModel(const OneNodeModel& m, DeviceKind target,
                                   const std::vector<Tensor>& inputs, bool on_device = false) {
  auto module = ImportOnnx(m.Bytes());
  if (!module.ok()) return module.status();
  std::string pipeline = vm::DefaultPipeline(target);
  if (on_device) {
    pipeline = absl::StrReplaceAll(
        pipeline,
        {{"plan-devices{target=sim}", "plan-devices{target=sim,inputs=target,outputs=target}"}});
  }
  PassManagerOptions o;
  o.verify_each = true;
  auto pm = ParsePipeline(pipeline, o);
  if (!pm.ok()) return pm.status();
  if (auto r = (*pm)->Run(**module); !r.ok()) return r.status();
  auto exe = vm::CompileModule(**module);
  if (!exe.ok()) return exe.status();
  auto machine = vm::VirtualMachine::Load(*std::move(exe));
  if (!machine.ok()) return machine.status();
  auto got = (*machine)->RunWithHostTensors("main", inputs);
  if (!got.ok()) return got.status();
  return RunResult{*std::move(got), (*machine)->LastRunCounters()};
}

// Deterministic test data in (-0.5, 0.5).
std::vector<double> Pattern(int64_t n, double seed) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = 0.5 * std::sin(seed + 0.7 * static_cast<double>(i));
  return v;
}
std::vector<float> AsFloats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want,
                double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

// ---- Einsum ----------------------------------------------------------------------------------

// Tests the implicit form with an ellipsis: "...ij,jk" is "...ij,jk->...ik", the ellipsis dims
// first, then the letters used once in ASCII order; and that a symbolic ellipsis dim runs
// (the reshapes then have computed targets).
TEST(OnnxEinsum, ImplicitOutputWithEllipsis) {
  OneNodeModel m(12, "Einsum", {"a", "b"});
  m.Input("a", {"n", "3", "4"}).Input("b", {"4", "2"}).Str("equation", "...ij, jk");
  EXPECT_THAT(m.Import(), HasSubstr("f32[n, 3, 2]"));
  const std::vector<double> a = Pattern(2 * 3 * 4, 1), b = Pattern(4 * 2, 2);
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 2; ++k) {
        double s = 0;
        for (int j = 0; j < 4; ++j) s += a[(n * 3 + i) * 4 + j] * b[j * 2 + k];
        want.push_back(s);
      }
  for (DeviceKind target : {DeviceKind::kCpu, DeviceKind::kSim}) {
    auto r = RunModel(m, target,
                      {Tensor::FromDoubles(DType::kF32, {2, 3, 4}, a),
                       Tensor::FromDoubles(DType::kF32, {4, 2}, b)});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outputs[0].shape(), (std::vector<int64_t>{2, 3, 2}));
    ExpectNear(r->outputs[0].ToDoubles(), want);
  }
}

// Tests a diagonal (a subscript repeated in one term) contracted with a vector, and three
// operands contracted left to right with the output transposed.
TEST(OnnxEinsum, DiagonalAndThreeOperands) {
  OneNodeModel diag(12, "Einsum", {"a", "v"});
  diag.Input("a", {"3", "3", "2"}).Input("v", {"2"}).Str("equation", "iij,j->i");
  const std::vector<double> a = Pattern(18, 3), v = Pattern(2, 4);
  std::vector<double> want(3, 0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) want[i] += a[(i * 3 + i) * 2 + j] * v[j];
  auto r = RunModel(
      diag, DeviceKind::kCpu,
      {Tensor::FromDoubles(DType::kF32, {3, 3, 2}, a), Tensor::FromDoubles(DType::kF32, {2}, v)});
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectNear(r->outputs[0].ToDoubles(), want);

  OneNodeModel three(12, "Einsum", {"x", "y", "z"});
  three.Input("x", {"2", "3"}).Input("y", {"3", "4"}).Input("z", {"4", "5"});
  three.Str("equation", "ij,jk,kl->li");
  const std::vector<double> x = Pattern(6, 5), y = Pattern(12, 6), z = Pattern(20, 7);
  std::vector<double> want3(5 * 2, 0);
  for (int l = 0; l < 5; ++l)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k) want3[l * 2 + i] += x[i * 3 + j] * y[j * 4 + k] * z[k * 5 + l];
  auto r3 = RunModel(
      three, DeviceKind::kSim,
      {Tensor::FromDoubles(DType::kF32, {2, 3}, x), Tensor::FromDoubles(DType::kF32, {3, 4}, y),
       Tensor::FromDoubles(DType::kF32, {4, 5}, z)});
  ASSERT_TRUE(r3.ok()) << r3.status();
  EXPECT_EQ(r3->outputs[0].shape(), (std::vector<int64_t>{5, 2}));
  ExpectNear(r3->outputs[0].ToDoubles(), want3);
}

// Tests edge forms: the implicit trace "ii" (a repeated subscript is summed), an implicit outer
// product whose output is in ASCII order ("j,i" is "j,i->ij"), and ellipses that broadcast a
// 1 against 3 ("...,...->...").
TEST(OnnxEinsum, EdgeForms) {
  OneNodeModel trace(12, "Einsum", {"a"});
  trace.Input("a", {"3", "3"}).Str("equation", "ii");
  auto r = RunModel(trace, DeviceKind::kCpu,
                    {Tensor::FromDoubles(DType::kF32, {3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].shape(), std::vector<int64_t>{});
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{15}));

  OneNodeModel outer(12, "Einsum", {"a", "b"});
  outer.Input("a", {"2"}).Input("b", {"3"}).Str("equation", "j,i");  // implicit: "j,i->ij"
  r = RunModel(outer, DeviceKind::kSim,
               {Tensor::FromDoubles(DType::kF32, {2}, {1, 2}),
                Tensor::FromDoubles(DType::kF32, {3}, {1, 10, 100})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{1, 2, 10, 20, 100, 200}));

  OneNodeModel bcast(12, "Einsum", {"a", "b"});
  bcast.Input("a", {"2", "1"}).Input("b", {"3"}).Str("equation", "...,...->...");
  r = RunModel(bcast, DeviceKind::kCpu,
               {Tensor::FromDoubles(DType::kF32, {2, 1}, {1, 2}),
                Tensor::FromDoubles(DType::kF32, {3}, {1, 10, 100})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{1, 10, 100, 2, 20, 200}));

  // A summed-out ellipsis dim, 1 against 2: sum_e a[0, i, j] b[e, j, k].
  OneNodeModel summed(12, "Einsum", {"a", "b"});
  summed.Input("a", {"1", "1", "2"}).Input("b", {"2", "2", "1"}).Str("equation", "...ij,...jk->ik");
  r = RunModel(summed, DeviceKind::kCpu,
               {Tensor::FromDoubles(DType::kF32, {1, 1, 2}, {1, 2}),
                Tensor::FromDoubles(DType::kF32, {2, 2, 1}, {1, 10, 100, 1000})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].shape(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{1 * 101 + 2 * 1010}));
}

// Tests that malformed equations are InvalidArgument errors naming the problem.
TEST(OnnxEinsum, MalformedEquations) {
  struct Case {
    std::string equation, message;
  };
  const std::vector<Case> cases = {
      {"ij,jk->ik", "term 'ij' has 2 subscripts for input 0 of rank 3"},
      {"ijk,k$->ij", "bad character '$' in term 'k$'"},
      {"i..jk,k->i", "malformed ellipsis in term 'i..jk'"},
      {"......i,k->i", "malformed ellipsis"},
      {"ijk,k->ijz", "output subscript z is in no input"},
      {"ijk,k->ii", "output subscript i appears twice"},
      {"ijk,k,k->i", "has 3 terms for 2 inputs"},
      {"ijk,k->i->j", "has two '->'"},
      {"ijj,j->i", "one subscript j spans dims 3 and 4"},
      {"ijk,j->i", "one subscript j spans dims 3 and 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.equation);
    OneNodeModel m(12, "Einsum", {"a", "b"});
    m.Input("a", {"2", "3", "4"}).Input("b", {"4"}).Str("equation", c.equation);
    const std::string r = m.Import();
    EXPECT_THAT(r, StartsWith("error INVALID_ARGUMENT"));
    EXPECT_THAT(r, HasSubstr(c.message));
  }
}

// ---- Compress and ReverseSequence -----------------------------------------------------------

// Tests that Compress with its inputs on sim copies only argwhere's 8-byte count to the host
// (the selected positions and the data stay on the device), and selects the right rows.
TEST(OnnxCompress, OnDeviceCopiesOnlyTheCount) {
  OneNodeModel m(11, "Compress", {"x", "c"});
  m.Input("x", {"4", "2"}).Input("c", {"4"}, onnx::TensorProto::BOOL).Int("axis", -2);
  const Tensor x = Tensor::FromDoubles(DType::kF32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor c = Tensor::FromInt64s(DType::kBool, {4}, {0, 1, 0, 1});
  auto r = RunModel(m, DeviceKind::kSim, {x, c}, /*on_device=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{3, 4, 7, 8}));
  EXPECT_EQ(r->counters.d2h_calls, 1);
  EXPECT_EQ(r->counters.d2h_bytes, 8);
  EXPECT_EQ(r->counters.h2d_calls, 0);
}

// Tests that a condition shorter than the axis selects among its first elements, and that a
// true past the axis's end is a run-time error, not a read out of bounds.
TEST(OnnxCompress, ShortAndLongConditions) {
  OneNodeModel m(11, "Compress", {"x", "c"});
  m.Input("x", {"3"}).Input("c", {"k"}, onnx::TensorProto::BOOL);
  const Tensor x = Tensor::FromDoubles(DType::kF32, {3}, {10, 20, 30});
  auto r = RunModel(m, DeviceKind::kCpu, {x, Tensor::FromInt64s(DType::kBool, {2}, {0, 1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{20}));
  auto bad =
      RunModel(m, DeviceKind::kCpu, {x, Tensor::FromInt64s(DType::kBool, {5}, {0, 0, 0, 0, 1})});
  EXPECT_FALSE(bad.ok());
}

// Tests the attribute and input checks of Compress and ReverseSequence.
TEST(OnnxCompress, Errors) {
  OneNodeModel axis(11, "Compress", {"x", "c"});
  axis.Input("x", {"3", "2"}).Input("c", {"3"}, onnx::TensorProto::BOOL).Int("axis", 2);
  EXPECT_THAT(axis.Import(), HasSubstr("axis 2 out of range for rank 2"));
  OneNodeModel cond(11, "Compress", {"x", "c"});
  cond.Input("x", {"3", "2"}).Input("c", {"3", "1"}, onnx::TensorProto::BOOL);
  EXPECT_THAT(cond.Import(), HasSubstr("condition must be 1-D, got rank 2"));
  OneNodeModel rev(11, "ReverseSequence", {"x", "l"});
  rev.Input("x", {"3", "2"}).Input("l", {"2"}, onnx::TensorProto::INT64);
  rev.Int("batch_axis", 0).Int("time_axis", 0);
  EXPECT_THAT(rev.Import(), HasSubstr("batch_axis and time_axis must be 0 and 1 in some order"));
  OneNodeModel lens(11, "ReverseSequence", {"x", "l"});
  lens.Input("x", {"3", "2"}).Input("l", {"3"}, onnx::TensorProto::INT64);
  EXPECT_THAT(lens.Import(), HasSubstr("sequence_lens has 3 lengths for a batch of 2"));
}

// Tests ReverseSequence with a symbolic batch, trailing dims, and lengths past T (clamped).
TEST(OnnxReverseSequence, SymbolicBatchAndHostileLengths) {
  OneNodeModel m(11, "ReverseSequence", {"x", "l"});
  m.Input("x", {"3", "b", "2"}).Input("l", {"b"}, onnx::TensorProto::INT64);
  const Tensor x =
      Tensor::FromDoubles(DType::kF32, {3, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto r = RunModel(m, DeviceKind::kSim, {x, Tensor::FromInt64s(DType::kI64, {2}, {2, 99})});
  ASSERT_TRUE(r.ok()) << r.status();
  // Batch 0 reverses its first 2 steps, batch 1 all 3 (99 is clamped to 3).
  EXPECT_EQ(r->outputs[0].ToDoubles(), (std::vector<double>{4, 5, 10, 11, 0, 1, 6, 7, 8, 9, 2, 3}));
}

// ---- RNN, GRU, LSTM --------------------------------------------------------------------------

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// A plain-loop reference of ONNX's RNN / GRU / LSTM (default activations, layout 0, no
// peepholes): Y [T, D, B, H] and Y_h [D, B, H]. Steps past a sequence's length keep the state
// and write 0.
struct Reference {
  std::vector<double> y, y_h;
};
Reference RunReference(const std::string& op, int T, int B, int I, int H, int D,
                       const std::vector<double>& x, const std::vector<double>& w,
                       const std::vector<double>& r, const std::vector<double>& b,
                       const std::vector<int64_t>& lens, bool linear_before_reset) {
  const int G = op == "GRU" ? 3 : op == "LSTM" ? 4 : 1, GH = G * H;
  Reference out{std::vector<double>(T * D * B * H, 0), std::vector<double>(D * B * H, 0)};
  for (int d = 0; d < D; ++d) {
    for (int bb = 0; bb < B; ++bb) {
      std::vector<double> h(H, 0), c(H, 0);
      for (int s = 0; s < T; ++s) {
        const int t = d == 1 ? T - 1 - s : s;
        if (t >= lens[bb]) continue;
        std::vector<double> xw(GH), hr(GH);
        for (int j = 0; j < GH; ++j) {
          xw[j] = b[d * 2 * GH + j];
          hr[j] = b[d * 2 * GH + GH + j];
          for (int i = 0; i < I; ++i) xw[j] += x[(t * B + bb) * I + i] * w[(d * GH + j) * I + i];
          for (int k = 0; k < H; ++k) hr[j] += h[k] * r[(d * GH + j) * H + k];
        }
        std::vector<double> hn(H);
        if (op == "RNN") {
          for (int k = 0; k < H; ++k) hn[k] = std::tanh(xw[k] + hr[k]);
        } else if (op == "GRU") {
          std::vector<double> z(H), rr(H);
          for (int k = 0; k < H; ++k) {
            z[k] = Sigmoid(xw[k] + hr[k]);
            rr[k] = Sigmoid(xw[H + k] + hr[H + k]);
          }
          for (int k = 0; k < H; ++k) {
            double lin;
            if (linear_before_reset) {
              lin = rr[k] * hr[2 * H + k];
            } else {
              lin = b[d * 2 * GH + GH + 2 * H + k];
              for (int m = 0; m < H; ++m) lin += rr[m] * h[m] * r[(d * GH + 2 * H + k) * H + m];
            }
            const double n = std::tanh(xw[2 * H + k] + lin);
            hn[k] = (1 - z[k]) * n + z[k] * h[k];
          }
        } else {
          for (int k = 0; k < H; ++k) {
            const double i = Sigmoid(xw[k] + hr[k]), o = Sigmoid(xw[H + k] + hr[H + k]);
            const double f = Sigmoid(xw[2 * H + k] + hr[2 * H + k]);
            c[k] = f * c[k] + i * std::tanh(xw[3 * H + k] + hr[3 * H + k]);
            hn[k] = o * std::tanh(c[k]);
          }
        }
        h = hn;
        for (int k = 0; k < H; ++k) out.y[((t * D + d) * B + bb) * H + k] = h[k];
      }
      for (int k = 0; k < H; ++k) out.y_h[(d * B + bb) * H + k] = h[k];
    }
  }
  return out;
}

// One bidirectional model with sequence_lens as a run-time input and a symbolic batch, run on
// `target` with batch 3, checked against RunReference.
// With `symbolic_seq` the sequence length is the symbol "seq" (an IR loop per direction), run
// with T = `steps`.
void CheckBidirectional(const std::string& op, int64_t linear_before_reset, DeviceKind target,
                        bool symbolic_seq = false, int steps = 4) {
  const int T = steps, B = 3, I = 2, H = 3, D = 2;
  const int G = op == "GRU" ? 3 : op == "LSTM" ? 4 : 1;
  const std::vector<double> x = Pattern(T * B * I, 1), w = Pattern(D * G * H * I, 2),
                            r = Pattern(D * G * H * H, 3), b = Pattern(D * 2 * G * H, 4);
  const std::vector<int64_t> lens = {T, 1, T - 1};
  std::vector<std::string> outs = {"y", "y_h"};
  if (op == "LSTM") outs.push_back("y_c");
  OneNodeModel m(14, op, {"x", "w", "r", "b", "lens"}, outs);
  const std::string seq = symbolic_seq ? "seq" : std::to_string(T);
  m.Input("x", {seq, "batch", "2"}).Input("lens", {"batch"}, onnx::TensorProto::INT32);
  m.Floats("w", {D, G * H, I}, AsFloats(w)).Floats("r", {D, G * H, H}, AsFloats(r));
  m.Floats("b", {D, 2 * G * H}, AsFloats(b));
  m.Int("hidden_size", H).Str("direction", "bidirectional");
  if (op == "GRU") m.Int("linear_before_reset", linear_before_reset);
  const std::string ir = m.Import();
  // The loop enters true, its body yields true and its trip count is `seq`: the scan output's
  // first dim is `seq`, as unrolled.
  EXPECT_THAT(ir, HasSubstr("f32[" + seq + ", 2, batch, 3]"));
  EXPECT_EQ(ir.find(" loop(") != std::string::npos, symbolic_seq);
  const Reference want = RunReference(op, T, B, I, H, D, x, w, r, b, lens, linear_before_reset);
  auto got = RunModel(
      m, target,
      {Tensor::FromDoubles(DType::kF32, {T, B, I}, x), Tensor::FromInt64s(DType::kI32, {B}, lens)});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->outputs[0].shape(), (std::vector<int64_t>{T, D, B, H}));
  ExpectNear(got->outputs[0].ToDoubles(), want.y);
  ExpectNear(got->outputs[1].ToDoubles(), want.y_h);
  if (target == DeviceKind::kSim) {
    // Inputs x and lens go up, the outputs come down, and nothing crosses per step: the loop
    // carries its time index on the device. The loop form adds one 8-byte H2D copy: T - 1,
    // the reverse direction's first time index, computed on the host from the shape.
    EXPECT_EQ(got->counters.h2d_calls, symbolic_seq ? 3 : 2);
    EXPECT_EQ(got->counters.d2h_calls, static_cast<int64_t>(outs.size()));
  }
}

// Tests GRU's two forms: linear_before_reset 0 applies R_h to (r * h), 1 multiplies r into
// (h R_h^T + Rb_h); the reference differs between them, so swapping them fails.
TEST(OnnxRecurrent, GruLinearBeforeReset) {
  CheckBidirectional("GRU", 0, DeviceKind::kCpu);
  CheckBidirectional("GRU", 1, DeviceKind::kSim);
}

// Tests a bidirectional LSTM and RNN over a symbolic batch with sequence lengths 4, 1 and 3.
TEST(OnnxRecurrent, LstmAndRnnSymbolicBatchWithSequenceLens) {
  CheckBidirectional("LSTM", 0, DeviceKind::kSim);
  CheckBidirectional("RNN", 0, DeviceKind::kCpu);
}

// Tests named activations with their alphas and betas (taken in order by the activations that
// use them) and clip, on a reverse RNN with layout 1: h' = f(clip(x w + h r)), f Affine or
// HardSigmoid, one direction each way.
TEST(OnnxRecurrent, ActivationsClipAndLayout) {
  const int T = 3, H = 2;
  const std::vector<double> x = Pattern(T, 1), w = Pattern(2 * H, 2), r = Pattern(2 * H * H, 3);
  OneNodeModel m(14, "RNN", {"x", "w", "r"}, {"y", "y_h"});
  m.Input("x", {"1", "3", "1"})
      .Floats("w", {2, H, 1}, AsFloats(w))
      .Floats("r", {2, H, H}, AsFloats(r));
  m.Str("direction", "bidirectional").Int("layout", 1).Float("clip", 0.3f);
  m.Strs("activations", {"Affine", "HardSigmoid"});
  m.FloatList("activation_alpha", {2.0f, 0.7f}).FloatList("activation_beta", {0.25f, 0.1f});
  auto f = [](int d, double v) {
    v = std::clamp(v, -0.3, 0.3);
    return d == 0 ? 2.0 * v + 0.25 : std::clamp(0.7 * v + 0.1, 0.0, 1.0);
  };
  std::vector<double> y(T * 2 * H), y_h(2 * H);  // [B = 1, T, D, H], [B = 1, D, H]
  for (int d = 0; d < 2; ++d) {
    std::vector<double> h(H, 0);
    for (int s = 0; s < T; ++s) {
      const int t = d == 1 ? T - 1 - s : s;
      std::vector<double> hn(H);
      for (int j = 0; j < H; ++j) {
        double pre = x[t] * w[d * H + j];
        for (int k = 0; k < H; ++k) pre += h[k] * r[(d * H + j) * H + k];
        hn[j] = f(d, pre);
      }
      h = hn;
      for (int j = 0; j < H; ++j) y[(t * 2 + d) * H + j] = h[j];
    }
    for (int j = 0; j < H; ++j) y_h[d * H + j] = h[j];
  }
  auto got = RunModel(m, DeviceKind::kCpu, {Tensor::FromDoubles(DType::kF32, {1, T, 1}, x)});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->outputs[0].shape(), (std::vector<int64_t>{1, T, 2, H}));
  ExpectNear(got->outputs[0].ToDoubles(), y);
  EXPECT_EQ(got->outputs[1].shape(), (std::vector<int64_t>{1, 2, H}));
  ExpectNear(got->outputs[1].ToDoubles(), y_h);
}

// Tests a symbolic sequence length (as PyTorch exports LSTM): one IR loop per direction, its
// reverse direction's scan put back in time order, with sequence_lens, for two lengths.
TEST(OnnxRecurrent, SymbolicSequenceLengthRunsAsALoop) {
  CheckBidirectional("LSTM", 0, DeviceKind::kSim, /*symbolic_seq=*/true, 4);
  CheckBidirectional("LSTM", 0, DeviceKind::kCpu, /*symbolic_seq=*/true, 2);
  CheckBidirectional("GRU", 1, DeviceKind::kCpu, /*symbolic_seq=*/true, 3);
  CheckBidirectional("RNN", 0, DeviceKind::kSim, /*symbolic_seq=*/true, 5);
}

// The graph PyTorch exports for nn.LSTM over a dynamic [seq, batch, I] input without initial
// states: zero states from ConstantOfShape(Concat([1], Unsqueeze(Gather(Shape(x), 1)), [H])),
// the LSTM with an empty sequence_lens, and Squeeze of Y's direction axis.
std::string PyTorchStyleLstm(int I, int H, const std::vector<double>& w,
                             const std::vector<double>& r, const std::vector<double>& b) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(14);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("torch_jit");
  auto* x = g->add_input();
  x->set_name("input");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("seq");
  tt->mutable_shape()->add_dim()->set_dim_param("batch");
  tt->mutable_shape()->add_dim()->set_dim_value(I);
  auto init = [&](const std::string& name, int type, std::vector<int64_t> dims,
                  const std::vector<double>& v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    for (double e : v) {
      if (type == onnx::TensorProto::FLOAT) {
        t->add_float_data(static_cast<float>(e));
      } else {
        t->add_int64_data(static_cast<int64_t>(e));
      }
    }
  };
  init("W", onnx::TensorProto::FLOAT, {1, 4 * H, I}, w);
  init("R", onnx::TensorProto::FLOAT, {1, 4 * H, H}, r);
  init("B", onnx::TensorProto::FLOAT, {1, 8 * H}, b);
  init("one", onnx::TensorProto::INT64, {}, {1});
  init("axes0", onnx::TensorProto::INT64, {1}, {0});
  init("axes1", onnx::TensorProto::INT64, {1}, {1});
  init("dirs", onnx::TensorProto::INT64, {1}, {1});
  init("hidden", onnx::TensorProto::INT64, {1}, {static_cast<double>(H)});
  auto node = [&](const std::string& op, std::vector<std::string> ins,
                  std::vector<std::string> outs) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name("/lstm/" + op);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  };
  node("Shape", {"input"}, {"shape"});
  auto* gather = node("Gather", {"shape", "one"}, {"batch"});
  auto* axis = gather->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  node("Unsqueeze", {"batch", "axes0"}, {"batch1"});
  auto* concat = node("Concat", {"dirs", "batch1", "hidden"}, {"state_shape"});
  auto* cax = concat->add_attribute();
  cax->set_name("axis");
  cax->set_type(onnx::AttributeProto::INT);
  cax->set_i(0);
  node("ConstantOfShape", {"state_shape"}, {"zeros"});
  auto* lstm = node("LSTM", {"input", "W", "R", "B", "", "zeros", "zeros"}, {"Y", "Y_h", "Y_c"});
  auto* hs = lstm->add_attribute();
  hs->set_name("hidden_size");
  hs->set_type(onnx::AttributeProto::INT);
  hs->set_i(H);
  node("Squeeze", {"Y", "axes1"}, {"output"});
  for (const char* o : {"output", "Y_h"}) g->add_output()->set_name(o);
  return model.SerializeAsString();
}

// Tests the PyTorch export of nn.LSTM with dynamic sequence and batch axes: it imports as a
// loop, runs on sim against the reference for two sequence lengths, and nothing but the input
// and the outputs crosses.
TEST(OnnxRecurrent, PyTorchStyleDynamicLstm) {
  const int I = 3, H = 2;
  const std::vector<double> w = Pattern(4 * H * I, 1), r = Pattern(4 * H * H, 2),
                            b = Pattern(8 * H, 3);
  const std::string bytes = PyTorchStyleLstm(I, H, w, r, b);
  auto module = ImportOnnx(bytes);
  ASSERT_TRUE(module.ok()) << module.status();
  auto pm = ParsePipeline(vm::DefaultPipeline(DeviceKind::kSim), {});
  ASSERT_TRUE(pm.ok()) << pm.status();
  ASSERT_TRUE((*pm)->Run(**module).ok());
  auto exe = vm::CompileModule(**module);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto machine = vm::VirtualMachine::Load(*std::move(exe));
  ASSERT_TRUE(machine.ok()) << machine.status();
  for (int T : {5, 2}) {
    SCOPED_TRACE(T);
    const int B = 2;
    const std::vector<double> x = Pattern(T * B * I, 4 + T);
    const Reference want = RunReference("LSTM", T, B, I, H, 1, x, w, r, b, {T, T}, false);
    auto got =
        (*machine)->RunWithHostTensors("main", {Tensor::FromDoubles(DType::kF32, {T, B, I}, x)});
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].shape(), (std::vector<int64_t>{T, B, H}));
    ExpectNear((*got)[0].ToDoubles(), want.y);
    ExpectNear((*got)[1].ToDoubles(), want.y_h);
    EXPECT_EQ((*machine)->LastRunCounters().h2d_calls, 1);
    EXPECT_EQ((*machine)->LastRunCounters().d2h_calls, 2);
  }
}

// Tests the errors: hostile attributes and mismatched weights are InvalidArgument.
TEST(OnnxRecurrent, Errors) {
  auto lstm = [](std::vector<std::string> xdims) {
    OneNodeModel m(14, "LSTM", {"x", "w", "r"}, {"y"});
    m.Input("x", xdims).Init("w", {1, 16, 2}).Init("r", {1, 16, 4});
    return m;
  };
  auto hidden = lstm({"3", "1", "2"});
  hidden.Int("hidden_size", 1000000000);
  EXPECT_THAT(hidden.Import(), HasSubstr("hidden_size is 1000000000 but R is [1, 16, 4]"));
  auto dir = lstm({"3", "1", "2"});
  dir.Str("direction", "sideways");
  EXPECT_THAT(dir.Import(), HasSubstr("direction must be forward, reverse or bidirectional"));
  OneNodeModel bad_act(14, "RNN", {"x", "w", "r"}, {"y"});
  bad_act.Input("x", {"3", "1", "2"}).Init("w", {1, 4, 2}).Init("r", {1, 4, 4});
  bad_act.Strs("activations", {"Gelu"});
  EXPECT_THAT(bad_act.Import(), HasSubstr("unknown activation 'Gelu'"));
  OneNodeModel bad_w(14, "GRU", {"x", "w", "r"}, {"y"});
  bad_w.Input("x", {"3", "1", "2"}).Init("w", {1, 12, 5}).Init("r", {1, 12, 4});
  EXPECT_THAT(bad_w.Import(), HasSubstr("W must be [1, 12, 2], got [1, 12, 5]"));
  OneNodeModel huge(14, "RNN", {"x", "w", "r"}, {"y"});
  huge.Input("x", {"3", "1", "2"}).Input("w", {"1", "4611686018427387904", "2"});
  huge.Input("r", {"1", "4611686018427387904", "4611686018427387904"});
  EXPECT_THAT(huge.Import(), HasSubstr("the hidden size must be in [1, 4294967296], got "
                                       "4611686018427387904"));
  OneNodeModel h0(14, "GRU", {"x", "w", "r", "", "", "h0"}, {"y"});
  h0.Input("x", {"3", "1", "2"}).Init("w", {1, 12, 2}).Init("r", {1, 12, 4});
  h0.Input("h0", {"1", "1", "5"});
  EXPECT_THAT(h0.Import(), HasSubstr("initial_h must have 1 directions and hidden size 4, got "
                                     "f32[1, 1, 5]"));
  // Dims not known at import (PyTorch's computed zero states) are left to the run.
  OneNodeModel h0_symbolic(14, "GRU", {"x", "w", "r", "", "", "h0"}, {"y"});
  h0_symbolic.Input("x", {"3", "1", "2"}).Init("w", {1, 12, 2}).Init("r", {1, 12, 4});
  h0_symbolic.Input("h0", {"d", "b", "h"});
  EXPECT_THAT(h0_symbolic.Import(), Not(StartsWith("error")));
  OneNodeModel layout(14, "GRU", {"x", "w", "r"}, {"y"});
  layout.Input("x", {"3", "1", "2"}).Init("w", {1, 12, 2}).Init("r", {1, 12, 4}).Int("layout", 2);
  EXPECT_THAT(layout.Import(), HasSubstr("layout must be 0 or 1, got 2"));
}

}  // namespace
}  // namespace hetpass
