// cuBLASLt through dlopen (see cublaslt.h).
//
// Row-major GEMMs on a column-major library: out[m, n] = data[m, k] x weight[n, k]^T is, read
// column-major, D (n x m, ld n) = op(A) x B with A = the weight as a k x n matrix (ld k) and
// op = transpose, B = the data as a k x m matrix (ld k). The bias vector runs along D's rows,
// i.e. out's columns: exactly cuBLASLt's BIAS epilogue; RELU and RELU_BIAS fuse the ReLU.
// fp32 compute (CUBLAS_COMPUTE_32F, no TF32), so results stay within the host kernels'
// tolerance. The heuristic's first algorithm is kept per shape with its workspace size.
#include "runtime/cuda/cublaslt.h"

#include <cublasLt.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"
#include "runtime/cuda/dl_library.h"

namespace hetpass::runtime::cuda_api {
namespace {

constexpr size_t kMaxWorkspace = size_t{32} << 20;

// The entry points used: (member, symbol), resolved from the opened library.
#define HETPASS_CUBLASLT_FUNCTIONS(X)                                                     \
  X(create, cublasLtCreate) X(destroy, cublasLtDestroy)                                    \
  X(desc_create, cublasLtMatmulDescCreate) X(desc_destroy, cublasLtMatmulDescDestroy)      \
  X(desc_set, cublasLtMatmulDescSetAttribute) X(layout_create, cublasLtMatrixLayoutCreate) \
  X(layout_destroy, cublasLtMatrixLayoutDestroy)                                           \
  X(pref_create, cublasLtMatmulPreferenceCreate)                                           \
  X(pref_destroy, cublasLtMatmulPreferenceDestroy)                                         \
  X(pref_set, cublasLtMatmulPreferenceSetAttribute)                                        \
  X(heuristic, cublasLtMatmulAlgoGetHeuristic) X(matmul, cublasLtMatmul)                   \
  X(status_name, cublasLtGetStatusName)

struct Api {
  std::string path;
#define HETPASS_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  HETPASS_CUBLASLT_FUNCTIONS(HETPASS_MEMBER)
#undef HETPASS_MEMBER
};

absl::StatusOr<const Api*> LoadApi() {
  static const absl::StatusOr<Api>* const api = new absl::StatusOr<Api>(OpenApi<Api>(
      {"cuBLASLt", "HETPASS_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so"}, "libcublasLt.so.13"}, [](void* h, Api& a, std::vector<std::string>& missing) {
#define HETPASS_RESOLVE(member, symbol) ResolveSymbol(h, #symbol, a.member, missing);
        HETPASS_CUBLASLT_FUNCTIONS(HETPASS_RESOLVE)
#undef HETPASS_RESOLVE
      }));
  if (!api->ok()) return api->status();
  return &**api;
}

absl::Status Check(const Api& api, cublasStatus_t s, absl::string_view call) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const char* name = api.status_name == nullptr ? nullptr : api.status_name(s);
  return absl::InternalError(absl::StrCat("cuda: cuBLASLt ", call, " failed with ",
                                          name == nullptr ? "status" : name, " (", static_cast<int>(s), ")"));
}

cublasLtEpilogue_t Epilogue(const DenseCall& c) {
  if (c.bias != nullptr) return c.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  return c.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
}

// The operation and matrix descriptors of one shape and epilogue.
struct Descriptors {
  const Api* api = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;

  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (api == nullptr) return;
    if (op != nullptr) api->desc_destroy(op);
    for (cublasLtMatrixLayout_t l : {a, b, d}) {
      if (l != nullptr) api->layout_destroy(l);
    }
  }

  absl::Status Create(const Api& lib, const DenseCall& c) {
    api = &lib;
    RETURN_IF_ERROR(Check(lib, lib.desc_create(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate"));
    const cublasOperation_t transpose = CUBLAS_OP_T, none = CUBLAS_OP_N;
    RETURN_IF_ERROR(Check(lib, lib.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)),
                          "MatmulDescSetAttribute(TRANSA)"));
    RETURN_IF_ERROR(Check(lib, lib.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)),
                          "MatmulDescSetAttribute(TRANSB)"));
    const cublasLtEpilogue_t epilogue = Epilogue(c);
    RETURN_IF_ERROR(Check(lib, lib.desc_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
                          "MatmulDescSetAttribute(EPILOGUE)"));
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    RETURN_IF_ERROR(Check(lib, lib.layout_create(&a, CUDA_R_32F, u(c.k), u(c.n), c.k), "MatrixLayoutCreate(weight)"));
    RETURN_IF_ERROR(Check(lib, lib.layout_create(&b, CUDA_R_32F, u(c.k), u(c.m), c.k), "MatrixLayoutCreate(data)"));
    RETURN_IF_ERROR(Check(lib, lib.layout_create(&d, CUDA_R_32F, u(c.n), u(c.m), c.n), "MatrixLayoutCreate(out)"));
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::string> CublasLtLibrary() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  return api->path;
}

absl::Status CheckDenseDescriptors(const DenseCall& call) {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  Descriptors d;
  return d.Create(*api, call);
}

struct DenseGemms::Impl {
  const Api* api = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::mutex mu;
  struct Plan {
    Descriptors desc;
    cublasLtMatmulAlgo_t algo;
    size_t workspace = 0;
  };
  // (m, n, k, bias, relu) -> plan
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool>, std::unique_ptr<Plan>> plans;

  ~Impl() {
    plans.clear();
    if (handle != nullptr) api->destroy(handle);
  }

  absl::StatusOr<Plan*> PlanFor(const DenseCall& c) {
    auto key = std::make_tuple(c.m, c.n, c.k, c.bias != nullptr, c.relu);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second.get();
    auto plan = std::make_unique<Plan>();
    RETURN_IF_ERROR(plan->desc.Create(*api, c));
    cublasLtMatmulPreference_t pref = nullptr;
    RETURN_IF_ERROR(Check(*api, api->pref_create(&pref), "MatmulPreferenceCreate"));
    const uint64_t max_workspace = kMaxWorkspace;
    cublasStatus_t s = api->pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                     sizeof(max_workspace));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS) {
      s = api->heuristic(handle, plan->desc.op, plan->desc.a, plan->desc.b, plan->desc.d, plan->desc.d, pref, 1,
                         &result, &found);
    }
    api->pref_destroy(pref);
    RETURN_IF_ERROR(Check(*api, s, "MatmulAlgoGetHeuristic"));
    if (found == 0) {
      return absl::UnimplementedError(absl::StrCat("cuda: cuBLASLt has no algorithm for a dense of m=", c.m,
                                                   ", n=", c.n, ", k=", c.k));
    }
    plan->algo = result.algo;
    plan->workspace = result.workspaceSize;
    Plan* p = plan.get();
    plans.emplace(key, std::move(plan));
    return p;
  }
};

DenseGemms::DenseGemms(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DenseGemms::~DenseGemms() = default;

absl::StatusOr<std::unique_ptr<DenseGemms>> DenseGemms::Create() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  auto impl = std::make_unique<Impl>();
  impl->api = api;
  RETURN_IF_ERROR(Check(*api, api->create(&impl->handle), "Create"));
  return std::unique_ptr<DenseGemms>(new DenseGemms(std::move(impl)));
}

int64_t DenseGemms::plans() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int64_t>(impl_->plans.size());
}

absl::Status DenseGemms::Run(const DenseCall& c, void* stream, PoolingAllocator* workspace) {
  if (c.m == 0 || c.n == 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Api& api = *impl_->api;
  ASSIGN_OR_RETURN(Impl::Plan * plan, impl_->PlanFor(c));
  if (c.bias != nullptr) {
    // The pointer is per call site (a constant of the instance): set before each enqueue, under
    // the lock, since the descriptor is shared by the calls of this shape.
    RETURN_IF_ERROR(Check(api, api.desc_set(plan->desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias,
                                            sizeof(c.bias)),
                          "MatmulDescSetAttribute(BIAS_POINTER)"));
  }
  PoolingAllocator::Block ws;
  if (plan->workspace > 0) {
    if (workspace == nullptr) return absl::InternalError("cuda dense: no workspace pool");
    ASSIGN_OR_RETURN(ws, workspace->Allocate(plan->workspace));
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s =
      api.matmul(impl_->handle, plan->desc.op, &alpha, c.weight, plan->desc.a, c.data, plan->desc.b, &beta, c.out,
                 plan->desc.d, c.out, plan->desc.d, &plan->algo, ws.ptr, plan->workspace,
                 static_cast<cudaStream_t>(stream));
  if (ws.ptr != nullptr) workspace->Release(ws);
  return Check(api, s, "Matmul");
}

}  // namespace hetpass::runtime::cuda_api
