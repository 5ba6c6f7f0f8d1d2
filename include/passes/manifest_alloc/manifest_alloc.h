// manifest-alloc: turns implicit memory into explicit steps (see manifest_alloc.cc).
#ifndef HETPASS_MANIFEST_ALLOC_MANIFEST_ALLOC_H_
#define HETPASS_MANIFEST_ALLOC_MANIFEST_ALLOC_H_

#include <memory>
#include <string>

#include "passes/ir/ir.h"
#include "passes/pass/pass.h"

namespace hetpass {

struct ManifestAllocOptions {
  static constexpr absl::string_view kName = "manifest-alloc";
  std::string function = "main";
  int64_t alignment = 64;
};

std::unique_ptr<Pass> CreateManifestAllocPass(const ManifestAllocOptions& options = {});

// The invariant manifest-alloc establishes: every kernel call (invoke of a primitive
// function) writes into explicit outputs, and no op call computes outside a primitive.
absl::Status VerifyExplicitAllocation(const Module& module, absl::string_view function = "main");

}  // namespace hetpass

#endif  // HETPASS_MANIFEST_ALLOC_MANIFEST_ALLOC_H_
