// Opening the CUDA libraries that are loaded on first use (cuBLASLt, NVRTC, ...) with dlopen:
// linking them adds about 0.4 s to every process start, and the binaries must start on machines
// without them (docs/cuda.md, "Build"). One search order for all of them, so that the messages
// and the environment overrides read alike.
#ifndef HETPASS_RUNTIME_CUDA_SHARED_LIBRARY_H_
#define HETPASS_RUNTIME_CUDA_SHARED_LIBRARY_H_

#include <dlfcn.h>

#include <functional>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hetpass::runtime::cuda_api {

struct SharedLibrary {
  void* handle = nullptr;
  std::string path;  // the file the loader picked (for reports: "which cuBLASLt ran")
};

// Resolves the entry points of an opened library; returns the names it did not find.
using ResolveSymbols = std::function<std::vector<std::string>(void* handle)>;

// Opens the first candidate that loads and resolves: $`env_var` alone when it is set, else each
// of `names` on the loader's path, then in $CUDA_HOME/lib64, $CUDA_PATH/lib64 and
// /usr/local/cuda/lib64. FailedPrecondition naming `what`, `env_var` and every place tried
// (with dlerror's reason) when none does. A handle is never closed: unloading a CUDA library
// while the process runs is unsafe.
absl::StatusOr<SharedLibrary> OpenSharedLibrary(absl::string_view what, const char* env_var,
                                                const std::vector<std::string>& names,
                                                const ResolveSymbols& resolve);

// Resolves entry point `name` of `handle` into the function pointer `fn`; records the name in
// `missing` when the library lacks it.
template <typename Fn>
void ResolveSymbol(void* handle, Fn& fn, const char* name, std::vector<std::string>& missing) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (fn == nullptr) missing.push_back(name);
}

// A library's entry points as `Api` (a struct with `std::string path` and the function
// pointers `resolve` fills with ResolveSymbol), opened once per process and kept: the same
// pointer, or the same error, on every call.
template <typename Api>
absl::StatusOr<const Api*> LoadLibraryOnce(absl::string_view what, const char* env_var,
                                           const std::vector<std::string>& names,
                                           void (*resolve)(void* handle, Api& api, std::vector<std::string>& missing)) {
  static std::once_flag once;
  static absl::StatusOr<Api>* api = nullptr;
  std::call_once(once, [&] {
    Api a;
    absl::StatusOr<SharedLibrary> lib = OpenSharedLibrary(what, env_var, names, [&](void* h) {
      std::vector<std::string> missing;
      resolve(h, a, missing);
      return missing;
    });
    if (lib.ok()) a.path = lib->path;
    api = lib.ok() ? new absl::StatusOr<Api>(a) : new absl::StatusOr<Api>(lib.status());
  });
  if (!api->ok()) return api->status();
  return &**api;
}

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_SHARED_LIBRARY_H_
