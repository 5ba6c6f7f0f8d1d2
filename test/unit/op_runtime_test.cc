// Every registered op, run end to end on the VM, against its plain C++ reference kernel; and
// random fused chains against their unfused evaluation.
//
// Part 1, op by op. For every op the VM runs (role kCompute, and the shape query shape_of,
// which the VM executes as an instruction) and kTrials random trials from the op's generator
// (test/support/op_generators.h, shared with the mask verification), on each device (cpu, sim)
// and in each shape variant:
//   static   the parameters have the trial inputs' concrete types;
//   dynamic  every dim > 1 of an input the shape rule does not read values of (dependence
//            shape or none) becomes a symbol named after its size (`s3` for 3): equal sizes
//            share a symbol, so relations such as the K dims of a dense still hold; dims 0 and
//            1 stay constant, so broadcasting stays visible; inputs whose values the rule reads
//            keep static types (their contents decide the output shape at run time).
// The one-op module
//   def @main(%p0: f32[s3, 1] @sim, ...) {
//     %r0, ... = op(%p0, ...) {attrs} @sim
//     return %r0, ...
//   }
// has its parameters and the op pinned to the device (else the planner may run a cheap op on
// the host and sim would test nothing; host-only ops such as shape_of are not pinned), goes
// through vm::DefaultPipeline(device), is loaded and run with the trial inputs. The op's kernel
// must run on the device, and every output must equal the reference kernel's output on the
// same inputs: exactly for integers and bool, within a relative tolerance for floats (NaN
// matches NaN, an infinity the same infinity).
//
// A case that cannot pass for a documented reason is listed in KnownFailures() with the reason
// and a fragment of the expected error; the test fails if a listed case passes (the entry is
// stale: remove it) or an unlisted case fails. Reasons starting "BUG:" are library bugs to fix.
// Each op's test prints one summary line ("op: 8/8 cpu static, ...") on stdout.
//
// Part 2, fused versus unfused. Random chains of 3-8 ops (elementwise, broadcast, reshape,
// transpose, nn.dense, nn.bias_add, nn.softmax) over a dynamic batch `n` are compiled for cpu
// and sim (fuse-ops makes fused groups; the compile engine JIT-compiles elementwise groups and
// sends dense groups to the GEMM library) and run at several batch sizes; outputs must equal
// ReferenceRun on the unfused source. The test also asserts that the fast paths ran (kernel
// descriptions other than `reference[...]`), so it covers them rather than the fallback.
//
// Runtime: ~10 s in Release (part 1: 4 x 8 compilations per op; part 2: 2 x 32 chains), ~20 s
// under AddressSanitizer + UBSan, so the sanitizer build runs the same trials.
// HETPASS_OP_RUNTIME_SEED=<n> explores other trials and chains.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "passes/ir/printer.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/vm/vm.h"
#include "support/op_generators.h"
#include "support/runtime_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::CompileForVm;
using ::hetpass::testing::Gen;
using ::hetpass::testing::Generators;
using ::hetpass::testing::ReferenceRun;
using ::hetpass::testing::Trial;

constexpr int kTrials = 8;
constexpr int kChains = 32;

// Seeds from names, the same on every platform (std::hash is not).
uint64_t Fnv1a(absl::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// HETPASS_OP_RUNTIME_SEED=<n> explores other trials and chains (the default, 0, is fixed: the
// allowlist names trials of the default seed).
uint64_t ExtraSeed() {
  const char* env = std::getenv("HETPASS_OP_RUNTIME_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 0;
}

// ---- comparison ----------------------------------------------------------------------------

// Floats within `rtol` relative (plus a tiny absolute slack near zero); NaN equals NaN and an
// infinity equals the same infinity. Integers and bool exactly.
::testing::AssertionResult SameValues(const Tensor& got, const Tensor& want, double rtol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.type().ToString() << ", want " << want.type().ToString();
  }
  const bool is_float = IsFloat(want.dtype());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    if (!is_float) {
      if (got.GetInt64(i) != want.GetInt64(i)) {
        return ::testing::AssertionFailure()
               << "element " << i << ": got " << got.GetInt64(i) << ", want " << want.GetInt64(i)
               << "\n  got  " << got.DebugString(16) << "\n  want " << want.DebugString(16);
      }
      continue;
    }
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) ? a == b : std::abs(a - b) <= rtol * std::abs(b) + 1e-6) continue;
    return ::testing::AssertionFailure()
           << "element " << i << ": got " << a << ", want " << b << "\n  got  "
           << got.DebugString(16) << "\n  want " << want.DebugString(16);
  }
  return ::testing::AssertionSuccess();
}

// ---- part 1: one op at a time --------------------------------------------------------------

enum class Variant { kStatic, kDynamic };
absl::string_view VariantName(Variant v) { return v == Variant::kStatic ? "static" : "dynamic"; }

struct Combo {
  DeviceKind device;
  Variant variant;
};
constexpr Combo kCombos[] = {{DeviceKind::kCpu, Variant::kStatic},
                             {DeviceKind::kCpu, Variant::kDynamic},
                             {DeviceKind::kSim, Variant::kStatic},
                             {DeviceKind::kSim, Variant::kDynamic}};
constexpr int kNumCombos = sizeof(kCombos) / sizeof(kCombos[0]);

// A case that cannot pass today, with the reason. `device` / `variant` may be "*"; `trials`
// (indices under the default seed) empty means every trial. `expect` must occur in the failure
// ("compile: ...", "load: ...", "device: ...", "run: ..." or "mismatch: ..."), so a case
// failing for another reason is reported.
struct KnownFailure {
  std::string op;
  std::string device;
  std::string variant;
  std::vector<int> trials;
  std::string expect;
  std::string reason;
};

const std::vector<KnownFailure>& KnownFailures() {
  // Empty: every op passes on both devices with both shape variants. An entry looks like
  //   {"op", "sim", "dynamic", {2, 5}, "compile: ", "plan-devices rejects ...: why"},
  // with a reason starting "BUG: " (input, expected, got) for a library bug.
  static const auto* list = new std::vector<KnownFailure>{};
  return *list;
}

// Trial indices name trials of the default seed: under HETPASS_OP_RUNTIME_SEED entries listing
// trials are ignored (their failures show as unlisted).
bool UsesTrialIndices(const KnownFailure& k) { return k.trials.empty() || ExtraSeed() == 0; }

const KnownFailure* FindKnownFailure(const std::string& op, const Combo& c, int trial) {
  for (const KnownFailure& k : KnownFailures()) {
    if (k.op != op) continue;
    if (k.device != "*" && k.device != DeviceName(c.device)) continue;
    if (k.variant != "*" && k.variant != VariantName(c.variant)) continue;
    if (!k.trials.empty() && (!UsesTrialIndices(k) ||
                              std::find(k.trials.begin(), k.trials.end(), trial) == k.trials.end()))
      continue;
    return &k;
  }
  return nullptr;
}

// Ops the VM runs as kernels or instructions; the others (allocation, device_copy) are
// inserted by passes and exercised through every other op's run.
bool IsRunnable(const OpDef& def) {
  return def.role() == OpRole::kCompute || def.role() == OpRole::kShapeQuery;
}

// The parameter type of input i in `variant` (see the file comment).
Type ParamType(const OpDef& def, int i, const Tensor& t, Variant variant, bool static_last) {
  std::vector<DimExpr> dims;
  const bool symbolic = variant == Variant::kDynamic && !NeedsValue(def.dep(i));
  for (int j = 0; j < t.rank(); ++j) {
    const int64_t d = t.shape()[j];
    const bool keep = static_last && j == t.rank() - 1;
    dims.push_back(symbolic && !keep && d > 1 ? DimExpr::Symbol(absl::StrCat("s", d)) : DimExpr(d));
  }
  return Type::Tensor(t.dtype(), std::move(dims));
}

std::string OneOpModule(const OpDef& def, const Trial& trial, const Combo& combo) {
  std::vector<std::string> params, args, results;
  for (size_t i = 0; i < trial.inputs.size(); ++i) {
    const int ii = static_cast<int>(i);
    params.push_back(absl::StrCat("%p", i, ": ",
                                  ParamType(def, ii, trial.inputs[i], combo.variant,
                                            std::find(trial.static_last_dim.begin(),
                                                      trial.static_last_dim.end(),
                                                      ii) != trial.static_last_dim.end())
                                      .ToString(),
                                  " @", DeviceName(combo.device)));
    args.push_back(absl::StrCat("%p", i));
  }
  for (int o = 0; o < def.num_outputs(); ++o) results.push_back(absl::StrCat("%r", o));
  // Pinned to the device unless the op runs on the host only (shape_of).
  const std::string placed =
      def.placement() == Placement::kHost ? "" : absl::StrCat(" @", DeviceName(combo.device));
  const std::string attrs = trial.attrs.empty() ? "" : absl::StrCat(" ", trial.attrs.ToString());
  return absl::StrCat("def @main(", absl::StrJoin(params, ", "), ") {\n  ",
                      absl::StrJoin(results, ", "), " = ", def.name(), "(",
                      absl::StrJoin(args, ", "), ")", attrs, placed, "\n  return ",
                      absl::StrJoin(results, ", "), "\n}\n");
}

// Transcendental kernels (libm in the reference, LLVM intrinsics or other code in the fast
// paths) may differ in the last bits; everything else computes the same f32 operations.
double RelativeTolerance(const OpDef& def) {
  static const std::set<std::string>* loose = new std::set<std::string>{
      "exp",   "log",        "sqrt", "tanh",           "sigmoid",
      "power", "nn.softmax", "mean", "image.resize2d", "dyn.image.resize2d",
      "erf",   "sin",        "cos",  "tan",            "asin",
      "acos",  "atan",       "sinh", "cosh",           "asinh",
      "acosh", "atanh"};
  return loose->count(def.name()) ? 1e-5 : 1e-6;
}

// The implementation part of a KernelDescriptions() line ("k0 @fused_add_0 @sim: jit[add]"),
// reduced to its kind: "jit", "onednn", "copy", "reference".
std::string KernelKind(absl::string_view line) {
  const size_t colon = line.find(": ");
  absl::string_view impl = colon == absl::string_view::npos ? line : line.substr(colon + 2);
  return std::string(impl.substr(0, impl.find_first_of("[ ")));
}

// Compiles, loads and runs one case; "" if every output matches `want`, else what went wrong
// ("compile: ...", "load: ...", "device: ...", "run: ...", "mismatch: ..."). Adds the kinds of
// kernel that ran to `kinds`.
std::string RunCase(const OpDef& def, const std::string& text, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& want, DeviceKind device,
                    std::set<std::string>* kinds) {
  auto program = CompileForVm(text, vm::DefaultPipeline(device));
  if (!program.ok()) return absl::StrCat("compile: ", program.status().ToString());
  auto machine = vm::VirtualMachine::Load(program->executable);
  if (!machine.ok()) return absl::StrCat("load: ", machine.status().ToString());
  // The op was pinned to `device`: its kernel must run there (host-only ops have no kernel).
  const std::string on_device = absl::StrCat(" @", DeviceName(device), ": ");
  bool ran_on_device = false;
  for (const std::string& line : (*machine)->KernelDescriptions()) {
    kinds->insert(KernelKind(line));
    ran_on_device = ran_on_device || absl::StrContains(line, on_device);
  }
  if (def.placement() != Placement::kHost && !ran_on_device) {
    return absl::StrCat("device: no kernel runs on ", DeviceName(device), ":\n",
                        absl::StrJoin((*machine)->KernelDescriptions(), "\n"));
  }
  auto got = (*machine)->RunWithHostTensors("main", inputs);
  if (!got.ok()) return absl::StrCat("run: ", got.status().ToString());
  if (got->size() != want.size()) {
    return absl::StrCat("mismatch: ", got->size(), " outputs, want ", want.size());
  }
  for (size_t o = 0; o < want.size(); ++o) {
    ::testing::AssertionResult same = SameValues((*got)[o], want[o], RelativeTolerance(def));
    if (!same) return absl::StrCat("mismatch: output ", o, ": ", same.message());
  }
  return "";
}

// Per op, per combo: passed / run. Printed by the suite's teardown.
struct Tally {
  int passed[kNumCombos] = {};
  int run[kNumCombos] = {};
  std::set<std::string> kinds;  // kernel implementations seen
};
std::map<std::string, Tally>& Tallies() {
  static auto* t = new std::map<std::string, Tally>;
  return *t;
}

std::string SummaryLine(const std::string& op, const Tally& t) {
  std::vector<std::string> parts;
  for (int c = 0; c < kNumCombos; ++c) {
    parts.push_back(absl::StrCat(t.passed[c], "/", t.run[c], " ", DeviceName(kCombos[c].device),
                                 " ", VariantName(kCombos[c].variant)));
  }
  return absl::StrCat(op, ": ", absl::StrJoin(parts, ", "), "  [",
                      t.kinds.empty() ? "no kernel" : absl::StrJoin(t.kinds, ", "), "]");
}

std::vector<std::string> RunnableOps() {
  std::vector<std::string> names;
  for (const auto& def : OpRegistry::Global().ops()) {
    if (IsRunnable(*def)) names.push_back(def->name());
  }
  return names;
}

class OpRuntime : public ::testing::TestWithParam<std::string> {
 public:
  static void TearDownTestSuite() {
    if (Tallies().empty()) return;
    std::cout << "op runtime summary (passed/run per device and shape variant):\n";
    for (const auto& [op, t] : Tallies()) std::cout << "  " << SummaryLine(op, t) << "\n";
  }
};

// Tests that every op the VM runs has a generator (else it would escape this test and the mask
// verification), and that every allowlist entry names such an op.
TEST(OpRuntimeCoverage, EveryRunnableOpHasAGenerator) {
  std::vector<std::string> missing;
  for (const std::string& name : RunnableOps()) {
    if (!Generators().count(name)) missing.push_back(name);
  }
  EXPECT_TRUE(missing.empty()) << "ops without an input generator in "
                                  "test/support/op_generators.h: "
                               << absl::StrJoin(missing, ", ");
  for (const KnownFailure& k : KnownFailures()) {
    const OpDef* def = OpRegistry::Global().Find(k.op);
    EXPECT_TRUE(def != nullptr && IsRunnable(*def)) << "allowlist names unknown op " << k.op;
    EXPECT_FALSE(k.reason.empty()) << "allowlist entry for " << k.op << " has no reason";
    EXPECT_TRUE(k.device == "*" || ParseDevice(k.device).has_value()) << k.device;
    EXPECT_TRUE(k.variant == "*" || k.variant == "static" || k.variant == "dynamic") << k.variant;
  }
}

// Tests that the op computes what its reference kernel computes, on cpu and sim, with static
// and symbolic parameter types.
TEST_P(OpRuntime, MatchesReferenceKernel) {
  const OpDef* def = OpRegistry::Global().Find(GetParam());
  ASSERT_NE(def, nullptr);
  auto gen = Generators().find(def->name());
  ASSERT_NE(gen, Generators().end()) << "no generator (see EveryRunnableOpHasAGenerator)";
  Tally& tally = Tallies()[def->name()];
  Gen g(Fnv1a(def->name()) ^ ExtraSeed());
  std::set<const KnownFailure*> matched;
  for (int trial_no = 0; trial_no < kTrials; ++trial_no) {
    const Trial trial = gen->second(g);
    auto attrs = def->CheckAttrs(trial.attrs);
    ASSERT_TRUE(attrs.ok()) << "generator made bad attrs: " << attrs.status();
    std::vector<ShapeInput> shape_inputs;
    for (const Tensor& t : trial.inputs) shape_inputs.push_back(ShapeInput{t.type(), &t});
    auto types = def->InferTypes(*attrs, std::move(shape_inputs));
    ASSERT_TRUE(types.ok()) << types.status();
    auto want = def->reference()(trial.inputs, *attrs, *types);
    ASSERT_TRUE(want.ok()) << "reference kernel failed: " << want.status();
    for (int c = 0; c < kNumCombos; ++c) {
      const Combo& combo = kCombos[c];
      const std::string text = OneOpModule(*def, trial, combo);
      SCOPED_TRACE(absl::StrCat(def->name(), " trial ", trial_no, " on ", DeviceName(combo.device),
                                ", ", VariantName(combo.variant), " shapes:\n", text));
      const std::string failure =
          RunCase(*def, text, trial.inputs, *want, combo.device, &tally.kinds);
      ++tally.run[c];
      if (failure.empty()) ++tally.passed[c];
      const KnownFailure* known = FindKnownFailure(def->name(), combo, trial_no);
      if (known == nullptr) {
        EXPECT_TRUE(failure.empty()) << failure;
        continue;
      }
      matched.insert(known);
      EXPECT_NE(failure, "") << "allowlisted case passes now: remove the entry (" << known->reason
                             << ")";
      if (!failure.empty()) {
        EXPECT_TRUE(absl::StrContains(failure, known->expect))
            << "allowlisted case fails differently than listed (expected '" << known->expect
            << "'): " << failure;
      }
    }
  }
  for (const KnownFailure& k : KnownFailures()) {
    if (k.op == def->name() && UsesTrialIndices(k) && !matched.count(&k)) {
      ADD_FAILURE() << "allowlist entry for " << k.op << " " << k.device << " " << k.variant
                    << " matches no case: remove it";
    }
  }
  std::cout << SummaryLine(def->name(), tally) << "\n";
}

INSTANTIATE_TEST_SUITE_P(AllOps, OpRuntime, ::testing::ValuesIn(RunnableOps()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return absl::StrReplaceAll(info.param, {{".", "_"}});
                         });

// ---- part 2: fused chains versus unfused evaluation ----------------------------------------

// A random chain over a dynamic batch `n`.
struct Chain {
  std::string text;
  std::vector<std::vector<int64_t>> params;  // shapes; -1 is the batch dim n
};

// Builds a chain of 3-8 ops, each consuming the previous value (and sometimes an earlier one:
// diamonds inside a fused group). Every value has the batch `n` as dim 0 and static dims after
// it, rank 2 or 3. Ops: unary elementwise, binary broadcast (against another input, a
// broadcast input, a constant row, a scalar or an earlier value), comparison + where,
// nn.bias_add, nn.dense, nn.softmax, reshape, transpose, strided_slice, concatenate.
class ChainBuilder {
 public:
  ChainBuilder(Gen& g, DeviceKind device) : g_(g), device_(device) {}

  Chain Build() {
    cur_ = {-1, g_.Pick<int64_t>({2, 3, 4, 6, 8, 12, 16})};
    std::string v = Param(cur_);
    values_.push_back({v, cur_});
    for (int64_t n = g_.Int(3, 8); n > 0; --n) {
      v = Step(v);
      values_.push_back({v, cur_});
    }
    std::string results = v;
    // Sometimes an intermediate is a result too: it must survive its fused group.
    if (values_.size() > 2 && g_.Int(0, 3) == 0) {
      results =
          absl::StrCat(values_[g_.Int(1, static_cast<int64_t>(values_.size()) - 2)].first, ", ", v);
    }
    Chain c;
    c.text = absl::StrCat("def @main(", absl::StrJoin(params_text_, ", "), ") {\n", body_,
                          "  return ", results, "\n}\n");
    c.params = params_;
    return c;
  }

 private:
  static std::string TypeText(const std::vector<int64_t>& shape) {
    std::vector<std::string> dims;
    for (int64_t d : shape) dims.push_back(d < 0 ? "n" : absl::StrCat(d));
    return absl::StrCat("f32[", absl::StrJoin(dims, ", "), "]");
  }
  std::string Param(const std::vector<int64_t>& shape) {
    const std::string name = absl::StrCat("%x", params_.size());
    params_.push_back(shape);
    params_text_.push_back(absl::StrCat(name, ": ", TypeText(shape), " @", DeviceName(device_)));
    return name;
  }
  // A random f32 constant (elided: CompileForVm fills it with values in [-0.1, 0.1]); a scalar
  // is 0.75.
  std::string Constant(const std::vector<int64_t>& shape) {
    const std::string name = absl::StrCat("%c", next_++);
    absl::StrAppend(&body_, "  ", name, " = ",
                    shape.empty() ? "constant<0.75>" : "constant<elided>", " : ", TypeText(shape),
                    "\n");
    return name;
  }
  std::string Bind(const std::string& call) {
    const std::string name = absl::StrCat("%v", next_++);
    absl::StrAppend(&body_, "  ", name, " = ", call, "\n");
    return name;
  }
  // The second operand of a binary op whose first operand has the current shape.
  std::string Other() {
    switch (g_.Int(0, 4)) {
      case 0:  // another dynamic input of the same shape
        return Param(cur_);
      case 1: {  // a dynamic input broadcast along everything but the batch
        std::vector<int64_t> s(cur_.size(), 1);
        s[0] = -1;
        return Param(s);
      }
      case 2:
        return Constant({cur_.back()});
      case 3:
        return Constant({});
      default: {  // an earlier value of the same shape (a diamond), else an input
        std::vector<std::string> same;
        for (const auto& [name, shape] : values_) {
          if (shape == cur_) same.push_back(name);
        }
        return same.empty() ? Param(cur_) : g_.Pick(same);
      }
    }
  }
  std::string Step(const std::string& v) {
    const int64_t last = cur_.back();
    const int rank = static_cast<int>(cur_.size());
    switch (g_.Int(0, 10)) {
      case 0:
      case 1:
        return Bind(absl::StrCat(
            g_.Pick<std::string>({"nn.relu", "exp", "sigmoid", "tanh", "negative", "abs"}), "(", v,
            ")"));
      case 2:
      case 3: {
        const std::string op =
            g_.Pick<std::string>({"add", "subtract", "multiply", "maximum", "minimum"});
        const std::string other = Other();
        return g_.Coin() ? Bind(absl::StrCat(op, "(", v, ", ", other, ")"))
                         : Bind(absl::StrCat(op, "(", other, ", ", v, ")"));
      }
      case 4: {  // a bool intermediate inside the group
        const std::string cmp = g_.Pick<std::string>({"greater", "less", "equal"});
        const std::string other = Other();
        const std::string mask = Bind(absl::StrCat(cmp, "(", v, ", ", other, ")"));
        return Bind(absl::StrCat("where(", mask, ", ", v, ", ", Constant({}), ")"));
      }
      case 5:
        return Bind(absl::StrCat("nn.bias_add(", v, ", ", Constant({last}),
                                 ") {axis = ", g_.Coin() ? -1 : rank - 1, "}"));
      case 6:
      case 7: {
        const int64_t units = g_.Pick<int64_t>({2, 3, 4, 8, 16});
        const std::string w = Constant({units, last});
        cur_.back() = units;
        return Bind(absl::StrCat("nn.dense(", v, ", ", w, ")"));
      }
      case 8:
        return Bind(absl::StrCat("nn.softmax(", v, ") {axis = ", g_.Int(-rank, rank - 1), "}"));
      case 9:
        if (last > 1 && g_.Coin()) {  // slice the last dim
          const int64_t begin = g_.Int(0, last - 2);
          const int64_t end = g_.Int(begin + 1, last);
          cur_.back() = end - begin;
          return Bind(absl::StrCat("strided_slice(", v, ") {axes = [", rank - 1, "], begin = [",
                                   begin, "], end = [", end, "]}"));
        }
        cur_.back() *= 2;
        return Bind(absl::StrCat("concatenate(", v, ", ", v, ") {axis = ", rank - 1, "}"));
      default:
        if (rank == 3 && g_.Coin()) {
          std::swap(cur_[1], cur_[2]);
          return Bind(absl::StrCat("transpose(", v, ") {axes = [0, 2, 1]}"));
        }
        if (rank == 3) {
          cur_ = {-1, cur_[1] * cur_[2]};
          return Bind(absl::StrCat("reshape(", v, ") {newshape = [0, -1]}"));
        }
        for (int64_t a : {2, 3}) {
          if (last % a == 0 && last > a) {
            cur_ = {-1, a, last / a};
            return Bind(absl::StrCat("reshape(", v, ") {newshape = [0, ", a, ", ", last / a, "]}"));
          }
        }
        return Bind(absl::StrCat("nn.relu(", v, ")"));
    }
  }

  Gen& g_;
  DeviceKind device_;
  std::vector<int64_t> cur_;
  std::vector<std::pair<std::string, std::vector<int64_t>>> values_;  // bound so far
  std::vector<std::vector<int64_t>> params_;
  std::vector<std::string> params_text_;
  std::string body_;
  int next_ = 0;
};

// Tests that random fused chains compute what the same chains compute op by op with the
// reference kernels, on cpu and sim, at several batch sizes of one compiled program; and that
// the fast paths (JIT-compiled elementwise groups, GEMM-library dense groups, fused with their
// epilogues) ran, so they are what this test covers.
TEST(FusedChains, MatchUnfusedReference) {
  std::map<std::string, int> kinds;  // kernel implementation -> kernel sites
  int multi_op_jit = 0, fused_dense = 0;
  for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kSim}) {
    for (int chain_no = 0; chain_no < kChains; ++chain_no) {
      Gen g((Fnv1a("fused-chain") ^ ExtraSeed()) + chain_no);
      const Chain chain = ChainBuilder(g, device).Build();
      SCOPED_TRACE(absl::StrCat("chain ", chain_no, " on ", DeviceName(device), ":\n", chain.text));
      auto program = CompileForVm(chain.text, vm::DefaultPipeline(device));
      ASSERT_TRUE(program.ok()) << program.status();
      auto machine = vm::VirtualMachine::Load(program->executable);
      ASSERT_TRUE(machine.ok()) << machine.status();
      for (const std::string& line : (*machine)->KernelDescriptions()) {
        const std::string kind = KernelKind(line);
        ++kinds[kind];
        if (kind == "jit" && absl::StrContains(line, ",")) ++multi_op_jit;
        if (kind == "onednn" && absl::StrContains(line, "matmul[")) ++fused_dense;
      }
      for (int64_t n : {1, 33, 7}) {
        SCOPED_TRACE(absl::StrCat("n = ", n));
        std::vector<Tensor> inputs;
        for (const std::vector<int64_t>& shape : chain.params) {
          std::vector<int64_t> concrete = shape;
          for (int64_t& d : concrete) d = d < 0 ? n : d;
          inputs.push_back(::hetpass::testing::RandomTensor(
              DType::kF32, concrete, static_cast<uint32_t>(chain_no * 131 + inputs.size() + n)));
        }
        auto got = (*machine)->RunWithHostTensors("main", inputs);
        ASSERT_TRUE(got.ok()) << got.status() << "\n" << PrintModule(*program->compiled);
        auto want = ReferenceRun(*program->source, inputs);
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_EQ(got->size(), want->size());
        for (size_t o = 0; o < want->size(); ++o) {
          // Dense groups accumulate in the library's order: not bit-exact.
          EXPECT_TRUE(SameValues((*got)[o], (*want)[o], 1e-4))
              << "output " << o << "\n"
              << PrintModule(*program->compiled) << "\n"
              << absl::StrJoin((*machine)->KernelDescriptions(), "\n");
        }
      }
    }
  }
  std::vector<std::string> seen;
  for (const auto& [kind, count] : kinds) seen.push_back(absl::StrCat(kind, " x", count));
  std::cout << "fused chains: kernel sites by implementation: " << absl::StrJoin(seen, ", ")
            << "; multi-op jit groups " << multi_op_jit << ", dense groups with epilogue "
            << fused_dense << "\n";
  EXPECT_GT(kinds["jit"], 0) << "no JIT-compiled group ran";
  EXPECT_GT(kinds["onednn"], 0) << "no dense group ran in the GEMM library";
  EXPECT_GT(multi_op_jit, 0) << "no JIT group fused several ops";
}

}  // namespace
}  // namespace hetpass
