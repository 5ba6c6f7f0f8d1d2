// Single-op image / pad / fill groups (the group shapes image_kernel.h documents), matched once
// for every device that runs them: the host's native kernels (image_kernel.cc) and the cuda
// device's NVRTC kernels (cuda/nvrtc_image.cc). Also the argument checks both run and the
// run-time values both read on the host (dyn.* sizes, pads and shapes), so that both take
// exactly the same groups and a mismatch reads the same on every device.
#ifndef HETPASS_COMPILE_ENGINE_IMAGE_MATCH_H_
#define HETPASS_COMPILE_ENGINE_IMAGE_MATCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/compile_engine/kernel.h"
#include "passes/ir/ir.h"

namespace hetpass::image_match {

enum class OpKind { kRoiAlign, kResize, kDynResize, kPad, kDynPad, kZeros, kOnes, kFull };

struct ImageGroup {
  std::string function;  // "@name"
  int num_params = 0;
  OpKind kind = OpKind::kZeros;
  std::vector<int> param;                  // per operand: its parameter index
  std::vector<std::string> operand_names;  // per operand: "role (%param)"
  Attrs attrs;                             // with the registry's defaults
  int rank = 0;                            // data rank (pad), result rank (fills)
  DType result_dtype = DType::kF32;        // fills: the dtype attribute
};

// The group of `f`, or nullopt when `f` is not one of the groups image_kernel.h describes.
// `any_fill_dtype` (the cuda kernels, which fill every dtype): fills of any result dtype too.
std::optional<ImageGroup> MatchImageGroup(const Function& f, bool any_fill_dtype = false);
// "roi_align", "resize2d[linear]", "pad", "fill": the op part of a kernel's Describe().
std::string OpLabel(const ImageGroup& g);
// KernelProvider::Runs of the providers that take these groups.
bool ImageRuns(const OpDef& op);

// The operands whose values a kernel reads on the host (dyn.image.resize2d's size,
// dyn.nn.pad's pad_width, the fills' shape: the `value` inputs, which plan-devices keeps on the
// host), as parameter indices; and the scalar fill operand (dyn.nn.pad's pad_value,
// dyn.full's fill_value; -1 for the others), a data input that may live on either side.
std::vector<int> HostValueParams(const ImageGroup& g);
int FillParam(const ImageGroup& g);

// ---- argument checks (InvalidArgument naming the function and the argument) ----
std::string ShapeStr(absl::Span<const int64_t> shape);
absl::Status Invalid(const ImageGroup& g, const std::string& what);
absl::Status CheckCount(const ImageGroup& g, absl::Span<const TensorArg> args);

// Host reads of integer tensors and scalars (dtypes checked by the callers).
int64_t IntAt(const TensorArg& t, int64_t i);
std::vector<int64_t> Ints(const TensorArg& t);
// A scalar read as double, as Tensor::GetDouble.
double ScalarAt(const TensorArg& t);

// Each op's argument checks, in the order the host kernels have always run them, with the
// run-time values they need (read on the host); the result argument checked last. Data is
// never read, so the checks hold for device memory too.
struct RoiAlignShape {
  int64_t num_rois = 0, n = 0, channels = 0, height = 0, width = 0, out_h = 0, out_w = 0;
};
absl::StatusOr<RoiAlignShape> CheckRoiAlign(const ImageGroup& g, absl::Span<const TensorArg> args);

// Also an error: a non-empty result from an empty image.
struct ResizeShape {
  bool nchw = true;
  int64_t n = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
};
absl::StatusOr<ResizeShape> CheckResize(const ImageGroup& g, absl::Span<const TensorArg> args);

// The fill value (pad_value of dyn.nn.pad) is checked to be a scalar, not read.
struct PadShape {
  std::vector<int64_t> pads;       // before0, after0, before1, ...
  std::vector<int64_t> out_shape;  // the result's
};
absl::StatusOr<PadShape> CheckPad(const ImageGroup& g, absl::Span<const TensorArg> args);

// The result's shape; dyn.full's fill_value is checked to be a scalar, not read.
absl::StatusOr<std::vector<int64_t>> CheckFill(const ImageGroup& g, absl::Span<const TensorArg> args);

}  // namespace hetpass::image_match

#endif  // HETPASS_COMPILE_ENGINE_IMAGE_MATCH_H_
