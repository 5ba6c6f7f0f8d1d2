// CUPTI memcpy and kernel tracing (see cupti.h). Start registers the activity-buffer callbacks
// (once per process) and enables CUPTI_ACTIVITY_KIND_MEMCPY and, separately,
// CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL (a refusal of the second is recorded, not fatal: the
// memcpy counts are the check the ledger needs); CUPTI hands completed buffers to
// BufferCompleted, which counts the memcpy records and sums their bytes by copy kind (a copy of
// the wrong size is still one call, so a report compares bytes too), sums kernel and memcpy GPU
// time and keeps per-name kernel totals; Stop flushes every buffer (forced), disables the kinds
// and returns the trace with the longest kernels first. One trace at a time per process (CUPTI's
// activity API is process-wide).
#include "runtime/cuda/cupti.h"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"
#include "runtime/cuda/shared_library.h"

namespace hetpass::runtime::cuda_api {
namespace {

#define HETPASS_CUPTI_FUNCTIONS(X)                                                                 \
  X(register_callbacks, cuptiActivityRegisterCallbacks) X(enable, cuptiActivityEnable)            \
  X(disable, cuptiActivityDisable) X(flush_all, cuptiActivityFlushAll)                             \
  X(next_record, cuptiActivityGetNextRecord) X(result_string, cuptiGetResultString)

struct Api {
  std::string path;
#define HETPASS_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  HETPASS_CUPTI_FUNCTIONS(HETPASS_MEMBER)
#undef HETPASS_MEMBER
};

void Resolve(void* h, Api& a, std::vector<std::string>& missing) {
#define HETPASS_RESOLVE(member, symbol) ResolveSymbol(h, a.member, #symbol, missing);
  HETPASS_CUPTI_FUNCTIONS(HETPASS_RESOLVE)
#undef HETPASS_RESOLVE
}

absl::StatusOr<const Api*> LoadApi() {
  return LoadLibraryOnce<Api>("CUPTI", "HETPASS_CUPTI", {"libcupti.so.13", "libcupti.so"}, &Resolve);
}

constexpr size_t kBufferBytes = size_t{1} << 20;

struct Trace {
  std::mutex mu;
  const Api* api = nullptr;
  bool registered = false;
  bool active = false;
  bool kernels_enabled = false;
  CuptiTrace counts;
  // Kernel GPU time per name, and the earliest start / latest end of any record (for the span).
  absl::flat_hash_map<std::string, CuptiKernelTime> per_kernel;
  uint64_t first_start = std::numeric_limits<uint64_t>::max();
  uint64_t last_end = 0;
};
Trace& TheTrace() {
  static Trace* t = new Trace;
  return *t;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kBufferBytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *max_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Trace& t = TheTrace();
  CuptiTrace seen;
  // Kernels of one buffer by name; merged under the lock below.
  absl::flat_hash_map<std::string, CuptiKernelTime> kernels;
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0;
  auto span = [&](uint64_t start, uint64_t end) {
    first = std::min(first, start);
    last = std::max(last, end);
  };
  CUpti_Activity* record = nullptr;
  while (t.api->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      const int64_t ns = k->end > k->start ? static_cast<int64_t>(k->end - k->start) : 0;
      ++seen.kernels;
      seen.kernel_ns += ns;
      span(k->start, k->end);
      CuptiKernelTime& e = kernels[k->name != nullptr ? k->name : "?"];
      ++e.calls;
      e.ns += ns;
      continue;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_MEMCPY) continue;
    const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    const int64_t bytes = static_cast<int64_t>(copy->bytes);
    seen.memcpy_ns += copy->end > copy->start ? static_cast<int64_t>(copy->end - copy->start) : 0;
    span(copy->start, copy->end);
    switch (copy->copyKind) {
      case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
        ++seen.h2d;
        seen.h2d_bytes += bytes;
        break;
      case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
        ++seen.d2h;
        seen.d2h_bytes += bytes;
        break;
      case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
        ++seen.d2d;
        seen.d2d_bytes += bytes;
        break;
      default:  // arrays, peer, host-to-host: no device counter has a direction for them
        ++seen.other;
        seen.other_bytes += bytes;
        break;
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(t.mu);
  t.counts.h2d += seen.h2d;
  t.counts.d2h += seen.d2h;
  t.counts.d2d += seen.d2d;
  t.counts.other += seen.other;
  t.counts.h2d_bytes += seen.h2d_bytes;
  t.counts.d2h_bytes += seen.d2h_bytes;
  t.counts.d2d_bytes += seen.d2d_bytes;
  t.counts.other_bytes += seen.other_bytes;
  t.counts.kernels += seen.kernels;
  t.counts.kernel_ns += seen.kernel_ns;
  t.counts.memcpy_ns += seen.memcpy_ns;
  for (auto& [name, k] : kernels) {
    CuptiKernelTime& e = t.per_kernel[name];
    e.calls += k.calls;
    e.ns += k.ns;
  }
  t.first_start = std::min(t.first_start, first);
  t.last_end = std::max(t.last_end, last);
}

absl::Status Check(const Api& api, CUptiResult r, absl::string_view call) {
  if (r == CUPTI_SUCCESS) return absl::OkStatus();
  const char* text = nullptr;
  if (api.result_string(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  return absl::FailedPreconditionError(absl::StrCat("cuda: CUPTI ", call, " failed: ", text, " (", r, ")"));
}

}  // namespace

absl::Status StartTrace() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  Trace& t = TheTrace();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.active) return absl::FailedPreconditionError("cuda: a CUPTI trace is already running");
  t.api = api;
  if (!t.registered) {
    RETURN_IF_ERROR(Check(*api, api->register_callbacks(&BufferRequested, &BufferCompleted),
                          "cuptiActivityRegisterCallbacks"));
    t.registered = true;
  }
  t.counts = CuptiTrace();
  t.per_kernel.clear();
  t.first_start = std::numeric_limits<uint64_t>::max();
  t.last_end = 0;
  RETURN_IF_ERROR(Check(*api, api->enable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)"));
  // CONCURRENT_KERNEL serialises nothing (plain KERNEL would serialise every launch).
  const absl::Status kernels = Check(*api, api->enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                                     "cuptiActivityEnable(CONCURRENT_KERNEL)");
  t.kernels_enabled = kernels.ok();
  if (!kernels.ok()) t.counts.kernel_error = std::string(kernels.message());
  t.active = true;
  return absl::OkStatus();
}

absl::StatusOr<CuptiTrace> StopTrace() {
  Trace& t = TheTrace();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (!t.active) return absl::FailedPreconditionError("cuda: no CUPTI trace is running");
  }
  // Outside the lock: flushing calls BufferCompleted, which takes it.
  const absl::Status flushed = Check(*t.api, t.api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard<std::mutex> lock(t.mu);
  const absl::Status disabled = Check(*t.api, t.api->disable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityDisable");
  if (t.kernels_enabled) {
    const absl::Status k = Check(*t.api, t.api->disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                                 "cuptiActivityDisable(CONCURRENT_KERNEL)");
    if (!k.ok() && t.counts.kernel_error.empty()) t.counts.kernel_error = std::string(k.message());
    t.kernels_enabled = false;
  }
  t.active = false;
  RETURN_IF_ERROR(flushed);
  RETURN_IF_ERROR(disabled);
  CuptiTrace out = t.counts;
  if (t.last_end > t.first_start) out.span_ns = static_cast<int64_t>(t.last_end - t.first_start);
  for (auto& [name, k] : t.per_kernel) {
    out.top_kernels.push_back(k);
    out.top_kernels.back().name = name;
  }
  std::sort(out.top_kernels.begin(), out.top_kernels.end(),
            [](const CuptiKernelTime& a, const CuptiKernelTime& b) { return a.ns != b.ns ? a.ns > b.ns : a.name < b.name; });
  if (out.top_kernels.size() > CuptiTrace::kTopKernels) out.top_kernels.resize(CuptiTrace::kTopKernels);
  return out;
}

}  // namespace hetpass::runtime::cuda_api
