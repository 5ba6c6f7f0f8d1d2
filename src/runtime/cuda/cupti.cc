// CUPTI memcpy tracing (see cupti.h). Start registers the activity-buffer callbacks (once per
// process) and enables CUPTI_ACTIVITY_KIND_MEMCPY; CUPTI hands completed buffers to
// BufferCompleted, which counts the records and sums their bytes by copy kind (a copy of the
// wrong size is still one call, so a report compares bytes too); Stop flushes every buffer
// (forced), disables the kind and returns the counts. One trace at a time per process (CUPTI's activity
// API is process-wide).
#include "runtime/cuda/cupti.h"

#include <cupti.h>

#include <cstdlib>
#include <mutex>
#include <vector>

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
  CuptiMemcpyCounts counts;
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
  CuptiMemcpyCounts seen;
  CUpti_Activity* record = nullptr;
  while (t.api->next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_MEMCPY) continue;
    const auto* copy = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
    const int64_t bytes = static_cast<int64_t>(copy->bytes);
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
}

absl::Status Check(const Api& api, CUptiResult r, absl::string_view call) {
  if (r == CUPTI_SUCCESS) return absl::OkStatus();
  const char* text = nullptr;
  if (api.result_string(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  return absl::FailedPreconditionError(absl::StrCat("cuda: CUPTI ", call, " failed: ", text, " (", r, ")"));
}

}  // namespace

absl::Status StartMemcpyTrace() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  Trace& t = TheTrace();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.active) return absl::FailedPreconditionError("cuda: a CUPTI memcpy trace is already running");
  t.api = api;
  if (!t.registered) {
    RETURN_IF_ERROR(Check(*api, api->register_callbacks(&BufferRequested, &BufferCompleted),
                          "cuptiActivityRegisterCallbacks"));
    t.registered = true;
  }
  t.counts = CuptiMemcpyCounts();
  RETURN_IF_ERROR(Check(*api, api->enable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)"));
  t.active = true;
  return absl::OkStatus();
}

absl::StatusOr<CuptiMemcpyCounts> StopMemcpyTrace() {
  Trace& t = TheTrace();
  {
    std::lock_guard<std::mutex> lock(t.mu);
    if (!t.active) return absl::FailedPreconditionError("cuda: no CUPTI memcpy trace is running");
  }
  // Outside the lock: flushing calls BufferCompleted, which takes it.
  const absl::Status flushed = Check(*t.api, t.api->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  std::lock_guard<std::mutex> lock(t.mu);
  const absl::Status disabled = Check(*t.api, t.api->disable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityDisable");
  t.active = false;
  RETURN_IF_ERROR(flushed);
  RETURN_IF_ERROR(disabled);
  return t.counts;
}

}  // namespace hetpass::runtime::cuda_api
