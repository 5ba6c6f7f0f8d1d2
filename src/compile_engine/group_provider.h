// A kernel provider assembled from a group matcher: the shape every native provider here has
// (a predicate that recognises the group, a compile function, and the ops it runs and fuses).
// Each kernel file defines its provider with one of these next to its matcher, so what a
// provider claims (Runs / Fuses) is written beside the code that makes it true.
#ifndef HETPASS_COMPILE_ENGINE_GROUP_PROVIDER_H_
#define HETPASS_COMPILE_ENGINE_GROUP_PROVIDER_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "compile_engine/tiered_kernel.h"
#include "passes/compile_engine/kernel_provider.h"

namespace hetpass {

class GroupProvider final : public KernelProvider {
 public:
  struct Spec {
    absl::string_view name;
    uint8_t needs = kNeedsNothing;
    // Recognises the group; null when `compile` itself answers Unimplemented for other groups.
    bool (*matches)(const Function&) = nullptr;
    absl::StatusOr<std::unique_ptr<CompiledKernel>> (*compile)(const Function&) = nullptr;
    bool (*runs)(const OpDef&) = nullptr;
    bool (*fuses)(const OpDef&) = nullptr;  // null: only single-op groups
    // Used instead of `compile` when set: for providers that read the target (the JIT reads
    // its kernel cache there).
    absl::StatusOr<std::unique_ptr<CompiledKernel>> (*compile_for)(const Function&,
                                                                   const KernelTarget&) = nullptr;
  };
  explicit GroupProvider(Spec spec) : spec_(std::move(spec)) {}

  absl::string_view name() const override { return spec_.name; }
  uint8_t needs() const override { return spec_.needs; }
  absl::StatusOr<std::unique_ptr<CompiledKernel>> TryCompile(
      const Function& primitive, const KernelTarget& target) const override {
    if (spec_.matches != nullptr && !spec_.matches(primitive)) {
      return absl::UnimplementedError(absl::StrCat(spec_.name, " does not take @", primitive.name()));
    }
    if (spec_.compile_for != nullptr) {
      // A JIT provider with an exact matcher may generate its code in the background: the
      // group runs on its reference kernel until then (tiered_kernel.h).
      if ((spec_.needs & kNeedsJit) != 0 && target.tiered != nullptr && spec_.matches != nullptr) {
        KernelTarget now = target;
        now.tiered = nullptr;
        const Function* f = &primitive;
        auto compile_for = spec_.compile_for;
        return target.tiered->Defer(
            primitive,
            absl::StrCat("@", primitive.name(), " for ", DeviceName(target.device), " (", spec_.name, ")"),
            [compile_for, f, now] { return compile_for(*f, now); });
      }
      return spec_.compile_for(primitive, target);
    }
    return spec_.compile(primitive);
  }
  bool Takes(const Function& primitive, const KernelTarget& target) const override {
    if (spec_.matches != nullptr) return spec_.matches(primitive);
    return KernelProvider::Takes(primitive, target);
  }
  bool Runs(const OpDef& op) const override { return spec_.runs(op); }
  bool Fuses(const OpDef& op) const override {
    return spec_.fuses != nullptr && spec_.fuses(op);
  }

 private:
  Spec spec_;
};

}  // namespace hetpass

#endif  // HETPASS_COMPILE_ENGINE_GROUP_PROVIDER_H_
