// Device layer: the parts shared by every device (counter arithmetic and printing, names) and
// the one factory that maps an IR device kind to a runtime device.
//
// Why a single MakeDevice(kind): the VM builds its devices from the kinds the device planner
// wrote into the IR, so the mapping "kind -> implementation" must live in one place and fail
// with a Status (not a crash) for kinds this build or machine cannot run: cuda without a usable
// GPU is FailedPrecondition naming the CUDA error, a build without it Unimplemented; kUnset is
// a caller bug (InvalidArgument).
#include "passes/runtime/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#ifdef HETPASS_HAS_CUDA
#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cupti.h"
#endif

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hetpass::runtime {

DeviceCounters& DeviceCounters::operator+=(const DeviceCounters& o) {
  for (const DeviceCounterField& f : kDeviceCounterFields) this->*f.member += o.*f.member;
  return *this;
}

std::string DeviceCounters::ToString() const {
  std::string s = absl::StrFormat(
      "h2d %d (%d B), d2h %d (%d B), d2d %d (%d B), syncs %d, allocs %d, launches %d", h2d_calls,
      h2d_bytes, d2h_calls, d2h_bytes, d2d_calls, d2d_bytes, syncs, allocs, launches);
  if (param_calls != 0) absl::StrAppendFormat(&s, ", params %d (%d B)", param_calls, param_bytes);
  if (graph_launches != 0 || graph_captures != 0) {
    absl::StrAppendFormat(&s, ", graph launches %d (%d kernels), graphs captured %d", graph_launches,
                          graph_kernels, graph_captures);
  }
  if (bad_frees != 0) absl::StrAppend(&s, ", bad frees ", bad_frees);
  return s;
}

bool BuiltWithCuda() {
#ifdef HETPASS_HAS_CUDA
  return true;
#else
  return false;
#endif
}

std::string DescribeCuda() {
#ifdef HETPASS_HAS_CUDA
  return CudaDescription();
#else
  return "no cuda device in this build (HETPASS_CUDA=OFF or no CUDA toolkit)";
#endif
}

absl::Status StartCuptiTrace() {
#ifdef HETPASS_HAS_CUDA
  return cuda_api::StartTrace();
#else
  return absl::UnimplementedError("no cuda device in this build, so no CUPTI trace");
#endif
}

absl::StatusOr<CuptiTrace> StopCuptiTrace() {
#ifdef HETPASS_HAS_CUDA
  return cuda_api::StopTrace();
#else
  return absl::UnimplementedError("no cuda device in this build, so no CUPTI trace");
#endif
}

std::string Device::name() const { return std::string(DeviceName(kind())); }

absl::Status Device::CheckMemoryLimit(size_t rounded, size_t requested) const {
  if (memory_limit_ <= 0) return absl::OkStatus();
  const int64_t held = counters_.held_bytes;
  const int64_t available = std::max<int64_t>(0, memory_limit_ - held);
  if (static_cast<uint64_t>(rounded) <= static_cast<uint64_t>(available)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      name(), ": device memory limit: requested ", requested, " bytes, ", available,
      " available (limit ", memory_limit_, " bytes, ", held, " held)"));
}

std::vector<LaunchArg> GraphNode::Args() const {
  std::vector<LaunchArg> out = args;
  size_t offset = 0;
  for (LaunchArg& a : out) {
    if (!a.by_value) continue;
    a.data = const_cast<char*>(values.data()) + offset;
    offset += a.bytes;
  }
  return out;
}

absl::StatusOr<std::unique_ptr<DeviceGraph>> Device::CaptureGraph(std::vector<GraphNode>) {
  return absl::UnimplementedError(absl::StrCat(name(), " has no device graphs"));
}

absl::Status Device::LaunchGraph(DeviceGraph&) {
  return absl::UnimplementedError(absl::StrCat(name(), " has no device graphs"));
}

absl::Status Device::LaunchNode(const GraphNode& node) {
  switch (node.kind) {
    case GraphNode::Kind::kCopyHostToDevice:
      return NodeError(node, CopyHostToDevice(node.dst, node.src, node.bytes));
    case GraphNode::Kind::kCopyDeviceToDevice:
      return NodeError(node, CopyDeviceToDevice(node.dst, node.src, node.bytes));
    case GraphNode::Kind::kKernel:
      break;
  }
  std::vector<LaunchArg> args = node.Args();
  return NodeError(node, Launch(absl::MakeSpan(args), [&]() { return node.kernel(args); }));
}

absl::StatusOr<std::shared_ptr<void>> Device::AllocateStaging(size_t bytes) {
  void* p = std::malloc(std::max<size_t>(bytes, 1));
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("staging: no ", bytes, " bytes of host memory"));
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

absl::Status NodeError(const GraphNode& node, absl::Status status) {
  if (status.ok() || node.label.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(node.label, ": ", status.message()));
}

absl::Status Device::KernelCopy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Device>> MakeDevice(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return MakeCpuDevice();
    case DeviceKind::kSim:
      return MakeSimDevice();
    case DeviceKind::kCuda:
#ifdef HETPASS_HAS_CUDA
      return MakeCudaDevice();
#else
      return absl::UnimplementedError(
          "cuda: this build has no CUDA device (configured with HETPASS_CUDA=OFF, or no CUDA "
          "toolkit was found): plan for target=sim, or run on cpu");
#endif
    case DeviceKind::kUnset:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "no runtime device for device kind '", DeviceName(kind), "' (", static_cast<int>(kind), ")"));
}

}  // namespace hetpass::runtime
