// fuse-ops: groups op calls into primitive functions (`def @fused_... attributes {primitive =
// true}`), one `invoke` per group (groups that outline to structurally equal functions invoke
// one shared function, see share_functions). Elementwise, broadcast and injective ops fuse with
// their producers; out-elementwise-fusable ops (nn.dense, nn.conv2d) absorb the elementwise and
// broadcast ops that follow them, as far as the device's kernel providers can compile the
// members together (KernelCapabilities::CanFuse). Ops whose output shape depends on values, and ops reading an
// input's contents, never fuse with the producer of that input. The algorithm, the exact
// rules and the output form are described at the top of src/transforms/fuse_ops.cc; the fused
// functions' masks and shape functions are in passes/shape_funcs/primitive_function.h.
#ifndef HETPASS_TRANSFORMS_FUSE_OPS_H_
#define HETPASS_TRANSFORMS_FUSE_OPS_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "passes/pass/pass.h"

namespace hetpass {
class KernelCapabilities;
}  // namespace hetpass

namespace hetpass {

struct FuseOpsOptions {
  static constexpr absl::string_view kName = "fuse-ops";
  // Largest number of op calls in one primitive function (at least 1; 1 wraps every op alone).
  int64_t max_group_size = 256;
  // Groups of one function that outline to structurally equal primitive functions
  // (GroupsStructurallyEqual) invoke one function instead of a copy each, where the function's
  // types mention only symbols its parameters bind (a model of 24 identical layers gets one
  // function per distinct group, as its kernels are already shared by structure).
  bool share_functions = true;
  // What the devices can compile together (rule h in fuse_ops.cc); null: the built-in kernel
  // providers'. Not owned; must outlive the pass.
  const KernelCapabilities* capabilities = nullptr;
};

// Errors when the options are invalid (max_group_size < 1).
absl::StatusOr<std::unique_ptr<Pass>> CreateFuseOpsPass(const FuseOpsOptions& options = {});

}  // namespace hetpass

#endif  // HETPASS_TRANSFORMS_FUSE_OPS_H_
