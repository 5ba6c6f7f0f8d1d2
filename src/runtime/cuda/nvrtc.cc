// NVRTC through dlopen (see nvrtc.h). One program per distinct source: create, compile with the
// fixed options, read the PTX (or the log on failure), destroy. The cache maps the full source
// text to its PTX under a mutex; compiling happens outside the lock, so two threads may compile
// the same source once each (harmless, and rare: kernels are compiled at module load).
#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "runtime/cuda/shared_library.h"

namespace hetpass::runtime::cuda_api {
namespace {

#define HETPASS_NVRTC_FUNCTIONS(X)                                                          \
  X(create, nvrtcCreateProgram) X(destroy, nvrtcDestroyProgram) X(compile, nvrtcCompileProgram) \
  X(log_size, nvrtcGetProgramLogSize) X(log, nvrtcGetProgramLog) X(ptx_size, nvrtcGetPTXSize)   \
  X(ptx, nvrtcGetPTX) X(error_string, nvrtcGetErrorString)

struct Api {
  std::string path;
#define HETPASS_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  HETPASS_NVRTC_FUNCTIONS(HETPASS_MEMBER)
#undef HETPASS_MEMBER
};

void Resolve(void* h, Api& a, std::vector<std::string>& missing) {
#define HETPASS_RESOLVE(member, symbol) ResolveSymbol(h, a.member, #symbol, missing);
  HETPASS_NVRTC_FUNCTIONS(HETPASS_RESOLVE)
#undef HETPASS_RESOLVE
}

absl::StatusOr<const Api*> LoadApi() {
  return LoadLibraryOnce<Api>("NVRTC", "HETPASS_NVRTC", {"libnvrtc.so.13", "libnvrtc.so"}, &Resolve);
}

struct Cache {
  std::mutex mu;
  absl::flat_hash_map<std::string, std::string> ptx;  // source -> PTX
  NvrtcCacheStats stats;
};
Cache& TheCache() {
  static Cache* cache = new Cache;
  return *cache;
}

absl::StatusOr<std::string> Compile(const Api& api, const std::string& source, absl::string_view what) {
  nvrtcProgram prog = nullptr;
  const std::string name = absl::StrCat(what, ".cu");
  nvrtcResult r = api.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("cuda: nvrtcCreateProgram for ", what, " failed: ", api.error_string(r)));
  }
  const std::string arch = absl::StrCat("--gpu-architecture=", kNvrtcArchitecture);
  const char* options[] = {arch.c_str(), "--fmad=false", "-std=c++17"};
  r = api.compile(prog, 3, options);
  std::string log;
  size_t log_size = 0;
  if (api.log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    if (api.log(prog, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  std::string ptx;
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    r = api.ptx_size(prog, &size);
    if (r == NVRTC_SUCCESS) {
      ptx.resize(size);
      r = api.ptx(prog, ptx.data());
      while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    }
  }
  api.destroy(&prog);
  if (r != NVRTC_SUCCESS) {
    return absl::InternalError(absl::StrCat("cuda: NVRTC cannot compile ", what, ": ", api.error_string(r),
                                            log.empty() ? "" : "\n", log));
  }
  return ptx;
}

}  // namespace

absl::StatusOr<std::string> CompileCudaSource(const std::string& source, absl::string_view what) {
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.ptx.find(source); it != cache.ptx.end()) {
      ++cache.stats.hits;
      return it->second;
    }
  }
  const absl::StatusOr<const Api*> api = LoadApi();
  if (!api.ok()) return api.status();
  absl::StatusOr<std::string> ptx = Compile(**api, source, what);
  if (!ptx.ok()) return ptx.status();
  std::lock_guard<std::mutex> lock(cache.mu);
  ++cache.stats.compiled;
  cache.ptx.emplace(source, *ptx);
  return ptx;
}

absl::StatusOr<std::string> NvrtcLibrary() {
  const absl::StatusOr<const Api*> api = LoadApi();
  if (!api.ok()) return api.status();
  return (*api)->path;
}

NvrtcCacheStats NvrtcStats() {
  Cache& cache = TheCache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.stats;
}

}  // namespace hetpass::runtime::cuda_api
