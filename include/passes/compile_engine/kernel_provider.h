// Kernel providers: the compile engine's unit of extension.
//
// A provider knows how to compile some primitive functions (fused groups made by fuse-ops) for
// one kind of device: oneDNN's dense and convolution groups, the LLVM JIT's elementwise loop
// nests, native loops for reductions, the reference interpreter. Each device kind has ONE
// ordered list of providers (KernelProviders, defined in src/compile_engine/providers.cc,
// where the order is documented); CompileEngine::Lower tries them first to last and the first
// that does not answer Unimplemented ("not mine") wins. Any other error is a real one and
// stops the search, so a provider that recognises a group but fails to compile it reports why
// instead of silently falling back.
//
// Adding a device is adding a provider list and a runtime::Device: nothing here names ops or
// devices. Providers also answer capability queries without compiling (Runs / Fuses), which
// the passes consult through KernelCapabilities: plan-devices keeps on the host an op that no
// provider of the accelerator runs, and fuse-ops builds only groups whose members some
// provider compiles together (an op one provider runs only alone, such as an image resize,
// stays alone instead of dragging its neighbours onto the reference kernels).
#ifndef HETPASS_COMPILE_ENGINE_KERNEL_PROVIDER_H_
#define HETPASS_COMPILE_ENGINE_KERNEL_PROVIDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/ir.h"
#include "passes/ir/op_def.h"

namespace hetpass {

class KernelCache;
class TieredCompiler;

// What a kernel is compiled for, and with what: the device kind (a GPU provider will add the
// architecture, sm_80, here), the on-disk kernel cache providers that generate code may
// load from and store in (null: none; kernel_cache.h), and the background compiler a JIT
// provider hands its code generation to (null: compile now; src/compile_engine/tiered_kernel.h).
struct KernelTarget {
  DeviceKind device = DeviceKind::kCpu;
  KernelCache* kernel_cache = nullptr;
  TieredCompiler* tiered = nullptr;
};

// The engine facilities a provider is built on; CompileEngineOptions can switch each off
// (benchmarks, tests of the fallbacks), which skips the providers that need it.
enum ProviderNeeds : uint8_t {
  kNeedsNothing = 0,
  kNeedsKernelLibrary = 1,  // a vendor kernel library (oneDNN)
  kNeedsJit = 2,            // run-time code generation (LLVM)
};

class KernelProvider {
 public:
  virtual ~KernelProvider() = default;
  // Short and stable: listings, errors and `hetpass-opt --list-providers` show it.
  virtual absl::string_view name() const = 0;
  // A bit set of ProviderNeeds.
  virtual uint8_t needs() const { return kNeedsNothing; }

  // The kernel for `primitive`, or Unimplemented when this provider does not take it. Any other
  // error is real (the engine reports it, naming the primitive and the device).
  virtual absl::StatusOr<std::unique_ptr<CompiledKernel>> TryCompile(
      const Function& primitive, const KernelTarget& target) const = 0;

  // Capabilities, answered from the op's definition alone (no attributes, no dtypes), so they
  // are necessary rather than sufficient conditions:
  //   Runs(op)   a group holding only `op` may compile here;
  //   Fuses(op)  `op` may be one of several members of a group compiled here.
  virtual bool Runs(const OpDef& op) const = 0;
  virtual bool Fuses(const OpDef& op) const { return false; }
  // True for a provider that takes every group it can run at all, however slowly (the
  // reference interpreter): it does not count as a reason to fuse.
  virtual bool is_fallback() const { return false; }

  // Whether TryCompile would take `primitive`, answered by the provider's matcher where it has
  // one (no code generated); by compiling otherwise.
  virtual bool Takes(const Function& primitive, const KernelTarget& target) const {
    return TryCompile(primitive, target).ok();
  }
};

// The ordered providers of a device kind, first tried first; empty for a device kind with no
// kernels yet (cuda, until its providers exist). The list lives for the process.
absl::Span<const KernelProvider* const> KernelProviders(DeviceKind device);

// The channel block `device`'s convolution kernels compute in without reordering: for the host
// (cpu and sim run its kernels), oneDNN's nChw16c on AVX-512 machines and nChw8c on AVX2; 0
// where blocked layouts have no fast kernel (cuda: cuDNN takes NCHW). The default pipelines
// run block-conv-layout with it when it is not 0.
int64_t PreferredConvBlock(DeviceKind device);

// The capability queries the passes ask (plan-devices, fuse-ops). An interface so that tests
// and other pipelines can describe a device the built-in providers do not have.
class KernelCapabilities {
 public:
  virtual ~KernelCapabilities() = default;
  // Some provider of `device` runs a group holding only `op`.
  virtual bool CanRun(const OpDef& op, DeviceKind device) const = 0;
  // `op` may join a multi-op group on `device` without losing a native kernel: a provider
  // other than the fallback compiles it inside such groups, or none but the fallback runs it at
  // all (then its group runs there either way).
  virtual bool CanFuse(const OpDef& op, DeviceKind device) const = 0;
  // Whether `device` runs the candidate group `primitive` whole: some provider takes it, or the
  // device has a fallback provider (which runs every group). CanFuse answers per op, so a
  // group of fusable ops may still be one no provider takes (a reduction whose prologue reads a
  // second tensor, on cuda); fuse-ops asks this of every multi-op group on a device and splits
  // a group it refuses into single ops. The default (descriptions of devices in tests) says yes.
  virtual bool TakesGroup(const Function& primitive, DeviceKind device) const { return true; }
  // True when TakesGroup answers yes for every group of `device` (it has a fallback provider),
  // so callers need not build the candidate function at all.
  virtual bool TakesEveryGroup(DeviceKind device) const { return true; }
  // Whether a provider other than the fallback takes `primitive` whole: where a device has a
  // fallback, a group that only the fallback takes runs on the reference interpreter, so
  // fuse-ops splits it into pieces native providers take. The default: TakesGroup.
  virtual bool TakesGroupNatively(const Function& primitive, DeviceKind device) const {
    return TakesGroup(primitive, device);
  }
};

// The capabilities of KernelProviders. An unplaced value (kUnset) is asked about the cpu.
const KernelCapabilities& BuiltinKernelCapabilities();

// Whether `device` runs the group of `members` (calls of one block, in program order) whole: the
// group copied into a scratch primitive function as fuse-ops outlines it (parameters: the values
// the members use but do not define, in first-use order; results: `outputs`, values of the
// members), then caps.TakesGroup. fuse-ops asks it of each multi-op group, plan-devices of each
// op it would place on an accelerator.
//
// `cache` (optional): answers for candidates structurally equal (StructuralHash, then
// StructurallyEqual: names and locations aside) to ones asked before with the same
// capabilities. A generated or exported model repeats a few block shapes thousands of times,
// and a provider's Takes may print and re-parse the candidate (the split providers); one
// cache per pass run makes those questions cost a hash each.
class GroupAnswerCache;
bool DeviceRunsGroup(const KernelCapabilities& caps, absl::Span<const Node* const> members,
                     absl::Span<Value* const> outputs, DeviceKind device,
                     GroupAnswerCache* cache = nullptr);
// The same candidate, asked caps.TakesGroupNatively: some provider other than the fallback
// takes it whole.
// `structural_hash`: GroupStructuralHash(members, outputs) where the caller has it already
// (fuse-ops hashes each group once, for this question and for sharing its function).
bool DeviceRunsGroupNatively(const KernelCapabilities& caps, absl::Span<const Node* const> members,
                             absl::Span<Value* const> outputs, DeviceKind device,
                             GroupAnswerCache* cache = nullptr,
                             std::optional<size_t> structural_hash = std::nullopt);

// Remembers DeviceRunsGroup / DeviceRunsGroupNatively answers of one KernelCapabilities (the
// caller keeps one cache per capabilities object). Not thread-safe.
class GroupAnswerCache {
 public:
  GroupAnswerCache();
  ~GroupAnswerCache();
  GroupAnswerCache(const GroupAnswerCache&) = delete;
  GroupAnswerCache& operator=(const GroupAnswerCache&) = delete;

  // The answer for the candidate group of `members` with `outputs` (see DeviceRunsGroup)
  // asked `question` (an index the caller picks per question) about `device`: remembered, or
  // `ask`ed of the candidate function and kept; false where an output is not a member's.
  bool Answer(absl::Span<const Node* const> members, absl::Span<Value* const> outputs,
              int question, DeviceKind device, const std::function<bool(const Function&)>& ask,
              std::optional<size_t> structural_hash = std::nullopt);
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::unique_ptr<Module> module;  // holds the candidate function
    int question;
    DeviceKind device;
    bool answer;
  };
  absl::flat_hash_map<size_t, std::vector<Entry>> entries_;
  mutable int64_t hits_ = 0;
  mutable int64_t misses_ = 0;
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_KERNEL_PROVIDER_H_
