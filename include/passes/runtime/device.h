// Devices of the runtime: where buffers live and kernels run.
//
// A Device owns raw memory (Allocate/Free), moves bytes in each direction, synchronises, and
// runs kernels (Launch). Every transfer, synchronisation, launch and raw allocation is counted,
// so tests can assert that the copies the IR promises (the copy ledger) are the copies made.
//
//   cpu  host memory; copies never involve it as a "device" (a cpu->cpu copy is a plain memcpy
//        and is not a transfer).
//   sim  an accelerator simulated in host memory: its own arena (mmap), which only this API may
//        touch. With guard pages on (the default in tests), the arena is mprotect'ed PROT_NONE
//        whenever the host runs, and opened only inside Copy* and Launch: a host read of sim
//        memory outside the API faults immediately (SIGSEGV) instead of silently working.
//
// Synchronisation model (the copy ledger's): copies in every direction are queued on the
// device; the host waits for the device only in Synchronize(), and each Synchronize() is one
// counted sync, where the host waits. A device-to-host copy's destination may be read only after
// the next Synchronize() of its device: the VM synchronises after each one today (one sync per
// device-to-host copy, as the ledger promises), so that a change that batches several reads
// behind one wait shows as fewer syncs. (cuda's CopyDeviceToHost still waits for its stream
// inside, as a pageable or staged destination needs; that wait is the one its Synchronize()
// then counts, with nothing left to wait for.)
#ifndef HETPASS_RUNTIME_DEVICE_H_
#define HETPASS_RUNTIME_DEVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "passes/ir/ir.h"

namespace hetpass::runtime {

struct DeviceCounters {
  int64_t h2d_calls = 0;
  int64_t h2d_bytes = 0;
  int64_t d2h_calls = 0;
  int64_t d2h_bytes = 0;
  int64_t d2d_calls = 0;
  int64_t d2d_bytes = 0;
  // Copies of zero bytes among the calls above, by direction (an empty detection list, say):
  // the ledger promises them and they count as calls, but no device API call is made, so a
  // driver-level trace (CUPTI) records none of them.
  int64_t h2d_empty = 0;
  int64_t d2h_empty = 0;
  int64_t d2d_empty = 0;
  // Host data handed to kernels by value (LaunchArg::by_value): kernel parameters, not copies.
  int64_t param_calls = 0;
  int64_t param_bytes = 0;
  int64_t syncs = 0;
  int64_t allocs = 0;  // raw device allocations (a pooling allocator's misses)
  int64_t alloc_bytes = 0;
  int64_t frees = 0;
  // Kernels run: launched one by one or as nodes of a graph launch.
  int64_t launches = 0;
  // Device graphs (Device::CaptureGraph; CUDA graphs on cuda): graphs captured, graph launches,
  // and the kernels those launches ran (also counted in `launches`, so `launches -
  // graph_kernels` are the launches the host made one by one).
  int64_t graph_captures = 0;
  int64_t graph_launches = 0;
  int64_t graph_kernels = 0;
  // Free() of a pointer the device did not hand out, or freed twice: ignored (Free cannot fail),
  // but counted so tests can assert there were none. ToString shows it only when non-zero.
  int64_t bad_frees = 0;
  // Device memory held: bytes of raw allocations not yet freed (what the device's allocator
  // took from the device, blocks cached by a pooling allocator included), now and at its
  // highest since the last reset. Not counters: ResetCounters keeps held_bytes and starts
  // peak_held_bytes at it, so the peak of a run covers everything held while it ran. Summed
  // over devices (operator+=), the peaks add up to a bound, not a simultaneous peak.
  int64_t held_bytes = 0;
  int64_t peak_held_bytes = 0;

  // Records a raw allocation (delta > 0) or free (delta < 0) of device memory.
  void NoteHeld(int64_t delta) {
    held_bytes += delta;
    if (held_bytes > peak_held_bytes) peak_held_bytes = held_bytes;
  }

  DeviceCounters& operator+=(const DeviceCounters& o);
  // "h2d 1 (4096 B), d2h 0 (0 B), d2d 0 (0 B), syncs 0, allocs 0, launches 3" (params
  // appear when there were any)
  std::string ToString() const;
};

// Every field of DeviceCounters by name, in declaration order. operator+=, `hetpass run`'s JSON
// and the Python bindings iterate it, so a new counter is declared in the struct and named here,
// nowhere else (the static_assert below fails when a field is missing here).
struct DeviceCounterField {
  const char* name;
  int64_t DeviceCounters::*member;
};
inline constexpr DeviceCounterField kDeviceCounterFields[] = {
    {"h2d_calls", &DeviceCounters::h2d_calls},
    {"h2d_bytes", &DeviceCounters::h2d_bytes},
    {"d2h_calls", &DeviceCounters::d2h_calls},
    {"d2h_bytes", &DeviceCounters::d2h_bytes},
    {"d2d_calls", &DeviceCounters::d2d_calls},
    {"d2d_bytes", &DeviceCounters::d2d_bytes},
    {"h2d_empty", &DeviceCounters::h2d_empty},
    {"d2h_empty", &DeviceCounters::d2h_empty},
    {"d2d_empty", &DeviceCounters::d2d_empty},
    {"param_calls", &DeviceCounters::param_calls},
    {"param_bytes", &DeviceCounters::param_bytes},
    {"syncs", &DeviceCounters::syncs},
    {"allocs", &DeviceCounters::allocs},
    {"alloc_bytes", &DeviceCounters::alloc_bytes},
    {"frees", &DeviceCounters::frees},
    {"launches", &DeviceCounters::launches},
    {"graph_captures", &DeviceCounters::graph_captures},
    {"graph_launches", &DeviceCounters::graph_launches},
    {"graph_kernels", &DeviceCounters::graph_kernels},
    {"bad_frees", &DeviceCounters::bad_frees},
    {"held_bytes", &DeviceCounters::held_bytes},
    {"peak_held_bytes", &DeviceCounters::peak_held_bytes},
};
static_assert(sizeof(DeviceCounters) ==
                  sizeof(kDeviceCounterFields) / sizeof(DeviceCounterField) * sizeof(int64_t),
              "a DeviceCounters field is missing from kDeviceCounterFields");

// One buffer a kernel launch hands its kernel.
struct LaunchArg {
  void* data = nullptr;
  size_t bytes = 0;
  // Host data the kernel reads by value, as a CUDA kernel reads its parameters; counted
  // (param_calls, param_bytes), at most kMaxKernelParamBytes per launch in all. sim copies it
  // into a parameter block in its arena and replaces `data` with that copy, so the kernel never
  // dereferences a host pointer; cuda leaves `data` on the host, where the kernel's host half
  // reads it into the launch's parameters (cudaLaunchKernel copies them).
  bool by_value = false;
};
// One kernel launch a device graph holds (Device::CaptureGraph): what Launch takes, owned, so
// the launch can be replayed after the VM's registers have moved on.
struct GraphNode {
  // A kernel launch, or a copy the graph makes: `bytes` from `src` to `dst` on the device, where
  // a host-to-device copy's `src` is host staging memory the graph's owner keeps and refills
  // before each launch of the graph (Device::AllocateStaging, WaitGraph).
  enum class Kind : uint8_t { kKernel, kCopyHostToDevice, kCopyDeviceToDevice };
  Kind kind = Kind::kKernel;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  // As Launch's args, except that a by-value arg's bytes live in `values` (in argument order,
  // each at the next offset) and its `data` is ignored.
  std::vector<LaunchArg> args;
  std::vector<char> values;
  // Runs the kernel with the args as the device staged them (by-value data where the kernel
  // reads it), as Launch's closure does.
  std::function<absl::Status(absl::Span<const LaunchArg>)> kernel;
  // Where the launch comes from ("@main pc 17 (invoke_kernel ...)"): errors of the node, when
  // its graph launches or captures it, start with it.
  std::string label;
  // Launch's args for this node: by-value data pointing into `values`.
  std::vector<LaunchArg> Args() const;
};

// `status` with the node's label in front (OK stays OK).
absl::Status NodeError(const GraphNode& node, absl::Status status);

// A captured graph (Device::CaptureGraph): owned by whoever captured it, launched any number of
// times on the device that made it.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual int64_t nodes() const = 0;
};

// A CUDA launch passes at most 4 KiB of kernel parameters (before Hopper's 32 KiB extension):
// the limit every accelerator device here enforces, so what runs on sim fits a real GPU.
inline constexpr size_t kMaxKernelParamBytes = 4096;

// Thread safety: every method may be called from several threads at once (each device guards
// its allocator and counters with a mutex). counters() returns the live struct: read it when no
// other thread is using the device.
class Device {
 public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  std::string name() const;  // "cpu", "sim"

  // Raw device memory, 64-byte aligned; bytes == 0 gives a valid unique pointer. Errors on
  // exhaustion (the sim arena has a fixed capacity) name the device and the size.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;

  virtual absl::Status CopyHostToDevice(void* device_dst, const void* host_src,
                                        size_t bytes) = 0;
  virtual absl::Status CopyDeviceToHost(void* host_dst, const void* device_src,
                                        size_t bytes) = 0;
  virtual absl::Status CopyDeviceToDevice(void* device_dst, const void* device_src,
                                          size_t bytes) = 0;
  virtual absl::Status Synchronize() = 0;

  // Runs `kernel` on the device with the buffers in `args`. By-value args are staged first
  // (LaunchArg); an accelerator checks that every other arg lies in its own memory, so a kernel
  // touches no host memory: host data reaches it as a counted copy or a counted parameter. For
  // sim the device arena is accessible only while the kernel runs.
  virtual absl::Status Launch(absl::Span<LaunchArg> args,
                              absl::FunctionRef<absl::Status()> kernel) = 0;
  // A launch whose kernel reads only device memory it already knows (tests, the VM's stacking
  // of loop scan outputs).
  absl::Status Launch(absl::FunctionRef<absl::Status()> kernel) { return Launch({}, kernel); }

  // Inside a launch's kernel: copies `bytes` between two buffers of this device's memory,
  // ordered on its queue. cuda: an asynchronous device-to-device memcpy on its stream (CUPTI
  // records it), so it is counted as a d2d copy (d2d_calls, d2d_bytes), and sim counts it the
  // same way; cpu: a memcpy in host memory, not counted. The VM stacks loop scan outputs with
  // it, one copy per iteration, and the copy ledger lists them (copy_ledger.cc).
  virtual absl::Status KernelCopy(void* dst, const void* src, size_t bytes);

  // Device graphs (docs/runtime.md, "Device graphs"): `nodes` captured into one graph that
  // LaunchGraph runs as a single launch, in node order, without the kernels' host halves (cuda:
  // a CUDA graph from stream capture; sim: the nodes kept and run in order, checked as Launch
  // checks them). Capturing runs no kernel. Each node's args are checked as Launch checks them.
  // Errors: Unimplemented on a device without graphs (cpu); FailedPrecondition naming what
  // refused the capture (a library call that cannot be captured, say): the caller then runs the
  // nodes one by one (LaunchNode). Counts graph_captures; LaunchGraph counts graph_launches,
  // and every node as a launch (launches, graph_kernels, by-value params) as Launch would.
  virtual absl::StatusOr<std::unique_ptr<DeviceGraph>> CaptureGraph(std::vector<GraphNode> nodes);
  virtual absl::Status LaunchGraph(DeviceGraph& graph);
  // One node as an ordinary Launch (or copy).
  absl::Status LaunchNode(const GraphNode& node);
  // Host memory a graph's host-to-device copy nodes read (pinned on cuda, so the copy can be
  // captured); freed when the last reference goes.
  virtual absl::StatusOr<std::shared_ptr<void>> AllocateStaging(size_t bytes);
  // Before refilling a graph's staging: waits until the graph's last launch has read it (cuda:
  // its completion event; usually already passed, as a host wait came between). Not a counted
  // sync: the ledger's syncs are the program's waits, and this one is the staging's.
  virtual absl::Status WaitGraph(DeviceGraph& graph) { return absl::OkStatus(); }

  // True when `ptr` points into this device's memory (sim: inside the arena).
  virtual bool Owns(const void* ptr) const = 0;

  // The queue launches and copies are ordered on (a cudaStream_t for cuda), handed to kernels
  // through their KernelContext; nullptr where launches run inline on the calling thread.
  virtual void* native_queue() const { return nullptr; }

  // A cap on the device memory held (raw allocations not yet freed; pools' cached blocks
  // included): an allocation that would take it over the limit fails with ResourceExhausted
  // naming the request, the bytes available under the limit and those held. 0: none (the
  // device's own capacity only). A pooling allocator answers it by trimming its cache and
  // retrying once. Set it before the device is shared between threads.
  void SetMemoryLimit(int64_t bytes) { memory_limit_ = bytes; }
  int64_t memory_limit() const { return memory_limit_; }

  const DeviceCounters& counters() const { return counters_; }
  // Zeroes the counters; the memory held stays (and starts the new peak).
  void ResetCounters() {
    const int64_t held = counters_.held_bytes;
    counters_ = DeviceCounters();
    counters_.held_bytes = held;
    counters_.peak_held_bytes = held;
  }

 protected:
  // OK when `rounded` more bytes stay within the memory limit; else the ResourceExhausted above
  // (`requested`: the caller's size). Call with the device's lock held.
  absl::Status CheckMemoryLimit(size_t rounded, size_t requested) const;

  DeviceCounters counters_;
  int64_t memory_limit_ = 0;
};

struct SimDeviceOptions {
  size_t arena_bytes = size_t{1} << 30;  // reserved address space (committed lazily)
  // mprotect the arena while the host runs. On by default; benchmarks may turn it off.
  bool guard = true;
};

// Test-only fault injection on a sim device (docs/runtime.md, "Faults"): from now, the k-th
// operation of `site` (1-based) fails with Unavailable "sim: injected fault: copy #k (n bytes)
// failed" before doing anything; k == 0 disarms. One-shot. InvalidArgument for another device.
enum class FaultSite : uint8_t { kAlloc, kCopy, kLaunch };
absl::Status InjectSimFault(Device* device, FaultSite site, int64_t k);
// Whether the fault armed for `site` has yet to fire (false for another device).
bool SimFaultPending(const Device* device, FaultSite site);

std::unique_ptr<Device> MakeCpuDevice();
absl::StatusOr<std::unique_ptr<Device>> MakeSimDevice(SimDeviceOptions options = {});
// The device for an IR device kind: cpu, sim, or cuda (GPU 0). cuda: FailedPrecondition naming
// the CUDA error where no GPU is usable (no driver, no device); Unimplemented in a build without
// the CUDA device (HETPASS_CUDA=OFF). docs/cuda.md describes the cuda device.
absl::StatusOr<std::unique_ptr<Device>> MakeDevice(DeviceKind kind);
// Whether this build has the cuda device (cmake/cuda.cmake).
bool BuiltWithCuda();

// CUPTI's records of the CUDA memcpys and kernels between Start and Stop (the driver's view of
// a GPU run, independent of the devices' counters; tools/gpu/run_cuda.sh reports both). One
// trace at a time per process. Errors: Unimplemented without the cuda device in the build;
// FailedPrecondition without CUPTI (named with every place tried) or without a GPU.
struct CuptiKernelTime {
  std::string name;  // as CUPTI names it (mangled for library kernels)
  int64_t calls = 0;
  int64_t ns = 0;  // GPU time, end - start summed over the calls
};
struct CuptiTrace {
  // Memcpy calls by direction; "other": arrays, peer, host-to-host.
  int64_t h2d = 0, d2h = 0, d2d = 0, other = 0;
  // The bytes those records moved (CUPTI's `bytes`), by the same directions.
  int64_t h2d_bytes = 0, d2h_bytes = 0, d2d_bytes = 0, other_bytes = 0;
  // Kernels: how many ran, their GPU time summed, the memcpys' GPU time summed, and the span
  // from the first record's start to the last one's end (GPU busy time / span says whether the
  // device or the host bounds a run). Kernel records are asked for separately: where CUPTI
  // refuses them, kernel_error says why and the memcpy counts still hold.
  int64_t kernels = 0, kernel_ns = 0, memcpy_ns = 0, span_ns = 0;
  std::string kernel_error;
  // The kernels by GPU time, longest first (at most kTopKernels).
  static constexpr int kTopKernels = 8;
  std::vector<CuptiKernelTime> top_kernels;
};
absl::Status StartCuptiTrace();
// Call after the traced work has completed (a synchronisation).
absl::StatusOr<CuptiTrace> StopCuptiTrace();
// One line about the GPU for reports: "NVIDIA H200, sm_90, 132 SMs, 143771 MiB, driver 13000,
// runtime 13000", or why there is none.
std::string DescribeCuda();

// Caches freed device blocks and hands them out again (best fit among free blocks of at least
// the requested size), so an inference whose shapes are the same as or smaller than an earlier
// one makes zero raw device allocations.
class PoolingAllocator {
 public:
  explicit PoolingAllocator(Device* device);
  ~PoolingAllocator();  // returns every cached block to the device
  PoolingAllocator(const PoolingAllocator&) = delete;
  PoolingAllocator& operator=(const PoolingAllocator&) = delete;

  struct Block {
    void* ptr = nullptr;
    size_t capacity = 0;
  };
  absl::StatusOr<Block> Allocate(size_t bytes);
  void Release(Block block);
  // Frees every cached (not in-use) block.
  void Trim();
  // Trim, and frees the run-time plan's arena too when none of its blocks is in use: the pool
  // then holds only its blocks in use; a run in progress stops replaying, the next plans afresh.
  void Shrink();

  // Run-time memory plan (pooling_allocator.cc explains it): between BeginRun and EndRun the
  // pool records each request's size and lifetime; EndRun packs the requests released within
  // the run into one arena (offsets by greedy size-first placement) and trims the cache; the
  // next run whose requests come in the same sizes and order is served from that arena.
  void BeginRun();
  void EndRun();
  size_t arena_bytes() const;

  struct State;  // opaque (pooling_allocator.cc)

  // Counts the times the pool gave memory back to its device (a trim, a shrink, a replaced
  // arena): a device graph that captured pointers into this pool's blocks (kernel workspace)
  // is valid only while the count has not moved.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }
  // While held, memory the pool would give back to its device is kept aside instead, and given
  // back at Hold(false): launches deferred into a device graph may still read blocks the host
  // has released.
  void Hold(bool on);

  Device* device() const { return device_; }
  int64_t blocks_in_use() const { return in_use_; }
  size_t cached_bytes() const;

 private:
  Device* device_;
  std::unique_ptr<State> state_;
  // Atomic so blocks_in_use() may be read while other threads allocate (it is updated under
  // the State's mutex).
  std::atomic<int64_t> in_use_{0};
  std::atomic<uint64_t> generation_{0};
  // Gives `ptr` back to the device, or keeps it aside while held (Hold).
  void FreeToDevice(void* ptr);
};

}  // namespace hetpass::runtime

#endif  // HETPASS_RUNTIME_DEVICE_H_
