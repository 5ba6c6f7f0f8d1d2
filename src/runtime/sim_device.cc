// The sim device: an accelerator simulated in host memory, so the whole heterogeneous runtime
// (placement, copies, the copy ledger's promises) can be tested on a machine without a GPU.
//
// Why it is more than "malloc with another name": a simulated device is only useful if host code
// *cannot* read device memory by accident, as it cannot on a real GPU. Otherwise a missing
// device_copy would go unnoticed in every test. So:
//
//   Arena   One region reserved with mmap(MAP_NORESERVE) of SimDeviceOptions::arena_bytes
//           (rounded up to whole pages for the mapping; the allocator uses arena_bytes rounded
//           down to 64). Pages are committed lazily by the kernel on first touch.
//   Guard   With options.guard (default), the arena is PROT_NONE whenever the host runs and is
//           opened (PROT_READ|PROT_WRITE) only for the duration of Copy* and Launch. Launch
//           opens the whole arena, reference-counted (depth counter under a mutex), so a Launch
//           inside a Launch, or a Copy issued by a kernel, keeps it open until the outermost
//           call returns. A Copy outside any Launch opens only the pages of its device range(s)
//           (mprotect cost grows with the populated pages it covers, so a small copy must not
//           pay for the whole arena). A stray host read of sim memory faults immediately
//           (SIGSEGV). Limitation: while one thread is inside Launch the arena is open for
//           every thread of the process (mprotect is process-wide; per-thread protection keys
//           would break kernels that use worker threads).
//   Alloc   Best-fit free list with coalescing. The bookkeeping (free blocks indexed by offset
//           and by size, live blocks by offset) lives in host containers OUTSIDE the arena, so
//           the host can allocate and free while the arena is protected, and a kernel that
//           overruns its buffer cannot corrupt the allocator. Every block is a multiple of 64
//           bytes at a 64-byte-aligned offset (the mapping is page-aligned); a 0-byte request
//           takes 64 bytes so it gets a unique pointer. Exhaustion is ResourceExhausted naming
//           "sim", the request and the arena's state.
//   Checks  Copy* verify that each device pointer lies in the arena and that [ptr, ptr+bytes)
//           fits inside one live allocation (this also catches use-after-free and overruns into
//           a neighbouring block), and that a host pointer is not sim memory. Errors are
//           InvalidArgument naming the direction, the arena offset and the size.
//   Launch  A kernel sees device memory only. Each non-by-value argument must lie inside one live
//           allocation (a host pointer, or a range overrunning its block, is an error naming the
//           argument); by-value arguments (host data the kernel reads: slice bounds, a target
//           shape) are copied into a parameter block taken from the arena for the launch, at
//           most kMaxKernelParamBytes in all, and the kernel gets that block's address: as on a
//           GPU, where such data travels in the launch's parameter space. The block is internal
//           (not an allocation in the counters) and freed when the kernel returns.
//   Graphs  CaptureGraph checks every node's arguments as Launch would and keeps the nodes;
//           LaunchGraph runs them in order, each checked and staged again as a launch (so a graph
//           whose pointers went stale fails as a stray launch does), counted as graph kernels.
//           The device side of a CUDA graph; what tests observe is the VM's side: which
//           stretches of work become graphs, and that replays compute what eager runs compute.
//   Counts  As device.h specifies: per-direction calls and bytes (a kernel's KernelCopy is a
//           d2d copy, as on cuda), params (calls and bytes), one sync per Synchronize (where
//           the host waits; a copy counts none), raw allocs/alloc_bytes/frees, launches,
//           bad_frees.
//   Faults  Test-only (InjectSimFault): the k-th allocation, copy (any direction, staging and
//           read-back included) or launch from the arming fails with Unavailable naming the
//           operation, before it does anything; one-shot.
//   Limit   Device::SetMemoryLimit: an allocation that would take the bytes held over the limit
//           is ResourceExhausted with the request and what is available.
// Thread safety: Allocate/Free/Owns/Copy*/Launch may be called from several threads. One mutex
// guards the allocator and the counters; another guards the guard depth. Neither is held while
// bytes are copied or a kernel runs (a kernel may call back into the device).
#include "passes/runtime/device.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"

namespace hetpass::runtime {
namespace {

constexpr size_t kAlignment = 64;
// Each by-value kernel argument starts at a multiple of this in the parameter block (the widest
// scalar a kernel reads).
constexpr size_t kParamAlignment = 16;

size_t RoundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Best-fit allocator over the offsets [0, capacity) of an arena it never touches.
class ArenaAllocator {
 public:
  explicit ArenaAllocator(size_t capacity) {
    if (capacity > 0) AddFree(0, capacity);
  }

  // `bytes` must already be a non-zero multiple of kAlignment.
  std::optional<size_t> Allocate(size_t bytes) {
    auto it = free_by_size_.lower_bound({bytes, 0});
    if (it == free_by_size_.end()) return std::nullopt;
    auto [size, offset] = *it;
    RemoveFree(offset, size);
    if (size > bytes) AddFree(offset + bytes, size - bytes);
    used_[offset] = bytes;
    return offset;
  }

  // The size of the block freed; nullopt when `offset` is not the start of a live block.
  std::optional<size_t> Free(size_t offset) {
    auto it = used_.find(offset);
    if (it == used_.end()) return std::nullopt;
    size_t size = it->second;
    const size_t freed = size;
    used_.erase(it);
    // Coalesce with the free neighbours on both sides.
    auto next = free_by_offset_.find(offset + size);
    if (next != free_by_offset_.end()) {
      size_t next_size = next->second;
      RemoveFree(offset + size, next_size);
      size += next_size;
    }
    auto prev = free_by_offset_.lower_bound(offset);
    if (prev != free_by_offset_.begin()) {
      --prev;
      if (prev->first + prev->second == offset) {
        size_t prev_offset = prev->first, prev_size = prev->second;
        RemoveFree(prev_offset, prev_size);
        offset = prev_offset;
        size += prev_size;
      }
    }
    AddFree(offset, size);
    return freed;
  }

  // True when [offset, offset + bytes) lies inside one live block.
  bool InLiveBlock(size_t offset, size_t bytes) const {
    auto it = used_.upper_bound(offset);
    if (it == used_.begin()) return false;
    --it;
    size_t end = it->first + it->second;
    return offset < end && bytes <= end - offset;
  }

  size_t free_bytes() const { return free_total_; }
  size_t largest_free() const { return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first; }

 private:
  void AddFree(size_t offset, size_t size) {
    free_by_offset_[offset] = size;
    free_by_size_.insert({size, offset});
    free_total_ += size;
  }
  void RemoveFree(size_t offset, size_t size) {
    free_by_offset_.erase(offset);
    free_by_size_.erase({size, offset});
    free_total_ -= size;
  }

  size_t free_total_ = 0;
  std::map<size_t, size_t> free_by_offset_;           // offset -> size
  std::set<std::pair<size_t, size_t>> free_by_size_;  // (size, offset): best fit, lowest offset
  std::map<size_t, size_t> used_;                     // offset -> size of live blocks
};

class SimDevice final : public Device {
 public:
  static absl::StatusOr<std::unique_ptr<SimDevice>> Create(const SimDeviceOptions& options) {
    size_t capacity = options.arena_bytes / kAlignment * kAlignment;
    if (capacity == 0) {
      return absl::InvalidArgumentError(absl::StrCat("sim: arena_bytes must be at least ",
                                                     kAlignment, ", got ", options.arena_bytes));
    }
    long page_size = sysconf(_SC_PAGESIZE);
    size_t page = page_size > 0 ? static_cast<size_t>(page_size) : 4096;
    size_t mapping_bytes = RoundUp(capacity, page);
    int prot = options.guard ? PROT_NONE : (PROT_READ | PROT_WRITE);
    void* base =
        mmap(nullptr, mapping_bytes, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "sim: cannot reserve an arena of ", mapping_bytes, " bytes: ", std::strerror(errno)));
    }
    // Transparent huge pages: mprotect's cost is per populated page-table entry, and Launch
    // re-protects the whole arena; 2 MiB pages make that ~500x cheaper (64 MiB touched: ~3 ms
    // with 4 KiB pages). Advisory: without THP the guard still works, only slower.
    (void)madvise(base, mapping_bytes, MADV_HUGEPAGE);
    return std::unique_ptr<SimDevice>(
        new SimDevice(static_cast<char*>(base), capacity, mapping_bytes, page, options.guard));
  }

  ~SimDevice() override { munmap(base_, mapping_bytes_); }

  DeviceKind kind() const override { return DeviceKind::kSim; }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    size_t rounded = bytes == 0 ? kAlignment : RoundUp(bytes, kAlignment);
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(Fault(FaultSite::kAlloc, bytes));
    RETURN_IF_ERROR(CheckMemoryLimit(rounded, bytes));
    std::optional<size_t> offset;
    if (bytes <= capacity_) offset = allocator_.Allocate(rounded);
    if (!offset.has_value()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("sim: out of device memory allocating ", bytes, " bytes (arena ", capacity_,
                       " bytes, ", allocator_.free_bytes(), " free, largest free block ",
                       allocator_.largest_free(), " bytes)"));
    }
    ++counters_.allocs;
    counters_.alloc_bytes += static_cast<int64_t>(bytes);
    counters_.NoteHeld(static_cast<int64_t>(rounded));
    return static_cast<void*>(base_ + *offset);
  }

  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<size_t> freed;
    if (Owns(ptr)) freed = allocator_.Free(Offset(ptr));
    if (!freed.has_value()) {
      ++counters_.bad_frees;
      return;
    }
    ++counters_.frees;
    counters_.NoteHeld(-static_cast<int64_t>(*freed));
  }

  absl::Status CopyHostToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    RETURN_IF_ERROR(LockedFault(FaultSite::kCopy, bytes));
    RETURN_IF_ERROR(CheckDevice("h2d", "destination", device_dst, bytes));
    RETURN_IF_ERROR(CheckHost("h2d", "source", host_src, bytes));
    RETURN_IF_ERROR(CopyOpen(device_dst, host_src, bytes, {device_dst}));
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.h2d_calls;
    counters_.h2d_bytes += static_cast<int64_t>(bytes);
    if (bytes == 0) ++counters_.h2d_empty;
    return absl::OkStatus();
  }

  absl::Status CopyDeviceToHost(void* host_dst, const void* device_src, size_t bytes) override {
    RETURN_IF_ERROR(LockedFault(FaultSite::kCopy, bytes));
    RETURN_IF_ERROR(CheckDevice("d2h", "source", device_src, bytes));
    RETURN_IF_ERROR(CheckHost("d2h", "destination", host_dst, bytes));
    RETURN_IF_ERROR(CopyOpen(host_dst, device_src, bytes, {device_src}));
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.d2h_calls;
    counters_.d2h_bytes += static_cast<int64_t>(bytes);
    if (bytes == 0) ++counters_.d2h_empty;
    return absl::OkStatus();  // the host's wait is Synchronize() (device.h)
  }

  absl::Status CopyDeviceToDevice(void* device_dst, const void* device_src, size_t bytes) override {
    RETURN_IF_ERROR(LockedFault(FaultSite::kCopy, bytes));
    RETURN_IF_ERROR(CheckDevice("d2d", "destination", device_dst, bytes));
    RETURN_IF_ERROR(CheckDevice("d2d", "source", device_src, bytes));
    RETURN_IF_ERROR(CopyOpen(device_dst, device_src, bytes, {device_dst, device_src}));
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.d2d_calls;
    counters_.d2d_bytes += static_cast<int64_t>(bytes);
    if (bytes == 0) ++counters_.d2d_empty;
    return absl::OkStatus();
  }

  absl::Status Synchronize() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.syncs;
    return absl::OkStatus();
  }

  // Inside a kernel (the arena is open): a device-to-device copy as cuda's cudaMemcpyAsync is,
  // counted like one, so sim's counts are cuda's (the VM stacks loop scan outputs with it).
  absl::Status KernelCopy(void* dst, const void* src, size_t bytes) override {
    if (bytes != 0) {  // an empty part is never dereferenced, wherever its pointer points
      RETURN_IF_ERROR(CheckDevice("kernel d2d", "destination", dst, bytes));
      RETURN_IF_ERROR(CheckDevice("kernel d2d", "source", src, bytes));
      std::memcpy(dst, src, bytes);
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.d2d_calls;
    counters_.d2d_bytes += static_cast<int64_t>(bytes);
    if (bytes == 0) ++counters_.d2d_empty;
    return absl::OkStatus();
  }

  absl::Status Launch(absl::Span<LaunchArg> args,
                      absl::FunctionRef<absl::Status()> kernel) override {
    return LaunchOne(args, kernel, /*in_graph=*/false);
  }

  // A sim graph keeps its nodes and runs them in order, each checked and staged as Launch
  // does, with the arena opened once for the whole graph: the device work of a CUDA graph,
  // while the VM's host side (what the graph saves) is what tests observe.
  class SimGraph final : public DeviceGraph {
   public:
    explicit SimGraph(std::vector<GraphNode> nodes) : nodes_(std::move(nodes)) {}
    int64_t nodes() const override { return static_cast<int64_t>(nodes_.size()); }
    const std::vector<GraphNode>& node_list() const { return nodes_; }

   private:
    std::vector<GraphNode> nodes_;
  };

  absl::StatusOr<std::unique_ptr<DeviceGraph>> CaptureGraph(std::vector<GraphNode> nodes) override {
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (nodes[n].kind != GraphNode::Kind::kKernel) continue;  // copies check their ranges as they run
      std::vector<LaunchArg> args = nodes[n].Args();
      absl::Status s = CheckLaunchArgs(args, nullptr);
      if (!s.ok()) {
        return NodeError(nodes[n], absl::Status(s.code(), absl::StrCat("graph node ", n, ": ", s.message())));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.graph_captures;
    return std::unique_ptr<DeviceGraph>(new SimGraph(std::move(nodes)));
  }

  absl::Status LaunchGraph(DeviceGraph& graph) override {
    auto* g = dynamic_cast<SimGraph*>(&graph);
    if (g == nullptr) return absl::InvalidArgumentError("sim: a graph captured by another device");
    RETURN_IF_ERROR(OpenArena());
    absl::Status status;
    for (const GraphNode& node : g->node_list()) {
      if (node.kind != GraphNode::Kind::kKernel) {  // a copy, counted as one
        status = LaunchNode(node);
        if (!status.ok()) break;
        continue;
      }
      std::vector<LaunchArg> args = node.Args();
      status = NodeError(node, LaunchOne(absl::MakeSpan(args), [&]() { return node.kernel(args); },
                                         /*in_graph=*/true));
      if (!status.ok()) break;
    }
    absl::Status closed = CloseArena();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.graph_launches;
    }
    if (!status.ok()) return status;
    return closed;
  }

 private:
  // Launch's checks: every by-value argument host memory, every other one live device memory,
  // the parameters within kMaxKernelParamBytes. `out`, when given: the parameter bytes as
  // staged (aligned) and how many by-value arguments there are.
  absl::Status CheckLaunchArgs(absl::Span<const LaunchArg> args, std::pair<size_t, int64_t>* out) {
    size_t param_bytes = 0;
    int64_t params = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      const LaunchArg& a = args[i];
      if (a.by_value) {
        RETURN_IF_ERROR(CheckHost("launch", absl::StrCat("by-value argument ", i).c_str(), a.data,
                                  a.bytes));
        param_bytes += RoundUp(a.bytes, kParamAlignment);
        ++params;
        continue;
      }
      if (a.bytes == 0) continue;  // never dereferenced
      if (!Owns(a.data)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "sim launch: argument ", i, " (", a.bytes,
            " bytes) is host memory: a kernel reads no host memory (small host data travels by "
            "value, the rest as a device_copy)"));
      }
      RETURN_IF_ERROR(CheckDevice("launch", absl::StrCat("argument ", i).c_str(), a.data, a.bytes));
    }
    if (param_bytes > kMaxKernelParamBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sim launch: ", params, " by-value arguments take ", param_bytes,
          " bytes of kernel parameters (aligned to ", kParamAlignment, "); a launch passes at most ",
          kMaxKernelParamBytes));
    }
    if (out != nullptr) *out = {param_bytes, params};
    return absl::OkStatus();
  }

  absl::Status LaunchOne(absl::Span<LaunchArg> args, absl::FunctionRef<absl::Status()> kernel,
                         bool in_graph) {
    RETURN_IF_ERROR(LockedFault(FaultSite::kLaunch, 0));
    std::pair<size_t, int64_t> staged;
    RETURN_IF_ERROR(CheckLaunchArgs(args, &staged));
    const auto [param_bytes, params] = staged;
    std::optional<size_t> block;
    if (params > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      block = allocator_.Allocate(RoundUp(param_bytes, kAlignment));
      if (!block.has_value()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "sim launch: no room for ", param_bytes, " bytes of kernel parameters in the arena"));
      }
      counters_.param_calls += params;
      for (const LaunchArg& a : args) counters_.param_bytes += a.by_value ? a.bytes : 0;
    }
    if (absl::Status open = OpenArena(); !open.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (block.has_value()) allocator_.Free(*block);
      return open;
    }
    if (block.has_value()) {
      size_t offset = *block;
      for (LaunchArg& a : args) {
        if (!a.by_value) continue;
        if (a.bytes > 0) std::memcpy(base_ + offset, a.data, a.bytes);
        a.data = base_ + offset;
        offset += RoundUp(a.bytes, kParamAlignment);
      }
    }
    absl::Status status = kernel();
    absl::Status closed = CloseArena();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.launches;
      if (in_graph) ++counters_.graph_kernels;
      if (block.has_value()) allocator_.Free(*block);
    }
    if (!status.ok()) return status;
    return closed;
  }

 public:
  // InjectSimFault: arms (k > 0) or disarms (k == 0) the fault of `site`.
  void Arm(FaultSite site, int64_t k) {
    std::lock_guard<std::mutex> lock(mu_);
    faults_[static_cast<int>(site)] = Countdown{k, 0};
    armed_.store(faults_[0].left > 0 || faults_[1].left > 0 || faults_[2].left > 0,
                 std::memory_order_relaxed);
  }
  bool Pending(FaultSite site) const {
    std::lock_guard<std::mutex> lock(mu_);
    return faults_[static_cast<int>(site)].left > 0;
  }

  bool Owns(const void* ptr) const override {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    uintptr_t base = reinterpret_cast<uintptr_t>(base_);
    return p >= base && p - base < capacity_;
  }

 private:
  SimDevice(char* base, size_t capacity, size_t mapping_bytes, size_t page, bool guard)
      : base_(base),
        capacity_(capacity),
        mapping_bytes_(mapping_bytes),
        page_(page),
        guard_(guard),
        allocator_(capacity) {}

  // The armed fault of `site` counts this operation; Unavailable when it is the k-th. Requires
  // mu_. Unavailable (a device error), not ResourceExhausted: an exhausted allocation is retried
  // after trimming the pool (device.h), which would hide a one-shot fault.
  absl::Status Fault(FaultSite site, size_t bytes) {
    Countdown& c = faults_[static_cast<int>(site)];
    if (c.left <= 0) return absl::OkStatus();
    ++c.seen;
    if (--c.left > 0) return absl::OkStatus();
    static constexpr const char* kWhat[] = {"allocation", "copy", "launch"};
    return absl::UnavailableError(absl::StrCat(
        "sim: injected fault: ", kWhat[static_cast<int>(site)], " #", c.seen,
        site == FaultSite::kLaunch ? "" : absl::StrCat(" (", bytes, " bytes)"), " failed"));
  }
  // Copies and launches: no lock taken unless a fault is armed (tests only; the hot path of
  // every run pays one relaxed load).
  absl::Status LockedFault(FaultSite site, size_t bytes) {
    if (!armed_.load(std::memory_order_relaxed)) return absl::OkStatus();
    std::lock_guard<std::mutex> lock(mu_);
    return Fault(site, bytes);
  }

  size_t Offset(const void* ptr) const {
    return reinterpret_cast<uintptr_t>(ptr) - reinterpret_cast<uintptr_t>(base_);
  }
  // Signed offset from the arena base, for messages about pointers outside the arena too.
  int64_t SignedOffset(const void* ptr) const {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(ptr) -
                                reinterpret_cast<uintptr_t>(base_));
  }

  absl::Status CheckDevice(const char* direction, const char* role, const void* ptr,
                           size_t bytes) const {
    if (!Owns(ptr)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sim ", direction, ": device ", role, " is not sim memory (arena offset ",
          SignedOffset(ptr), ", ", bytes, " bytes; the arena holds ", capacity_, " bytes)"));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!allocator_.InLiveBlock(Offset(ptr), bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sim ", direction, ": device ", role, " range at arena offset ", Offset(ptr),
                       " of ", bytes, " bytes is not inside one live sim allocation"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckHost(const char* direction, const char* role, const void* ptr,
                         size_t bytes) const {
    if (bytes > 0 && ptr == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("sim ", direction, ": host ", role,
                                                     " is null for a copy of ", bytes, " bytes"));
    }
    if (Owns(ptr)) {
      return absl::InvalidArgumentError(absl::StrCat("sim ", direction, ": host ", role,
                                                     " is sim memory (arena offset ", Offset(ptr),
                                                     ", ", bytes, " bytes)"));
    }
    return absl::OkStatus();
  }

  // memmove with the device range(s) accessible (memmove: overlapping d2d copies are defined).
  // Inside a Launch (or another thread's Copy/Launch that opened the whole arena) the arena is
  // already open: join it through the depth counter. Otherwise open only the pages of the device
  // ranges, under guard_mu_, so a copy costs mprotect calls proportional to its own size rather
  // than to all the memory the arena has ever touched (measured on the 2-core build machine:
  // a 64-byte copy took ~2.9 ms with whole-arena mprotect and 64 MiB of the arena touched). Holding
  // guard_mu_ serialises guarded copies with each other and with the start and end of launches;
  // guard mode is for tests, so that is fine.
  absl::Status CopyOpen(void* dst, const void* src, size_t bytes,
                        std::initializer_list<const void*> device_ptrs) {
    if (bytes == 0) return absl::OkStatus();
    if (!guard_) {
      std::memmove(dst, src, bytes);
      return absl::OkStatus();
    }
    std::unique_lock<std::mutex> lock(guard_mu_);
    if (guard_depth_ > 0) {
      ++guard_depth_;
      lock.unlock();
      std::memmove(dst, src, bytes);
      return CloseArena();
    }
    absl::Status status = absl::OkStatus();
    size_t opened = 0;
    for (const void* p : device_ptrs) {
      auto [start, len] = Pages(p, bytes);
      if (mprotect(start, len, PROT_READ | PROT_WRITE) != 0) {
        status = absl::InternalError(
            absl::StrCat("sim: cannot open device pages (mprotect): ", std::strerror(errno)));
        break;
      }
      ++opened;
    }
    if (status.ok()) std::memmove(dst, src, bytes);
    size_t closed = 0;
    for (const void* p : device_ptrs) {
      if (closed++ == opened) break;
      auto [start, len] = Pages(p, bytes);
      if (mprotect(start, len, PROT_NONE) != 0 && status.ok()) {
        status = absl::InternalError(
            absl::StrCat("sim: cannot close device pages (mprotect): ", std::strerror(errno)));
      }
    }
    return status;
  }

  // The whole pages covering [p, p + bytes) (inside the mapping: p + bytes is in a live block).
  std::pair<void*, size_t> Pages(const void* p, size_t bytes) const {
    size_t first = Offset(p) / page_ * page_;
    size_t last = RoundUp(Offset(p) + bytes, page_);
    return {base_ + first, last - first};
  }

  absl::Status OpenArena() {
    if (!guard_) return absl::OkStatus();
    std::lock_guard<std::mutex> lock(guard_mu_);
    if (guard_depth_ == 0 && mprotect(base_, mapping_bytes_, PROT_READ | PROT_WRITE) != 0) {
      return absl::InternalError(
          absl::StrCat("sim: cannot open the arena (mprotect): ", std::strerror(errno)));
    }
    ++guard_depth_;
    return absl::OkStatus();
  }

  absl::Status CloseArena() {
    if (!guard_) return absl::OkStatus();
    std::lock_guard<std::mutex> lock(guard_mu_);
    if (--guard_depth_ == 0 && mprotect(base_, mapping_bytes_, PROT_NONE) != 0) {
      return absl::InternalError(
          absl::StrCat("sim: cannot close the arena (mprotect): ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  char* const base_;
  const size_t capacity_;       // usable bytes, a multiple of kAlignment
  const size_t mapping_bytes_;  // capacity_ rounded up to whole pages
  const size_t page_;
  const bool guard_;

  mutable std::mutex mu_;  // allocator_, counters_, faults_, the memory limit
  ArenaAllocator allocator_;
  // Per FaultSite: operations left until the armed fault (0: none armed), operations seen.
  struct Countdown {
    int64_t left = 0;
    int64_t seen = 0;
  };
  Countdown faults_[3];
  // Whether any fault is armed (set under mu_ by Arm; read without it by LockedFault). Arming
  // happens between runs, on the thread that then runs, so a relaxed load sees it.
  std::atomic<bool> armed_{false};

  std::mutex guard_mu_;
  int guard_depth_ = 0;  // Copy*/Launch calls in progress; the arena is open while > 0
};

}  // namespace

absl::Status InjectSimFault(Device* device, FaultSite site, int64_t k) {
  auto* sim = dynamic_cast<SimDevice*>(device);
  if (sim == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fault injection is a sim device feature; got ", device ? device->name() : "no device"));
  }
  if (k < 0) return absl::InvalidArgumentError(absl::StrCat("fault injection: k must be >= 0, got ", k));
  sim->Arm(site, k);
  return absl::OkStatus();
}

bool SimFaultPending(const Device* device, FaultSite site) {
  auto* sim = dynamic_cast<const SimDevice*>(device);
  return sim != nullptr && sim->Pending(site);
}

absl::StatusOr<std::unique_ptr<Device>> MakeSimDevice(SimDeviceOptions options) {
  ASSIGN_OR_RETURN(std::unique_ptr<SimDevice> device, SimDevice::Create(options));
  return std::unique_ptr<Device>(std::move(device));
}

}  // namespace hetpass::runtime
