// cuDNN through dlopen (see cudnn.h).
//
// Why the legacy API: cuDNN 9.19 still ships it (deprecated) and it is the whole of what a
// plain NCHW f32 convolution needs, without cudnn_frontend (no headers here) or the backend
// API's graph building; its algorithm heuristic (cudnnGet*Algorithm_v7) ranks algorithms
// without running any (cudnnFind* would run every candidate on first use of each shape).
//
// Per problem (a plan, made once and cached, DenseGemms' pattern):
//   1. descriptors   data [n, c, h, w] and out [n, oc, oh, ow] as packed NCHW tensors; the
//                    filter [oc, c/g, kh, kw] (forward) or the weight as stored, [c, oc/g, kh,
//                    kw] (transposed: backward-data of the convolution from out to data); one
//                    convolution descriptor (cross-correlation, symmetric padding, group count,
//                    f32 compute, CUDNN_FMA_MATH); bias [1, oc, 1, 1]; a ReLU activation.
//                    CUDNN_FMA_MATH, not CUDNN_DEFAULT_MATH: on sm_80 and later DEFAULT permits
//                    TF32 tensor cores for f32 data (10-bit mantissa), which would break the
//                    host kernels' 1e-4 tolerances; FMA restricts cuDNN to f32 FMA kernels (what
//                    PyTorch selects with allow_tf32 = False).
//   2. algorithm     the heuristic's ranking; the first that succeeded, is not a tensor-op
//                    variant, and whose workspace (asked again under FMA math) fits kMaxWorkspace.
//   3. epilogue      forward with bias and ReLU: cudnnConvolutionBiasActivationForward (RELU is
//                    allowed with any algorithm). A bias alone is fused too, with an IDENTITY
//                    activation, where the algorithm is IMPLICIT_PRECOMP_GEMM (the only one
//                    IDENTITY allows); with another algorithm it is cudnnAddTensor after the
//                    convolution. Each cuDNN call costs the host tens of microseconds (the H200
//                    run of 386e3b8), so one call beats two. If cuDNN answers NOT_SUPPORTED for
//                    the fused call, the plan falls back for good to convolution +
//                    cudnnAddTensor (+ cudnnActivationForward), in place. Transposed:
//                    backward-data, then the same in-place steps.
// A problem with nothing to sum (C, KH or KW zero, or an empty transposed input) but a non-empty
// output is the (ReLU'd) bias: cudnnSetTensor(0) then the epilogue steps. An empty output is no
// work. Sizes past cuDNN's 32-bit descriptors are Unimplemented.
#include "runtime/cuda/cudnn.h"

#include <cudnn.h>

#include <climits>
#include <map>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "runtime/cuda/shared_library.h"

namespace hetpass::runtime::cuda_api {
namespace {

constexpr size_t kMaxWorkspace = size_t{64} << 20;
// Plans kept per instance before the cache restarts (Mask R-CNN's detection count makes shapes
// that need not repeat).
constexpr size_t kMaxPlans = 256;

// The entry points used: (member, symbol), resolved from the opened library.
#define HETPASS_CUDNN_FUNCTIONS(X)                                                                      \
  X(create, cudnnCreate) X(destroy, cudnnDestroy) X(set_stream, cudnnSetStream)                         \
  X(error_string, cudnnGetErrorString)                                                                  \
  X(tensor_create, cudnnCreateTensorDescriptor) X(tensor_destroy, cudnnDestroyTensorDescriptor)         \
  X(tensor_set, cudnnSetTensorNdDescriptor) X(filter_create, cudnnCreateFilterDescriptor)               \
  X(filter_destroy, cudnnDestroyFilterDescriptor) X(filter_set, cudnnSetFilterNdDescriptor)             \
  X(conv_create, cudnnCreateConvolutionDescriptor) X(conv_destroy, cudnnDestroyConvolutionDescriptor)   \
  X(conv_set, cudnnSetConvolutionNdDescriptor) X(conv_groups, cudnnSetConvolutionGroupCount)            \
  X(conv_math, cudnnSetConvolutionMathType) X(conv_out_dim, cudnnGetConvolutionNdForwardOutputDim)      \
  X(act_create, cudnnCreateActivationDescriptor) X(act_destroy, cudnnDestroyActivationDescriptor)       \
  X(act_set, cudnnSetActivationDescriptor)                                                              \
  X(fwd_algos, cudnnGetConvolutionForwardAlgorithm_v7)                                                  \
  X(fwd_workspace, cudnnGetConvolutionForwardWorkspaceSize) X(fwd, cudnnConvolutionForward)             \
  X(fwd_bias_act, cudnnConvolutionBiasActivationForward)                                                \
  X(bwd_algos, cudnnGetConvolutionBackwardDataAlgorithm_v7)                                             \
  X(bwd_workspace, cudnnGetConvolutionBackwardDataWorkspaceSize) X(bwd, cudnnConvolutionBackwardData)   \
  X(add_tensor, cudnnAddTensor) X(activation, cudnnActivationForward) X(set_tensor, cudnnSetTensor)

struct Api {
  std::string path;
#define HETPASS_MEMBER(member, symbol) decltype(&symbol) member = nullptr;
  HETPASS_CUDNN_FUNCTIONS(HETPASS_MEMBER)
#undef HETPASS_MEMBER
};

void Resolve(void* h, Api& a, std::vector<std::string>& missing) {
#define HETPASS_RESOLVE(member, symbol) ResolveSymbol(h, a.member, #symbol, missing);
  HETPASS_CUDNN_FUNCTIONS(HETPASS_RESOLVE)
#undef HETPASS_RESOLVE
}

absl::StatusOr<const Api*> LoadApi() {
  return LoadLibraryOnce<Api>("cuDNN", "HETPASS_CUDNN", {"libcudnn.so.9", "libcudnn.so"}, &Resolve);
}

absl::Status Check(const Api& api, cudnnStatus_t s, absl::string_view call) {
  if (s == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const char* name = api.error_string == nullptr ? nullptr : api.error_string(s);
  return absl::InternalError(absl::StrCat("cuda: cuDNN ", call, " failed with ",
                                          name == nullptr ? "status" : name, " (", static_cast<int>(s), ")"));
}

// The packed NCHW sizes of a tensor, or Unimplemented past cuDNN's int descriptors.
absl::Status ToInt(absl::Span<const int64_t> dims, const ConvProblem& p, int* out) {
  int64_t elements = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    elements *= dims[i];
    if (dims[i] > INT_MAX || elements > INT_MAX) {
      return absl::UnimplementedError(
          absl::StrCat("cuda: cuDNN's descriptors hold 32-bit sizes; ", p.ToString(), " is larger"));
    }
    out[i] = static_cast<int>(dims[i]);
  }
  return absl::OkStatus();
}

// True when there is nothing to sum: the output (if any) is the bias.
bool NothingToSum(const ConvProblem& p) {
  return p.c == 0 || p.kh == 0 || p.kw == 0 || (p.transposed && (p.h == 0 || p.w == 0));
}

// Every descriptor of one problem (see the file comment, step 1). With NothingToSum only the
// output, bias and activation descriptors exist.
struct Descriptors {
  const Api* api = nullptr;
  cudnnTensorDescriptor_t data = nullptr, out = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  cudnnActivationDescriptor_t identity = nullptr;  // a forward bias without ReLU, fused

  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    if (api == nullptr) return;
    for (cudnnTensorDescriptor_t t : {data, out, bias}) {
      if (t != nullptr) api->tensor_destroy(t);
    }
    if (filter != nullptr) api->filter_destroy(filter);
    if (conv != nullptr) api->conv_destroy(conv);
    if (relu != nullptr) api->act_destroy(relu);
    if (identity != nullptr) api->act_destroy(identity);
  }

  absl::Status MakeTensor(cudnnTensorDescriptor_t& t, std::array<int64_t, 4> dims, const ConvProblem& p,
                      absl::string_view role) {
    int d[4], stride[4];
    RETURN_IF_ERROR(ToInt(dims, p, d));
    stride[3] = 1;
    for (int i = 2; i >= 0; --i) stride[i] = stride[i + 1] * d[i + 1];
    RETURN_IF_ERROR(Check(*api, api->tensor_create(&t), "CreateTensorDescriptor"));
    return Check(*api, api->tensor_set(t, CUDNN_DATA_FLOAT, 4, d, stride), absl::StrCat("SetTensorNdDescriptor(", role, ")"));
  }

  absl::Status Create(const Api& lib, const ConvProblem& p) {
    api = &lib;
    RETURN_IF_ERROR(MakeTensor(out, {p.n, p.oc, p.oh, p.ow}, p, "out"));
    if (p.bias) RETURN_IF_ERROR(MakeTensor(bias, {1, p.oc, 1, 1}, p, "bias"));
    if (p.relu) {
      RETURN_IF_ERROR(Check(lib, lib.act_create(&relu), "CreateActivationDescriptor"));
      RETURN_IF_ERROR(Check(lib, lib.act_set(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
                            "SetActivationDescriptor(relu)"));
    } else if (p.bias && !p.transposed) {
      RETURN_IF_ERROR(Check(lib, lib.act_create(&identity), "CreateActivationDescriptor"));
      RETURN_IF_ERROR(Check(lib, lib.act_set(identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0.0),
                            "SetActivationDescriptor(identity)"));
    }
    if (NothingToSum(p)) return absl::OkStatus();
    RETURN_IF_ERROR(MakeTensor(data, {p.n, p.c, p.h, p.w}, p, "data"));
    int f[4];
    RETURN_IF_ERROR(ToInt(p.transposed ? std::array<int64_t, 4>{p.c, p.oc / p.groups, p.kh, p.kw}
                                       : std::array<int64_t, 4>{p.oc, p.c / p.groups, p.kh, p.kw},
                          p, f));
    RETURN_IF_ERROR(Check(lib, lib.filter_create(&filter), "CreateFilterDescriptor"));
    RETURN_IF_ERROR(Check(lib, lib.filter_set(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, f),
                          "SetFilterNdDescriptor(weight)"));
    int pad[2], stride[2], dilation[2], groups;
    RETURN_IF_ERROR(ToInt(p.pad, p, pad));
    RETURN_IF_ERROR(ToInt(p.stride, p, stride));
    RETURN_IF_ERROR(ToInt(p.dilation, p, dilation));
    RETURN_IF_ERROR(ToInt({p.groups}, p, &groups));
    RETURN_IF_ERROR(Check(lib, lib.conv_create(&conv), "CreateConvolutionDescriptor"));
    RETURN_IF_ERROR(Check(lib, lib.conv_set(conv, 2, pad, stride, dilation, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                          "SetConvolutionNdDescriptor"));
    RETURN_IF_ERROR(Check(lib, lib.conv_groups(conv, groups), "SetConvolutionGroupCount"));
    return Check(lib, lib.conv_math(conv, CUDNN_FMA_MATH), "SetConvolutionMathType(FMA)");
  }

  // cuDNN's output size of the forward convolution: of `out` from `data`, or (transposed) of
  // `data` from `out`, against ours.
  absl::Status CheckSizes(const ConvProblem& p) const {
    if (conv == nullptr) return absl::OkStatus();
    int got[4];
    RETURN_IF_ERROR(Check(*api, api->conv_out_dim(conv, p.transposed ? out : data, filter, 4, got),
                          "GetConvolutionNdForwardOutputDim"));
    const std::array<int64_t, 4> want =
        p.transposed ? std::array<int64_t, 4>{p.n, p.c, p.h, p.w} : std::array<int64_t, 4>{p.n, p.oc, p.oh, p.ow};
    for (int i = 0; i < 4; ++i) {
      if (got[i] != want[i]) {
        return absl::InvalidArgumentError(absl::StrFormat("cuda: cuDNN sizes %s as [%d, %d, %d, %d], not [%d, %d, %d, %d]",
                                                          p.ToString(), got[0], got[1], got[2], got[3], want[0],
                                                          want[1], want[2], want[3]));
      }
    }
    return absl::OkStatus();
  }
};

// Step 2 of the file comment over either ranking (forward or backward-data): `rank` fills up
// to kCount results, `workspace` sizes one algorithm under the descriptor's FMA math.
template <typename Perf, int kCount, typename Rank, typename Workspace>
absl::StatusOr<std::pair<int, size_t>> ChooseAlgorithm(const Api& api, absl::string_view call, const ConvProblem& p,
                                                       Rank rank, Workspace workspace) {
  Perf perf[kCount];
  int found = 0;
  RETURN_IF_ERROR(Check(api, rank(kCount, &found, perf), call));
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
    size_t bytes = 0;
    if (workspace(perf[i].algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxWorkspace) continue;
    return std::make_pair(static_cast<int>(perf[i].algo), bytes);
  }
  return absl::UnimplementedError(absl::StrCat("cuda: cuDNN has no f32 (non-TF32) algorithm within ",
                                               kMaxWorkspace >> 20, " MiB of workspace for ", p.ToString()));
}

}  // namespace

std::array<int64_t, 19> ConvProblem::Key() const {
  return {transposed, n,         c,      h,      w,           oc,          oh,   ow,  kh, kw,
          groups,     stride[0], stride[1], pad[0], pad[1], dilation[0], dilation[1], bias, relu};
}

std::string ConvProblem::ToString() const {
  return absl::StrFormat("%s [%d, %d, %d, %d] x [%d, %d, %d, %d] -> [%d, %d, %d, %d] (stride [%d, %d], pad [%d, %d], "
                         "dilation [%d, %d], groups %d)",
                         transposed ? "conv_transpose" : "conv", n, c, h, w, transposed ? c : oc,
                         transposed ? oc / groups : c / groups, kh, kw, n, oc, oh, ow, stride[0], stride[1], pad[0],
                         pad[1], dilation[0], dilation[1], groups);
}

absl::StatusOr<std::string> CudnnLibrary() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  return api->path;
}

absl::Status CheckConvDescriptors(const ConvProblem& p) {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  Descriptors d;
  absl::Status s = d.Create(*api, p);
  if (s.code() == absl::StatusCode::kInternal) {  // cuDNN refused a descriptor: say which problem
    return absl::InvalidArgumentError(absl::StrCat(s.message(), " for ", p.ToString()));
  }
  RETURN_IF_ERROR(s);
  return d.CheckSizes(p);
}

struct Convolutions::Impl {
  const Api* api = nullptr;
  cudnnHandle_t handle = nullptr;
  mutable std::mutex mu;
  struct Plan {
    Descriptors desc;
    int algo = 0;
    size_t workspace = 0;
    bool fused = false;  // cudnnConvolutionBiasActivationForward (forward, bias and ReLU)
  };
  std::map<std::array<int64_t, 19>, std::unique_ptr<Plan>> plans;  // guarded by mu

  ~Impl() {
    plans.clear();
    if (handle != nullptr) api->destroy(handle);
  }

  absl::StatusOr<Plan*> PlanFor(const ConvProblem& p) {
    const auto key = p.Key();
    if (auto it = plans.find(key); it != plans.end()) return it->second.get();
    if (plans.size() >= kMaxPlans) plans.clear();  // calls are serialised: no plan is in use
    auto plan = std::make_unique<Plan>();
    RETURN_IF_ERROR(plan->desc.Create(*api, p));
    RETURN_IF_ERROR(plan->desc.CheckSizes(p));
    const Descriptors& d = plan->desc;
    if (d.conv != nullptr && !p.transposed) {
      ASSIGN_OR_RETURN(std::tie(plan->algo, plan->workspace),
                       (ChooseAlgorithm<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
                           *api, "GetConvolutionForwardAlgorithm_v7", p,
                           [&](int count, int* found, cudnnConvolutionFwdAlgoPerf_t* perf) {
                             return api->fwd_algos(handle, d.data, d.filter, d.conv, d.out, count, found, perf);
                           },
                           [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
                             return api->fwd_workspace(handle, d.data, d.filter, d.conv, d.out, a, bytes);
                           })));
      // ReLU fuses with any algorithm, a bias alone (IDENTITY) only with IMPLICIT_PRECOMP_GEMM.
      plan->fused = p.bias && (p.relu || plan->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    } else if (d.conv != nullptr) {
      ASSIGN_OR_RETURN(std::tie(plan->algo, plan->workspace),
                       (ChooseAlgorithm<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
                           *api, "GetConvolutionBackwardDataAlgorithm_v7", p,
                           [&](int count, int* found, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
                             return api->bwd_algos(handle, d.filter, d.data, d.conv, d.out, count, found, perf);
                           },
                           [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
                             return api->bwd_workspace(handle, d.filter, d.data, d.conv, d.out, a, bytes);
                           })));
    }
    Plan* raw = plan.get();
    plans.emplace(key, std::move(plan));
    return raw;
  }

  // The convolution itself (and, fused, its bias and ReLU) into ptr.out; `fused_done` says
  // whether the epilogue ran too.
  absl::Status Convolve(Plan& plan, const ConvProblem& p, const ConvPointers& ptr, void* ws, bool* fused_done) {
    const Descriptors& d = plan.desc;
    const float one = 1.0f, zero = 0.0f;
    *fused_done = false;
    if (d.conv == nullptr) {
      return Check(*api, api->set_tensor(handle, d.out, ptr.out, &zero), "SetTensor");
    }
    if (p.transposed) {
      return Check(*api, api->bwd(handle, &one, d.filter, ptr.weight, d.data, ptr.data, d.conv,
                                  static_cast<cudnnConvolutionBwdDataAlgo_t>(plan.algo), ws, plan.workspace, &zero,
                                  d.out, ptr.out),
                   "ConvolutionBackwardData");
    }
    const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(plan.algo);
    if (plan.fused) {
      // z = out with alpha2 = 0: y = relu(conv(x) + bias), or conv(x) + bias (IDENTITY).
      const cudnnStatus_t s = api->fwd_bias_act(handle, &one, d.data, ptr.data, d.filter, ptr.weight, d.conv, algo,
                                                ws, plan.workspace, &zero, d.out, ptr.out, d.bias, ptr.bias,
                                                p.relu ? d.relu : d.identity, d.out, ptr.out);
      if (s != CUDNN_STATUS_NOT_SUPPORTED) {
        *fused_done = true;
        return Check(*api, s, "ConvolutionBiasActivationForward");
      }
      plan.fused = false;  // this algorithm has no fused form: the three-step path from now on
    }
    return Check(*api, api->fwd(handle, &one, d.data, ptr.data, d.filter, ptr.weight, d.conv, algo, ws,
                                plan.workspace, &zero, d.out, ptr.out),
                 "ConvolutionForward");
  }

  // Bias and ReLU in place on ptr.out.
  absl::Status Epilogue(const Plan& plan, const ConvProblem& p, const ConvPointers& ptr) {
    const Descriptors& d = plan.desc;
    const float one = 1.0f, zero = 0.0f;
    if (p.bias) {
      RETURN_IF_ERROR(Check(*api, api->add_tensor(handle, &one, d.bias, ptr.bias, &one, d.out, ptr.out), "AddTensor"));
    }
    if (p.relu) {
      RETURN_IF_ERROR(Check(*api, api->activation(handle, d.relu, &one, d.out, ptr.out, &zero, d.out, ptr.out),
                            "ActivationForward(relu)"));
    }
    return absl::OkStatus();
  }
};

Convolutions::Convolutions(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Convolutions::~Convolutions() = default;

absl::StatusOr<std::unique_ptr<Convolutions>> Convolutions::Create() {
  ASSIGN_OR_RETURN(const Api* api, LoadApi());
  auto impl = std::make_unique<Impl>();
  impl->api = api;
  RETURN_IF_ERROR(Check(*api, api->create(&impl->handle), "Create"));
  return std::unique_ptr<Convolutions>(new Convolutions(std::move(impl)));
}

int64_t Convolutions::plans() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<int64_t>(impl_->plans.size());
}

absl::Status Convolutions::Run(const ConvProblem& p, const ConvPointers& ptr, void* stream,
                               PoolingAllocator* workspace) {
  if (p.n == 0 || p.oc == 0 || p.oh == 0 || p.ow == 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(impl_->mu);
  const Api& api = *impl_->api;
  // The handle is shared by this instance's calls; its stream is set under the lock.
  RETURN_IF_ERROR(Check(api, api.set_stream(impl_->handle, static_cast<cudaStream_t>(stream)), "SetStream"));
  ASSIGN_OR_RETURN(Impl::Plan * plan, impl_->PlanFor(p));
  PoolingAllocator::Block ws;
  if (plan->workspace > 0) {
    if (workspace == nullptr) return absl::InternalError("cuda conv: no workspace pool");
    ASSIGN_OR_RETURN(ws, workspace->Allocate(plan->workspace));
  }
  bool fused_done = false;
  absl::Status s = impl_->Convolve(*plan, p, ptr, ws.ptr, &fused_done);
  if (ws.ptr != nullptr) workspace->Release(ws);
  RETURN_IF_ERROR(s);
  return fused_done ? absl::OkStatus() : impl_->Epilogue(*plan, p, ptr);
}

}  // namespace hetpass::runtime::cuda_api
