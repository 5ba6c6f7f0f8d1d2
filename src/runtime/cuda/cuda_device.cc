// The cuda device over the CUDA runtime API (see cuda_device.h and docs/cuda.md). The runtime is
// linked statically and loads the driver itself on first use, so a binary starts on a machine
// without one; every call's error is turned into a Status naming the call, the error's name and
// number, and CUDA's own description.
//
// Design:
//   Stream  One non-blocking stream per device carries every copy, launch and library call, so
//           work is ordered without device-wide synchronisation; it is the native queue kernels
//           receive.
//   Memory  cudaMallocAsync / cudaFreeAsync on that stream, from the device's default memory
//           pool with its release threshold raised to "never", so memory freed to the pool stays
//           mapped. The PoolingAllocator above the device caches blocks, so a steady state makes
//           no raw allocation at all (the allocs counter), and the CUDA pool makes repeated raw
//           allocations cheap when it does. Live blocks are tracked (address -> size) to answer
//           Owns and to check every launch argument and copy range, as sim does.
//   Copies  Host-to-device and device-to-device are queued (cudaMemcpyAsync): no sync. A
//           host-to-device copy from pageable memory is staged by the driver before the call
//           returns, so the caller may reuse its buffer at once, as on sim. Device-to-host is
//           one counted sync: small reads (shape scalars, on-device counts) go through a pinned
//           staging buffer (a pinned source is what makes the copy truly asynchronous, and the
//           host then copies out of it); larger ones straight into the destination, followed by
//           the stream synchronisation.
//   Errors  Kernels OR error flags (integer division by zero, index out of range) into an error
//           word in mapped pinned host memory; every counted synchronisation reads it, and a set
//           word becomes an error (then cleared), so a kernel's error is never silent. Errors of
//           asynchronous work (a faulting kernel) surface at the same synchronisation, from
//           cudaStreamSynchronize.
//   Graphs  CaptureGraph runs each node's host half under stream capture (relaxed mode, so a
//           library's own cudaMalloc is allowed) and instantiates the result: a CUDA graph
//           launched by LaunchGraph with one cudaGraphLaunch. While capturing, raw allocations
//           go through a side stream (a cudaMallocAsync on the captured stream would become a
//           node of the graph) and device-to-device copies issued by kernels are tallied into
//           the graph, which counts them at each launch. Whatever refuses capture (an
//           uncapturable library call, a synchronisation) invalidates it: FailedPrecondition
//           naming the call, and the caller launches the nodes one by one.
//   Counts  Exactly as sim's (device.h): calls and bytes per direction (KernelCopy is d2d),
//           one sync per Synchronize, raw allocations, launches, by-value params.
// Thread safety: one mutex guards the live-block map and the counters, another the staging
// buffer; none is held while the host waits for the stream.
#include "runtime/cuda/cuda_device.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/live_blocks.h"

namespace hetpass::runtime {
namespace {

// Device-to-host reads up to this size go through the pinned staging buffer.
constexpr size_t kStagingBytes = size_t{64} << 10;

std::string CudaErrorText(cudaError_t e) {
  return absl::StrCat(cudaGetErrorName(e), " (", static_cast<int>(e), "): ", cudaGetErrorString(e));
}

absl::Status CudaCall(cudaError_t e, absl::string_view call) {
  if (e == cudaSuccess) return absl::OkStatus();
  // Out-of-memory is an ordinary run-time condition; everything else is the device failing.
  if (e == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(absl::StrCat("cuda: ", call, " failed with ", CudaErrorText(e)));
  }
  return absl::InternalError(absl::StrCat("cuda: ", call, " failed with ", CudaErrorText(e)));
}

class CudaDevice final : public Device {
 public:
  static absl::StatusOr<std::unique_ptr<CudaDevice>> Create(int ordinal) {
    auto d = std::unique_ptr<CudaDevice>(new CudaDevice(ordinal));
    RETURN_IF_ERROR(CudaCall(cudaSetDevice(ordinal), "cudaSetDevice"));
    RETURN_IF_ERROR(CudaCall(cudaStreamCreateWithFlags(&d->stream_, cudaStreamNonBlocking),
                             "cudaStreamCreateWithFlags"));
    RETURN_IF_ERROR(CudaCall(cudaStreamCreateWithFlags(&d->side_stream_, cudaStreamNonBlocking),
                             "cudaStreamCreateWithFlags(side stream)"));
    cudaMemPool_t pool = nullptr;
    RETURN_IF_ERROR(CudaCall(cudaDeviceGetDefaultMemPool(&pool, ordinal), "cudaDeviceGetDefaultMemPool"));
    uint64_t threshold = UINT64_MAX;
    RETURN_IF_ERROR(CudaCall(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                             "cudaMemPoolSetAttribute(release threshold)"));
    RETURN_IF_ERROR(CudaCall(cudaMallocHost(&d->staging_, kStagingBytes), "cudaMallocHost(staging)"));
    RETURN_IF_ERROR(CudaCall(cudaHostAlloc(reinterpret_cast<void**>(&d->error_host_), sizeof(uint32_t),
                                           cudaHostAllocMapped),
                             "cudaHostAlloc(error word)"));
    *d->error_host_ = 0;
    RETURN_IF_ERROR(CudaCall(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d->error_device_),
                                                      d->error_host_, 0),
                             "cudaHostGetDevicePointer(error word)"));
    RETURN_IF_ERROR(CudaCall(cudaDeviceGetAttribute(&d->multiprocessors_, cudaDevAttrMultiProcessorCount,
                                                    ordinal),
                             "cudaDeviceGetAttribute(multiprocessors)"));
    return d;
  }

  ~CudaDevice() override {
    cudaSetDevice(ordinal_);
    if (stream_ != nullptr) {
      for (const auto& [address, size] : live_.blocks()) {
        (void)size;
        cudaFreeAsync(reinterpret_cast<void*>(address), stream_);
      }
      cudaStreamSynchronize(stream_);
      cudaStreamDestroy(stream_);
    }
    if (side_stream_ != nullptr) cudaStreamDestroy(side_stream_);
    if (staging_ != nullptr) cudaFreeHost(staging_);
    if (error_host_ != nullptr) cudaFreeHost(error_host_);
  }

  DeviceKind kind() const override { return DeviceKind::kCuda; }
  void* native_queue() const override { return stream_; }
  // A device-to-device memcpy on the stream (CUPTI records it): counted as one, like sim's.
  absl::Status KernelCopy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) {
      RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
                               "cudaMemcpyAsync (device to device, inside a kernel)"));
    }
    return Count(&DeviceCounters::d2d_calls, &DeviceCounters::d2d_bytes, bytes, &DeviceCounters::d2d_empty);
  }
  uint32_t* error_word() const { return error_device_; }
  int multiprocessors() const { return multiprocessors_; }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    void* p = nullptr;
    // A 0-byte request still gets a unique pointer (device.h).
    const size_t request = bytes == 0 ? 64 : bytes;
    // Allocated under the lock, so the memory limit's check and the allocation are one step.
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(CheckMemoryLimit(request, bytes));
    // While capturing, an allocation on the captured stream would become a graph node: the
    // side stream allocates, and the host waits for it so the block is usable at once.
    cudaStream_t on = capturing_ ? side_stream_ : stream_;
    cudaError_t e = cudaMallocAsync(&p, request, on);
    if (e == cudaSuccess && capturing_) e = cudaStreamSynchronize(side_stream_);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear the (non-sticky) error
      size_t free_bytes = 0, total = 0;
      cudaMemGetInfo(&free_bytes, &total);
      const std::string what = absl::StrCat("cudaMallocAsync of ", bytes, " bytes (", free_bytes,
                                            " of ", total, " bytes free on the GPU)");
      return CudaCall(e, what);
    }
    live_.Allocated(p, request, bytes, counters_);
    return p;
  }

  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!live_.Freed(ptr, counters_)) return;
    }
    // Stream-ordered: the memory returns to the pool after the work queued before it. Not
    // while capturing, where the free would become a node of the graph: the VM holds its pools'
    // frees during a graph's stretch (PoolingAllocator::Hold), so only a library's own free
    // gets here, and goes through the side stream.
    if (capturing_) {
      cudaFreeAsync(ptr, side_stream_);
      return;
    }
    cudaFreeAsync(ptr, stream_);
  }

  bool Owns(const void* ptr) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.Contains(ptr);
  }

  absl::Status CopyHostToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return Count(&DeviceCounters::h2d_calls, &DeviceCounters::h2d_bytes, 0, &DeviceCounters::h2d_empty);
    RETURN_IF_ERROR(CheckDevice("h2d", "destination", device_dst, bytes));
    RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
                             "cudaMemcpyAsync(host to device)"));
    return Count(&DeviceCounters::h2d_calls, &DeviceCounters::h2d_bytes, bytes, &DeviceCounters::h2d_empty);
  }

  absl::Status CopyDeviceToHost(void* host_dst, const void* device_src, size_t bytes) override {
    if (bytes > 0) RETURN_IF_ERROR(CheckDevice("d2h", "source", device_src, bytes));
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.d2h_calls;
      counters_.d2h_bytes += static_cast<int64_t>(bytes);
      if (bytes == 0) ++counters_.d2h_empty;
      // The sync is counted by the Synchronize() that follows (device.h): the wait below is
      // the one that Synchronize() then finds already done.
    }
    if (bytes > 0 && bytes <= kStagingBytes) {
      std::lock_guard<std::mutex> staging(staging_mu_);
      RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(staging_, device_src, bytes, cudaMemcpyDeviceToHost, stream_),
                               "cudaMemcpyAsync(device to host, staged)"));
      RETURN_IF_ERROR(WaitAndCheck("cudaStreamSynchronize(after a device-to-host copy)"));
      std::memcpy(host_dst, staging_, bytes);
      return absl::OkStatus();
    }
    if (bytes > 0) {
      RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_),
                               "cudaMemcpyAsync(device to host)"));
    }
    return WaitAndCheck("cudaStreamSynchronize(after a device-to-host copy)");
  }

  absl::Status CopyDeviceToDevice(void* device_dst, const void* device_src, size_t bytes) override {
    if (bytes > 0) {
      RETURN_IF_ERROR(CheckDevice("d2d", "destination", device_dst, bytes));
      RETURN_IF_ERROR(CheckDevice("d2d", "source", device_src, bytes));
      RETURN_IF_ERROR(CudaCall(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, stream_),
                               "cudaMemcpyAsync(device to device)"));
    }
    return Count(&DeviceCounters::d2d_calls, &DeviceCounters::d2d_bytes, bytes, &DeviceCounters::d2d_empty);
  }

  absl::Status Synchronize() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.syncs;
    }
    return WaitAndCheck("cudaStreamSynchronize");
  }

  // The kernel closure enqueues its work on the stream (KernelContext::queue); by-value
  // arguments stay on the host, where the closure reads them into the launch's parameters.
  absl::Status Launch(absl::Span<LaunchArg> args, absl::FunctionRef<absl::Status()> kernel) override {
    size_t param_bytes = 0;
    int64_t params = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      if (a.by_value) {
        param_bytes += a.bytes;
        ++params;
        continue;
      }
      if (a.bytes == 0) continue;
      RETURN_IF_ERROR(CheckDevice("launch", absl::StrCat("argument ", i), a.data, a.bytes));
    }
    if (param_bytes > kMaxKernelParamBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cuda launch: ", params, " by-value arguments take ", param_bytes,
          " bytes of kernel parameters; a launch passes at most ", kMaxKernelParamBytes));
    }
    absl::Status status = kernel();
    if (capturing_) return status;  // counted when the graph launches
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.launches;
      counters_.param_calls += params;
      counters_.param_bytes += static_cast<int64_t>(param_bytes);
    }
    return status;
  }

  class CudaGraph final : public DeviceGraph {
   public:
    ~CudaGraph() override {
      if (exec != nullptr) cudaGraphExecDestroy(exec);
      if (done != nullptr) cudaEventDestroy(done);
    }
    int64_t nodes() const override { return count; }
    cudaGraphExec_t exec = nullptr;
    cudaEvent_t done = nullptr;  // recorded after each launch (WaitGraph)
    bool launched = false;
    int64_t count = 0;
    int64_t param_calls = 0, param_bytes = 0;
    DeviceCounters copies;  // kernels' device-to-device copies, per launch
  };

  absl::StatusOr<std::unique_ptr<DeviceGraph>> CaptureGraph(std::vector<GraphNode> nodes) override {
    auto graph = std::make_unique<CudaGraph>();
    for (const GraphNode& n : nodes) graph->count += n.kind == GraphNode::Kind::kKernel;
    RETURN_IF_ERROR(CudaCall(cudaEventCreateWithFlags(&graph->done, cudaEventDisableTiming),
                             "cudaEventCreateWithFlags(graph)"));
    for (const GraphNode& n : nodes) {
      for (const LaunchArg& a : n.args) {
        if (!a.by_value) continue;
        ++graph->param_calls;
        graph->param_bytes += static_cast<int64_t>(a.bytes);
      }
    }
    RETURN_IF_ERROR(CudaCall(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed),
                             "cudaStreamBeginCapture"));
    capturing_ = true;
    capture_copies_ = DeviceCounters();
    absl::Status status;
    for (size_t i = 0; i < nodes.size() && status.ok(); ++i) {
      status = LaunchNode(nodes[i]);  // its errors start with the node's label
      if (!status.ok()) {
        status = absl::FailedPreconditionError(absl::StrCat("graph node ", i, " did not capture: ", status.message()));
      }
    }
    capturing_ = false;
    graph->copies = capture_copies_;
    cudaGraph_t captured = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
    if (status.ok() && ended != cudaSuccess) {
      status = absl::FailedPreconditionError(
          absl::StrCat("cudaStreamEndCapture failed with ", CudaErrorText(ended)));
    }
    if (status.ok()) {
      const cudaError_t made = cudaGraphInstantiate(&graph->exec, captured, 0);
      if (made != cudaSuccess) {
        status = absl::FailedPreconditionError(
            absl::StrCat("cudaGraphInstantiate failed with ", CudaErrorText(made)));
      }
    }
    if (captured != nullptr) cudaGraphDestroy(captured);
    if (!status.ok()) {
      cudaGetLastError();  // capture errors are not sticky; the stream is usable again
      return status;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.graph_captures;
    return std::unique_ptr<DeviceGraph>(std::move(graph));
  }

  absl::Status LaunchGraph(DeviceGraph& graph) override {
    auto* g = dynamic_cast<CudaGraph*>(&graph);
    if (g == nullptr) return absl::InvalidArgumentError("cuda: a graph captured by another device");
    RETURN_IF_ERROR(CudaCall(cudaGraphLaunch(g->exec, stream_), "cudaGraphLaunch"));
    RETURN_IF_ERROR(CudaCall(cudaEventRecord(g->done, stream_), "cudaEventRecord(graph)"));
    g->launched = true;
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.graph_launches;
    counters_.launches += g->count;
    counters_.graph_kernels += g->count;
    counters_.param_calls += g->param_calls;
    counters_.param_bytes += g->param_bytes;
    counters_ += g->copies;  // the copies the graph makes, as the capture counted them
    return absl::OkStatus();
  }

  absl::Status WaitGraph(DeviceGraph& graph) override {
    auto* g = dynamic_cast<CudaGraph*>(&graph);
    if (g == nullptr || !g->launched) return absl::OkStatus();
    return CudaCall(cudaEventSynchronize(g->done), "cudaEventSynchronize(graph)");
  }

  absl::StatusOr<std::shared_ptr<void>> AllocateStaging(size_t bytes) override {
    void* p = nullptr;
    RETURN_IF_ERROR(CudaCall(cudaMallocHost(&p, std::max<size_t>(bytes, 1)), "cudaMallocHost(graph staging)"));
    return std::shared_ptr<void>(p, [](void* q) { cudaFreeHost(q); });
  }

 private:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {}

  // Counts a copy; while capturing, into the graph, which counts it at each of its launches.
  absl::Status Count(int64_t DeviceCounters::*calls, int64_t DeviceCounters::*total, size_t bytes,
                     int64_t DeviceCounters::*empty) {
    if (capturing_) {
      ++(capture_copies_.*calls);
      capture_copies_.*total += static_cast<int64_t>(bytes);
      if (bytes == 0) ++(capture_copies_.*empty);
      return absl::OkStatus();
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++(counters_.*calls);
    counters_.*total += static_cast<int64_t>(bytes);
    if (bytes == 0) ++(counters_.*empty);
    return absl::OkStatus();
  }

  absl::Status CheckDevice(absl::string_view direction, absl::string_view what, const void* ptr,
                           size_t bytes) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_.Contains(ptr, bytes)) return absl::OkStatus();
    if (live_.Contains(ptr)) {
      return absl::InvalidArgumentError(absl::StrCat("cuda ", direction, ": ", what, " range of ", bytes,
                                                     " bytes overruns its device allocation"));
    }
    return absl::InvalidArgumentError(absl::StrCat("cuda ", direction, ": ", what, " (", bytes,
                                                   " bytes) is not live memory of this device"));
  }

  // Waits for the stream, then reads and clears the error word.
  absl::Status WaitAndCheck(absl::string_view call) {
    RETURN_IF_ERROR(CudaCall(cudaStreamSynchronize(stream_), call));
    const uint32_t flags = *static_cast<volatile uint32_t*>(error_host_);
    if (flags == 0) return absl::OkStatus();
    *static_cast<volatile uint32_t*>(error_host_) = 0;
    static constexpr std::pair<uint32_t, const char*> kFlags[] = {
        {cuda_api::kErrorDivisionByZero, "integer division by zero"},
        {cuda_api::kErrorIndexOutOfRange, "take: index out of range"},
        {cuda_api::kErrorNmsIouThreshold, "non_max_suppression: iou_threshold outside [0, 1]"},
        {cuda_api::kErrorCountChanged,
         "argwhere / non_max_suppression: the rows differ from the shape counter's count (the input changed "
         "between the two launches)"},
        {cuda_api::kErrorRoiBatchIndex, "roi_align: a batch index is outside the batch of the data"},
    };
    std::vector<std::string> what;
    uint32_t known = 0;
    for (const auto& [bit, message] : kFlags) {
      known |= bit;
      if (flags & bit) what.push_back(message);
    }
    if (flags & ~known) what.push_back(absl::StrCat("unknown error flags 0x", absl::Hex(flags & ~known)));
    return absl::InvalidArgumentError(absl::StrCat(
        "cuda: a kernel since the last synchronisation reported ", absl::StrJoin(what, " and ")));
  }

  const int ordinal_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t side_stream_ = nullptr;  // raw allocations while the stream is captured
  // CaptureGraph in progress (one VM thread uses a device at a time while capturing), and the
  // device-to-device copies kernels issued into the graph.
  bool capturing_ = false;
  DeviceCounters capture_copies_;
  void* staging_ = nullptr;
  uint32_t* error_host_ = nullptr;
  uint32_t* error_device_ = nullptr;
  int multiprocessors_ = 0;
  mutable std::mutex mu_;
  std::mutex staging_mu_;
  LiveBlocks live_;
};

}  // namespace

absl::Status ProbeCuda() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    return absl::FailedPreconditionError(
        absl::StrCat("cuda: no usable GPU: cudaGetDeviceCount failed with ", CudaErrorText(e)));
  }
  if (count == 0) {
    return absl::FailedPreconditionError("cuda: no usable GPU: cudaGetDeviceCount found no device");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Device>> MakeCudaDevice() {
  RETURN_IF_ERROR(ProbeCuda());
  ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> d, CudaDevice::Create(0));
  return std::unique_ptr<Device>(std::move(d));
}

std::string CudaDescription() {
  int driver = 0, runtime = 0, count = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    return absl::StrCat("no GPU (driver ", driver, ", runtime ", runtime, ")");
  }
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return "GPU 0: properties unavailable";
  return absl::StrCat(prop.name, ", sm_", prop.major, prop.minor, ", ", prop.multiProcessorCount,
                      " SMs, ", prop.totalGlobalMem >> 20, " MiB, driver ", driver, ", runtime ", runtime);
}

namespace cuda_api {

absl::StatusOr<std::unique_ptr<PtxModule>> PtxModule::Load(const std::string& ptx, absl::string_view what) {
  char log[8192] = {0};
  cudaJitOption options[] = {cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(log)))};
  cudaLibrary_t library = nullptr;
  const cudaError_t e = cudaLibraryLoadData(&library, ptx.c_str(), options, values, 2, nullptr, nullptr, 0);
  if (e != cudaSuccess) {
    return absl::InternalError(absl::StrCat("cuda: loading the PTX of ", what, " failed with ",
                                            CudaErrorText(e), log[0] ? absl::StrCat("; JIT log: ", log) : ""));
  }
  auto m = std::unique_ptr<PtxModule>(new PtxModule());
  m->library_ = library;
  m->what_ = std::string(what);
  return m;
}

PtxModule::~PtxModule() {
  if (library_ != nullptr) cudaLibraryUnload(static_cast<cudaLibrary_t>(library_));
}

absl::StatusOr<const void*> PtxModule::Kernel(const std::string& name) const {
  cudaKernel_t kernel = nullptr;
  RETURN_IF_ERROR(CudaCall(cudaLibraryGetKernel(&kernel, static_cast<cudaLibrary_t>(library_), name.c_str()),
                           absl::StrCat("cudaLibraryGetKernel(", name, ") in the PTX of ", what_)));
  // With lazy loading (CUDA's default) the driver compiles a kernel at its first use: ask for
  // its attributes now, so a PTX the driver rejects fails here, at load, naming the module,
  // rather than at some launch.
  cudaFuncAttributes attributes;
  RETURN_IF_ERROR(CudaCall(cudaFuncGetAttributes(&attributes, static_cast<const void*>(kernel)),
                           absl::StrCat("compiling kernel ", name, " of the PTX of ", what_)));
  return static_cast<const void*>(kernel);
}

absl::Status Launch(const void* kernel, void* stream, uint32_t grid, uint32_t block, void** params,
                    absl::string_view what) {
  return CudaCall(cudaLaunchKernel(kernel, dim3(grid), dim3(block), params, 0, static_cast<cudaStream_t>(stream)),
                  absl::StrCat("cudaLaunchKernel(", what, ")"));
}

absl::Status ZeroAsync(void* ptr, size_t bytes, void* stream) {
  if (bytes == 0) return absl::OkStatus();
  return CudaCall(cudaMemsetAsync(ptr, 0, bytes, static_cast<cudaStream_t>(stream)), "cudaMemsetAsync");
}

absl::StatusOr<uint32_t*> RequireCudaDevice(Device* device, absl::string_view who) {
  uint32_t* word = ErrorWord(device);
  if (word != nullptr) return word;
  return absl::InvalidArgumentError(absl::StrCat(who, " runs on the cuda device, not on ",
                                                 device == nullptr ? std::string("no device") : device->name()));
}

uint32_t* ErrorWord(Device* device) {
  auto* d = dynamic_cast<CudaDevice*>(device);
  return d == nullptr ? nullptr : d->error_word();
}

int MultiprocessorCount(Device* device) {
  auto* d = dynamic_cast<CudaDevice*>(device);
  return d == nullptr ? 0 : d->multiprocessors();
}

}  // namespace cuda_api
}  // namespace hetpass::runtime
