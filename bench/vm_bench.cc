// The VM on the seed MLP (3-layer dense+bias 1024-512-256-128, ReLU after the first two) on the
// cpu device, one thread, batch 1 / 16 / 64:
//   MlpStatic   a build for each batch size (static shapes)
//   MlpDynamic  ONE build with a symbolic batch, run at every batch size
//   MlpDirect   the same compiled kernels called back to back with preallocated buffers and no
//               VM (what a graph runtime does): the floor the VM is measured against
// Ratios (dynamic/static, static/direct) come from one run of this binary:
//   ./bench/vm_bench --benchmark_filter=Mlp --benchmark_counters_tabular=true
// Dispatch: a program of no-op kernels (2,000 instructions) measures ns per instruction.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "passes/compile_engine/compile_engine.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/pass/pass_registry.h"
#include "passes/runtime/ndarray.h"
#include "passes/vm/vm.h"
#include "support/seed_models.h"

namespace hetpass {
namespace {

std::string Mlp(const std::string& batch) { return testing::SeedMlp(batch); }

Tensor Random(std::vector<int64_t> shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t s = seed * 2654435761u + 1;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = (static_cast<double>(s >> 40) / (1 << 24)) * 0.2 - 0.1;
  }
  return Tensor::FromDoubles(DType::kF32, std::move(shape), v);
}

std::unique_ptr<Module> CompiledModule(const std::string& text) {
  ParseOptions po;
  po.allow_elided_constants = true;
  auto m = ParseModule(text, po);
  if (!m.ok()) return nullptr;
  uint32_t seed = 1;
  for (const auto& f : (*m)->functions()) {
    WalkNodes(f->body(), [&](Node& n) {
      if (n.kind() == NodeKind::kConstant && n.constant_value().num_elements() > 1) {
        n.set_constant_value(Random(n.constant_value().shape(), seed++));
      }
    });
  }
  auto pm = ParsePipeline(vm::DefaultPipeline(DeviceKind::kCpu), {});
  if (!pm.ok() || !(*pm)->Run(**m).ok()) return nullptr;
  return *std::move(m);
}

struct Loaded {
  std::unique_ptr<vm::VirtualMachine> machine;
  int64_t instructions = 0;
};

Loaded Load(const std::string& text) {
  Loaded l;
  auto m = CompiledModule(text);
  if (!m) return l;
  auto exe = vm::CompileModule(*m);
  if (!exe.ok()) return l;
  l.instructions = exe->InstructionCount("main");
  auto machine = vm::VirtualMachine::Load(*std::move(exe));
  if (machine.ok()) l.machine = *std::move(machine);
  return l;
}

void RunVm(benchmark::State& state, vm::VirtualMachine& machine, int64_t instructions, int64_t batch) {
  auto input = runtime::FromHost(Random({batch, 1024}, 7), machine.pool(DeviceKind::kCpu));
  if (!input.ok()) {
    state.SkipWithError(std::string(input.status().message()).c_str());
    return;
  }
  const std::vector<vm::Object> args = {vm::Object::FromTensor(*input)};
  for (auto _ : state) {
    auto out = machine.Run("main", args);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  machine.ResetCounters();
  (void)machine.Run("main", args);
  state.counters["steady_allocs"] = static_cast<double>(machine.Counters().allocs);
}

void BM_MlpStatic(benchmark::State& state) {
  const int64_t batch = state.range(0);
  Loaded l = Load(Mlp(absl::StrCat(batch)));
  if (!l.machine) return state.SkipWithError("compile failed");
  RunVm(state, *l.machine, l.instructions, batch);
}

void BM_MlpDynamic(benchmark::State& state) {
  static Loaded l = Load(Mlp("n"));  // one compilation for every batch size
  if (!l.machine) return state.SkipWithError("compile failed");
  RunVm(state, *l.machine, l.instructions, state.range(0));
}

// The same kernels, called directly: compile engine output, buffers allocated once.
void BM_MlpDirect(benchmark::State& state) {
  const int64_t batch = state.range(0);
  auto m = CompiledModule(Mlp(absl::StrCat(batch)));
  if (!m) return state.SkipWithError("compile failed");
  CompileEngine engine;
  std::vector<std::unique_ptr<KernelInstance>> kernels;
  std::vector<std::vector<TensorArg>> calls;
  std::vector<Tensor> buffers;  // keeps every argument alive
  buffers.reserve(64);
  absl::flat_hash_map<const Value*, size_t> where;
  const Function* main = m->FindFunction("main");
  buffers.push_back(Random({batch, 1024}, 7));
  where[main->body().param(0)] = 0;
  std::vector<std::string> describe;
  for (const auto& n : main->body().nodes()) {
    if (n->kind() == NodeKind::kConstant) {
      buffers.push_back(n->constant_value());
      where[n->result()] = buffers.size() - 1;
    } else if (n->kind() == NodeKind::kCall && n->op()->role() == OpRole::kAllocTensor) {
      std::vector<int64_t> shape;
      for (const DimExpr& d : n->result()->type().shape()) shape.push_back(d.constant());
      buffers.push_back(Tensor::Zeros(n->result()->type().dtype(), shape));
      where[n->result()] = buffers.size() - 1;
    } else if (n->kind() == NodeKind::kInvoke && IsKernelInvoke(*n)) {
      const Function* p = m->FindFunction(n->callee());
      auto k = engine.Lower(*p, DeviceKind::kCpu);
      if (!k.ok()) return state.SkipWithError("lower failed");
      std::vector<const Tensor*> consts;
      std::vector<TensorArg> args;
      for (int i = 0; i < n->num_operands(); ++i) {
        Tensor& t = buffers[where.at(n->operand(i))];
        const bool is_const = n->operand(i)->producer() && n->operand(i)->producer()->kind() == NodeKind::kConstant;
        if (i < p->body().num_params()) consts.push_back(is_const ? &t : nullptr);
        args.push_back(TensorArg{t.mutable_data(), t.dtype(), t.shape()});
      }
      auto inst = (*k)->Instantiate(consts);
      if (!inst.ok()) return state.SkipWithError("instantiate failed");
      kernels.push_back(*std::move(inst));
      calls.push_back(std::move(args));
      describe.push_back((*k)->Describe());
    }
  }
  for (auto _ : state) {
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (!kernels[i]->Run(calls[i]).ok()) return state.SkipWithError("kernel failed");
    }
    benchmark::ClobberMemory();
  }
  state.SetLabel(describe.empty() ? "" : describe[0]);
}

BENCHMARK(BM_MlpStatic)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpDynamic)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpDirect)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// ---- dispatch: no-op kernels --------------------------------------------------------------
class NoopInstance : public KernelInstance {
 public:
  absl::Status Run(const KernelContext&, absl::Span<const TensorArg>) override { return absl::OkStatus(); }
};
class NoopKernel : public CompiledKernel {
 public:
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(const KernelContext&,
                                                          absl::Span<const Tensor* const>) const override {
    return std::make_unique<NoopInstance>();
  }
  std::string Describe() const override { return "noop"; }
};

void BM_DispatchNoopKernels(benchmark::State& state) {
  // A chain of softmax ops (opaque: each its own kernel): alloc_storage, alloc_tensor and
  // invoke_kernel per op, with a symbolic batch so every size is evaluated at run time.
  const int kOps = 600;
  std::string text = "def @main(%x: f32[n, 8]) {\n";
  std::string prev = "%x";
  for (int i = 0; i < kOps; ++i) {
    absl::StrAppend(&text, "  %v", i, " = nn.softmax(", prev, ")\n");
    prev = absl::StrCat("%v", i);
  }
  absl::StrAppend(&text, "  return ", prev, "\n}\n");
  auto m = ParseModule(text);
  if (!m.ok()) return state.SkipWithError("parse failed");
  auto pm = ParsePipeline(vm::DefaultPipeline(DeviceKind::kCpu), {});
  if (!pm.ok() || !(*pm)->Run(**m).ok()) return state.SkipWithError("pipeline failed");
  auto exe = vm::CompileModule(**m);
  if (!exe.ok()) return state.SkipWithError("compile failed");
  const int64_t instructions = exe->InstructionCount("main");
  vm::VmOptions o;
  auto noop = std::make_shared<const NoopKernel>();
  o.kernel_factory = [noop](const Function&, DeviceKind) -> absl::StatusOr<std::shared_ptr<const CompiledKernel>> {
    return std::shared_ptr<const CompiledKernel>(noop);
  };
  auto machine = vm::VirtualMachine::Load(*std::move(exe), o);
  if (!machine.ok()) return state.SkipWithError(std::string(machine.status().message()).c_str());
  auto input = runtime::FromHost(Random({4, 8}, 1), (*machine)->pool(DeviceKind::kCpu));
  const std::vector<vm::Object> args = {vm::Object::FromTensor(*input)};
  for (auto _ : state) {
    auto out = (*machine)->Run("main", args);
    if (!out.ok()) return state.SkipWithError(std::string(out.status().message()).c_str());
  }
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["ns_per_instruction"] = benchmark::Counter(
      static_cast<double>(instructions) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_DispatchNoopKernels)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace hetpass
