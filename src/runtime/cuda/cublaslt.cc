// cuBLASLt through dlopen (see cublaslt.h).
//
// Row-major GEMMs on a column-major library: out[m, n] = data[m, k] x weight[n, k]^T is, read
// column-major, D (n x m, ld n) = op(A) x B with A = the weight as a k x n matrix (ld k) and
// op = transpose, B = the data as a k x m matrix (ld k). The bias vector runs along D's rows,
// i.e. out's columns: exactly cuBLASLt's BIAS epilogue; RELU and RELU_BIAS fuse the ReLU.
// fp32 compute (CUBLAS_COMPUTE_32F, no TF32), so results stay within the host kernels'
// tolerance. The heuristic's first algorithm is kept per shape with its workspace size.
// Batched row-major matmuls out[i] = a[i] x b[i] are D (n x m) = B' x A' per batch, with
// cuBLASLt's strided batches (BATCH_COUNT, STRIDED_BATCH_OFFSET; offset 0 broadcasts a matrix).
#include "runtime/cuda/cublaslt.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/support/status_macros.h"
#include "runtime/cuda/shared_library.h"

namespace hetpass::runtime::cuda_api {
namespace {

constexpr size_t kMaxWorkspace = size_t{32} << 20;

// The entry points used: (member, symbol), resolved from the opened library.
#define HETPASS_CUBLASLT_FUNCTIONS(X)                                                     \
  X(create, cublasLtCreate) X(destroy, cublasLtDestroy)                                    \
  X(desc_create, cublasLtMatmulDescCreate) X(desc_destroy, cublasLtMatmulDescDestroy)      \
  X(desc_set, cublasLtMatmulDescSetAttribute) X(layout_create, cublasLtMatrixLayoutCreate) \
  X(layout_destroy, cublasLtMatrixLayoutDestroy) X(layout_set, cublasLtMatrixLayoutSetAttribute) \
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

void Resolve(void* h, Api& a, std::vector<std::string>& missing) {
#define HETPASS_RESOLVE(member, symbol) ResolveSymbol(h, a.member, #symbol, missing);
  HETPASS_CUBLASLT_FUNCTIONS(HETPASS_RESOLVE)
#undef HETPASS_RESOLVE
}

absl::StatusOr<const Api*> LoadApi() {
  return LoadLibraryOnce<Api>("cuBLASLt", "HETPASS_CUBLASLT", {"libcublasLt.so.13", "libcublasLt.so"}, &Resolve);
}

absl::Status Check(const Api& api, cublasStatus_t s, absl::string_view call) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const char* name = api.status_name == nullptr ? nullptr : api.status_name(s);
  return absl::InternalError(absl::StrCat("cuda: cuBLASLt ", call, " failed with ",
                                          name == nullptr ? "status" : name, " (", static_cast<int>(s), ")"));
}

// One column-major cuBLASLt matmul D = op(A) x B (+ epilogue), batched with strides: the
// plan key, and what the descriptors are made from.
struct Gemm {
  bool transpose_a = false;
  int64_t a_rows = 0, a_cols = 0;  // A as stored (ld = a_rows)
  int64_t b_rows = 0, b_cols = 0;  // B as stored (ld = b_rows)
  int64_t d_rows = 0, d_cols = 0;  // D (ld = d_rows)
  int64_t batch = 1, stride_a = 0, stride_b = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;

  auto Key() const {
    return std::make_tuple(transpose_a, a_rows, a_cols, b_rows, b_cols, d_rows, d_cols, batch, stride_a,
                           stride_b, static_cast<int>(epilogue));
  }
  std::string Text() const {
    return absl::StrCat("D ", d_rows, "x", d_cols, " = A", transpose_a ? "^T" : "", " ", a_rows, "x", a_cols,
                        " * B ", b_rows, "x", b_cols, batch > 1 ? absl::StrCat(" in ", batch, " batches") : "");
  }
};

// out[m, n] = data[m, k] x weight[n, k]^T: D (n x m) = A^T x B with A the weight as k x n and
// B the data as k x m (see the top of the file).
Gemm DenseGemm(const DenseCall& c) {
  Gemm g;
  g.transpose_a = true;
  g.a_rows = c.k, g.a_cols = c.n;
  g.b_rows = c.k, g.b_cols = c.m;
  g.d_rows = c.n, g.d_cols = c.m;
  if (c.bias != nullptr) {
    g.epilogue = c.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  } else {
    g.epilogue = c.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT;
  }
  return g;
}

// out[m, n] = a[m, k] x b[k, n] row-major: column-major D (n x m) = B' x A' with B' = b read as
// n x k and A' = a read as k x m, no transposes.
Gemm BatchGemm(const BatchMatmulCall& c) {
  Gemm g;
  g.a_rows = c.n, g.a_cols = c.k;
  g.b_rows = c.k, g.b_cols = c.m;
  g.d_rows = c.n, g.d_cols = c.m;
  g.batch = c.batch, g.stride_a = c.stride_b, g.stride_b = c.stride_a;
  return g;
}

// The operation and matrix descriptors of one GEMM.
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

  absl::Status Layout(cublasLtMatrixLayout_t* l, int64_t rows, int64_t cols, int64_t batch, int64_t stride,
                      const char* what) {
    RETURN_IF_ERROR(Check(*api, api->layout_create(l, CUDA_R_32F, static_cast<uint64_t>(rows),
                                                  static_cast<uint64_t>(cols), rows),
                          absl::StrCat("MatrixLayoutCreate(", what, ")")));
    if (batch == 1) return absl::OkStatus();
    const int32_t count = static_cast<int32_t>(batch);
    RETURN_IF_ERROR(Check(*api, api->layout_set(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                          absl::StrCat("MatrixLayoutSetAttribute(", what, ", BATCH_COUNT)")));
    return Check(*api, api->layout_set(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
                 absl::StrCat("MatrixLayoutSetAttribute(", what, ", STRIDED_BATCH_OFFSET)"));
  }

  absl::Status Create(const Api& lib, const Gemm& g) {
    api = &lib;
    if (g.batch > INT32_MAX) return absl::InvalidArgumentError(absl::StrCat("cuda: cuBLASLt batch of ", g.batch));
    RETURN_IF_ERROR(Check(lib, lib.desc_create(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate"));
    const cublasOperation_t transa = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, none = CUBLAS_OP_N;
    RETURN_IF_ERROR(Check(lib, lib.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa)),
                          "MatmulDescSetAttribute(TRANSA)"));
    RETURN_IF_ERROR(Check(lib, lib.desc_set(op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof(none)),
                          "MatmulDescSetAttribute(TRANSB)"));
    RETURN_IF_ERROR(Check(lib, lib.desc_set(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue, sizeof(g.epilogue)),
                          "MatmulDescSetAttribute(EPILOGUE)"));
    RETURN_IF_ERROR(Layout(&a, g.a_rows, g.a_cols, g.batch, g.stride_a, "A"));
    RETURN_IF_ERROR(Layout(&b, g.b_rows, g.b_cols, g.batch, g.stride_b, "B"));
    return Layout(&d, g.d_rows, g.d_cols, g.batch, g.d_rows * g.d_cols, "D");
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
  return d.Create(*api, DenseGemm(call));
}

absl::Status CheckBatchMatmulDescriptors(const BatchMatmulCall& call) {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  Descriptors d;
  return d.Create(*api, BatchGemm(call));
}

struct Gemms::Impl {
  const Api* api = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::mutex mu;
  struct Plan {
    Descriptors desc;
    cublasLtMatmulAlgo_t algo;
    size_t workspace = 0;
  };
  std::map<decltype(Gemm().Key()), std::unique_ptr<Plan>> plans;

  ~Impl() {
    plans.clear();
    if (handle != nullptr) api->destroy(handle);
  }

  absl::StatusOr<Plan*> PlanFor(const Gemm& c) {
    auto key = c.Key();
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
      return absl::UnimplementedError(absl::StrCat("cuda: cuBLASLt has no algorithm for ", c.Text()));
    }
    plan->algo = result.algo;
    plan->workspace = result.workspaceSize;
    Plan* p = plan.get();
    plans.emplace(key, std::move(plan));
    return p;
  }
};

Gemms::Gemms(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Gemms::~Gemms() = default;

absl::StatusOr<std::unique_ptr<Gemms>> Gemms::Create() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  auto impl = std::make_unique<Impl>();
  impl->api = api;
  RETURN_IF_ERROR(Check(*api, api->create(&impl->handle), "Create"));
  return std::unique_ptr<Gemms>(new Gemms(std::move(impl)));
}

int64_t Gemms::plans() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int64_t>(impl_->plans.size());
}

absl::Status Gemms::Run(const DenseCall& c, void* stream, PoolingAllocator* workspace) {
  if (c.m == 0 || c.n == 0) return absl::OkStatus();
  const Gemm g = DenseGemm(c);
  return Enqueue(&g, c.weight, c.data, c.bias, c.out, stream, workspace);
}

absl::Status Gemms::Run(const BatchMatmulCall& c, void* stream, PoolingAllocator* workspace) {
  if (c.batch == 0 || c.m == 0 || c.n == 0) return absl::OkStatus();
  const Gemm g = BatchGemm(c);
  return Enqueue(&g, c.b, c.a, nullptr, c.out, stream, workspace);
}

absl::Status Gemms::Enqueue(const void* gemm, const void* a, const void* b, const void* bias, void* d, void* stream,
                            PoolingAllocator* workspace) {
  const Gemm& g = *static_cast<const Gemm*>(gemm);
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Api& api = *impl_->api;
  ASSIGN_OR_RETURN(Impl::Plan * plan, impl_->PlanFor(g));
  if (bias != nullptr) {
    // The pointer is per call site (a constant of the instance): set before each enqueue, under
    // the lock, since the descriptor is shared by the calls of this shape.
    RETURN_IF_ERROR(Check(api, api.desc_set(plan->desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
                          "MatmulDescSetAttribute(BIAS_POINTER)"));
  }
  PoolingAllocator::Block ws;
  if (plan->workspace > 0) {
    if (workspace == nullptr) return absl::InternalError("cuda: no workspace pool for cuBLASLt");
    ASSIGN_OR_RETURN(ws, workspace->Allocate(plan->workspace));
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t s = api.matmul(impl_->handle, plan->desc.op, &alpha, a, plan->desc.a, b, plan->desc.b, &beta, d,
                                      plan->desc.d, d, plan->desc.d, &plan->algo, ws.ptr, plan->workspace,
                                      static_cast<cudaStream_t>(stream));
  if (ws.ptr != nullptr) workspace->Release(ws);
  return Check(api, s, "Matmul");
}

}  // namespace hetpass::runtime::cuda_api
