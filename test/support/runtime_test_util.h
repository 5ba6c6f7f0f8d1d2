// Test helpers for the compile engine and the VM: compile text IR to an executable, fill elided
// weights with random data, and evaluate a module op by op with the registry's reference
// kernels (the oracle: no fusion, no devices, no allocation).
#ifndef HETPASS_TEST_SUPPORT_RUNTIME_TEST_UTIL_H_
#define HETPASS_TEST_SUPPORT_RUNTIME_TEST_UTIL_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass_registry.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/vm/executable.h"
#include "passes/vm/vm.h"

namespace hetpass::testing {

inline Tensor RandomTensor(DType dtype, std::vector<int64_t> shape, uint32_t seed,
                           double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  if (dtype == DType::kF32 || dtype == DType::kF64 || dtype == DType::kF16 || dtype == DType::kBF16) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (double& x : v) x = dist(rng);
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (double& x : v) x = static_cast<double>(dist(rng));
  }
  return Tensor::FromDoubles(dtype, std::move(shape), v);
}

// Gives every floating-point constant of `m` that is all zeros (an elided weight) random values.
inline void FillElidedWeights(Module& m, uint32_t seed = 1) {
  for (const auto& f : m.functions()) {
    WalkNodes(f->body(), [&](Node& n) {
      if (n.kind() != NodeKind::kConstant) return;
      const Tensor& t = n.constant_value();
      if (t.dtype() != DType::kF32 || t.num_elements() < 2) return;
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        if (t.GetDouble(i) != 0.0) return;
      }
      n.set_constant_value(RandomTensor(t.dtype(), t.shape(), seed++, -0.1, 0.1));
    });
  }
}

struct VmProgram {
  std::unique_ptr<Module> source;    // before the pipeline (weights filled)
  std::unique_ptr<Module> compiled;  // after the pipeline
  CopyLedger ledger;
  vm::Executable executable;
};

// Parses (elided constants allowed, then filled), runs `pipeline` (verify after each pass) and
// lowers to bytecode.
inline absl::StatusOr<VmProgram> CompileForVm(const std::string& text, const std::string& pipeline,
                                              const OpRegistry* registry = nullptr) {
  ParseOptions po;
  po.registry = registry;
  po.allow_elided_constants = true;
  VmProgram p;
  auto m = ParseModule(text, po);
  if (!m.ok()) return m.status();
  FillElidedWeights(**m);
  p.source = *std::move(m);
  auto again = ParseModule(PrintModule(*p.source), po);
  if (!again.ok()) return again.status();
  p.compiled = *std::move(again);
  PassManagerOptions o;
  o.verify_each = true;
  auto pm = ParsePipeline(pipeline, o);
  if (!pm.ok()) return pm.status();
  auto run = (*pm)->Run(*p.compiled);
  if (!run.ok()) return run.status();
  auto ledger = ComputeCopyLedger(*p.compiled);
  if (!ledger.ok()) return ledger.status();
  p.ledger = *ledger;
  auto exe = vm::CompileModule(*p.compiled);
  if (!exe.ok()) return exe.status();
  p.executable = *std::move(exe);
  return p;
}

// Evaluates @main of `m` with reference kernels (calls, constants, tuples; no regions).
inline absl::StatusOr<std::vector<Tensor>> ReferenceRun(const Module& m,
                                                        const std::vector<Tensor>& inputs) {
  const Function* f = m.FindFunction("main");
  if (f == nullptr) return absl::NotFoundError("no @main");
  absl::flat_hash_map<const Value*, Tensor> env;
  for (int i = 0; i < f->body().num_params(); ++i) env[f->body().param(i)] = inputs.at(i);
  for (const auto& n : f->body().nodes()) {
    if (n->kind() == NodeKind::kConstant) {
      env[n->result()] = n->constant_value();
      continue;
    }
    if (n->kind() != NodeKind::kCall) {
      return absl::UnimplementedError(absl::StrCat("reference run: ", n->OpName()));
    }
    std::vector<Tensor> ins;
    std::vector<ShapeInput> shape_ins;
    for (const Value* v : n->operands()) ins.push_back(env.at(v));
    for (const Tensor& t : ins) shape_ins.push_back(ShapeInput{t.type(), &t});
    auto attrs = n->op()->CheckAttrs(n->attrs());
    if (!attrs.ok()) return attrs.status();
    auto types = n->op()->InferTypes(*attrs, shape_ins);
    if (!types.ok()) return types.status();
    auto outs = n->op()->reference()(ins, *attrs, *types);
    if (!outs.ok()) return outs.status();
    for (int r = 0; r < n->num_results(); ++r) env[n->result(r)] = (*outs)[r];
  }
  std::vector<Tensor> out;
  for (const Value* v : f->body().results()) out.push_back(env.at(v));
  return out;
}

// Element-wise comparison with a relative + absolute tolerance; names the first mismatch.
inline ::testing::AssertionResult TensorsNear(const Tensor& got, const Tensor& want,
                                              double tol = 1e-4) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.type().ToString() << ", want " << want.type().ToString();
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    if (!(std::abs(a - b) <= tol * (1.0 + std::abs(b)))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// Expects the two runs to have made the same copies: calls and bytes per direction (h2d, d2h,
// d2d, param) and syncs.
inline void ExpectSameCopies(const runtime::DeviceCounters& a, const runtime::DeviceCounters& b) {
  EXPECT_EQ(a.h2d_calls, b.h2d_calls);
  EXPECT_EQ(a.h2d_bytes, b.h2d_bytes);
  EXPECT_EQ(a.d2h_calls, b.d2h_calls);
  EXPECT_EQ(a.d2h_bytes, b.d2h_bytes);
  EXPECT_EQ(a.d2d_calls, b.d2d_calls);
  EXPECT_EQ(a.d2d_bytes, b.d2d_bytes);
  EXPECT_EQ(a.param_calls, b.param_calls);
  EXPECT_EQ(a.param_bytes, b.param_bytes);
  EXPECT_EQ(a.syncs, b.syncs);
}

}  // namespace hetpass::testing

#endif  // HETPASS_TEST_SUPPORT_RUNTIME_TEST_UTIL_H_
