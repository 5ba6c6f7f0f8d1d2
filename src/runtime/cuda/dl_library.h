// Opening the CUDA libraries that are loaded on first use rather than linked (cuBLASLt, cuDNN:
// linking them adds about 0.4 s to every process start, and the binaries must start on
// machines without them). One search order for all of them, so every library reports a
// missing file the same way: an override variable, the loader's path, then the toolkit's
// lib64 folders; the first file that opens AND has every symbol wins, and a failure names
// every place tried with dlopen's reason. Built only with the CUDA device.
#ifndef HETPASS_RUNTIME_CUDA_DL_LIBRARY_H_
#define HETPASS_RUNTIME_CUDA_DL_LIBRARY_H_

#include <dlfcn.h>

#include <string>
#include <type_traits>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace hetpass::runtime::cuda_api {

struct LibrarySearch {
  const char* what = "";  // "cuBLASLt", for the error
  const char* env = "";   // "HETPASS_CUBLASLT": when set, the only candidate
  std::vector<std::string> names;  // tried on the loader's path: {"libcublasLt.so.13", ...}
  std::string file;                // tried in $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64
};

// Opens the first candidate of `search` for which `resolve(handle)` reports no missing symbol
// (it fills the caller's function table and returns the names it could not find). Returns the
// file the loader picked (dlinfo), or FailedPrecondition "cuda: <what> not found (set <env>);
// tried <candidate> (<reason>), ...". Handles are never closed (unloading a CUDA library while
// the process runs is unsafe).
absl::StatusOr<std::string> OpenLibrary(const LibrarySearch& search,
                                        absl::FunctionRef<std::vector<std::string>(void* handle)> resolve);

// Looks `name` up in `handle` into `fn`, or records it in `missing`.
template <typename Fn>
void ResolveSymbol(void* handle, const char* name, Fn& fn, std::vector<std::string>& missing) {
  fn = reinterpret_cast<std::remove_reference_t<Fn>>(dlsym(handle, name));
  if (fn == nullptr) missing.push_back(name);
}

// OpenLibrary into a function table: `Api` has a `path` member and the function pointers that
// `resolve(handle, api, missing)` fills (an X-macro of ResolveSymbol calls). Callers keep the
// result in a function-local static: opened once per process.
template <typename Api, typename Resolve>
absl::StatusOr<Api> OpenApi(const LibrarySearch& search, Resolve resolve) {
  Api api;
  absl::StatusOr<std::string> path = OpenLibrary(search, [&](void* h) {
    std::vector<std::string> missing;
    resolve(h, api, missing);
    return missing;
  });
  if (!path.ok()) return path.status();
  api.path = *std::move(path);
  return api;
}

}  // namespace hetpass::runtime::cuda_api

#endif  // HETPASS_RUNTIME_CUDA_DL_LIBRARY_H_
