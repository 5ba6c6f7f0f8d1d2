// The dense kernel (nn.dense [+ nn.bias_add] [+ nn.relu] as one fused oneDNN matmul) exists
// because GEMMs decide whether hetpass leads on the seed MLP: the measured choice of library,
// weight prepacking at load and per-M primitive caching are what put it ahead of ONNX Runtime
// (see dense_kernel.h for the design and the figures, bench/gemm_libs for the comparison).
//
// Phases:
//   match        MatchDenseGroup (group_match.h): dense -> [bias_add] -> [relu] over distinct f32
//                parameters (op identity is the kernel library's business: this file binds
//                three registry op names to one library call, nothing else does)
//   instantiate  constants checked against the declared types; constant weights reordered
//                once into the blocked layout oneDNN picks (by creating the M = 1 primitive)
//   run          arguments checked (count, dtype, rank, K, N, output shape); the primitive for
//                this (M, K, N) taken from the instance's cache or created; executed on a
//                per-thread stream with KernelLibraryThreads() OpenMP threads
#include "compile_engine/dense_kernel.h"

#include <omp.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <dnnl.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compile_engine/group_provider.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"
#include "compile_engine/onednn_common.h"

namespace hetpass {
namespace dense_kernel_internal {

int ParseThreadCount(const char* value) {
  if (value == nullptr || *value == '\0') return 1;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || n < 1) return 1;
  return static_cast<int>(std::min<long>(n, 1024));
}

}  // namespace dense_kernel_internal

int KernelLibraryThreads() {
  static const int threads =
      dense_kernel_internal::ParseThreadCount(std::getenv("HETPASS_NUM_THREADS"));
  return threads;
}

namespace {

using namespace ::hetpass::onednn;  // NOLINT: the shared oneDNN helpers
using group_match::DenseGroup;
using group_match::MatchDenseGroup;

using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;

// The registry ops this kernel implements.
constexpr OpId kDenseOp = OpId::kNnDense;

// ---- oneDNN plumbing -----------------------------------------------------------------------





// W[N, K] row-major, seen by oneDNN as the [K, N] weights of src[M, K] x weights[K, N].
memory::desc PlainWeights(int64_t k, int64_t n) {
  return memory::desc({k, n}, DataType::f32, Tag::ba);
}


// ---- instance ------------------------------------------------------------------------------

class DenseInstance final : public KernelInstance {
 public:
  DenseInstance(DenseGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::Status Load(absl::Span<const Tensor* const> constants);
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override;
  bool Absorbed(int param) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return param == group_.weight && weight_ && weight_->absorbed();
  }

 private:
  // One matmul for one (M, K, N); `weights` is the packed constant it runs on (null for
  // run-time weights, which it reads as stored).
  struct Primitive {
    dnnl::matmul matmul;
    std::shared_ptr<const memory> weights;
    // The execute arguments, built once and re-pointed per call (set_data_handle): building
    // oneDNN memory objects costs 0.3-0.7 us each, 4 per call, against a 10 us kernel at
    // M = 1. One caller at a time executes a primitive (see Run).
    mutable std::mutex args_mu;
    mutable std::unordered_map<int, memory> args;  // guarded by args_mu
  };
  using ShapeKey = std::tuple<int64_t, int64_t, int64_t>;

  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(int64_t m, int64_t k, int64_t n);
  // The constant weights in `layout`, reordered on first request. Requires mu_.
  std::shared_ptr<const memory> PackedWeights(const memory::desc& layout);
  absl::Status CheckArg(const TensorArg& a, absl::string_view role, int index, int rank) const;
  // K == 0: the product is zero, the result is the (ReLU'd) bias.
  void RunEmptyReduction(const float* bias, float* out, int64_t m, int64_t n) const;

  const DenseGroup group_;
  const dnnl::engine& engine_;
  std::optional<PackedWeight> weight_;  // the constant weights (held once: onednn_common.h)
  std::optional<Tensor> bias_;    // the constant bias

  mutable std::mutex mu_;
  absl::flat_hash_map<ShapeKey, std::shared_ptr<const Primitive>> cache_;       // guarded by mu_
};

absl::Status DenseInstance::Load(absl::Span<const Tensor* const> constants) {
  const DenseGroup& g = group_;
  if (static_cast<int>(constants.size()) != g.num_params) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected %d constants (one per parameter, null if not constant), got %d", g.function,
        g.num_params, constants.size()));
  }
  // A constant must fit the declared type: f32, the rank, and every static dim.
  auto check = [&](int param, absl::string_view role) -> absl::Status {
    const Tensor* t = constants[param];
    const Type& declared = g.param_types[param];
    bool ok = t->dtype() == DType::kF32 && t->rank() == declared.rank();
    for (int d = 0; ok && d < t->rank(); ++d) {
      const DimExpr& dim = declared.shape()[d];
      ok = !dim.is_constant() || dim.constant() == t->shape()[d];
    }
    if (ok) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: constant %s is %s%s but the parameter is declared %s", g.function, g.Arg(role, param),
        DTypeName(t->dtype()), ShapeString(t->shape()), declared.ToString()));
  };
  if (constants[g.weight] != nullptr) {
    RETURN_IF_ERROR(check(g.weight, "weight"));
    weight_.emplace(*constants[g.weight], engine_);
  }
  if (g.has_bias() && constants[g.bias] != nullptr) {
    RETURN_IF_ERROR(check(g.bias, "bias"));
    bias_ = *constants[g.bias];
    if (weight_ && bias_->shape()[0] != weight_->shape()[0]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: constant %s has %d elements but constant %s has %d rows", g.function,
                          g.Arg("bias", g.bias), bias_->shape()[0], g.Arg("weight", g.weight),
                          weight_->shape()[0]));
    }
  }
  // Prepack now, at load: the M = 1 primitive reorders the weights into the layout oneDNN
  // picks (the same for every M on the machines measured; others repack lazily).
  if (weight_ && weight_->num_elements() > 0) {
    ASSIGN_OR_RETURN(auto primitive, GetPrimitive(1, weight_->shape()[1], weight_->shape()[0]));
    (void)primitive;
  }
  return absl::OkStatus();
}

std::shared_ptr<const memory> DenseInstance::PackedWeights(const memory::desc& layout) {
  return weight_->Get(PlainWeights(weight_->shape()[1], weight_->shape()[0]), layout);
}

absl::StatusOr<std::shared_ptr<const DenseInstance::Primitive>> DenseInstance::GetPrimitive(
    int64_t m, int64_t k, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  const ShapeKey key(m, k, n);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (cache_.size() >= static_cast<size_t>(dense_kernel_internal::kMaxCachedShapes)) {
    cache_.clear();  // in-flight runs keep their primitives alive (shared_ptr)
  }
  try {
    ScopedLibraryThreads threads;  // oneDNN sizes its blocking for the thread count it sees
    const memory::desc src({m, k}, DataType::f32, Tag::ab);
    const memory::desc dst({m, n}, DataType::f32, Tag::ab);
    const memory::desc weights =
        weight_ ? memory::desc({k, n}, DataType::f32, Tag::any) : PlainWeights(k, n);
    dnnl::primitive_attr attr;
    if (group_.relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::desc desc =
        group_.has_bias()
            ? dnnl::matmul::desc(src, weights, memory::desc({1, n}, DataType::f32, Tag::ab), dst)
            : dnnl::matmul::desc(src, weights, dst);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine_);
    auto primitive = std::make_shared<Primitive>();
    primitive->matmul = dnnl::matmul(pd);
    if (weight_) primitive->weights = PackedWeights(pd.weights_desc());
    cache_.emplace(key, primitive);
    return std::shared_ptr<const Primitive>(std::move(primitive));
  } catch (const std::exception& e) {
    return LibraryError(group_.function, e);
  }
}

absl::Status DenseInstance::CheckArg(const TensorArg& a, absl::string_view role, int index,
                                  int rank) const {
  return CheckF32Arg(group_.function,
                     index < group_.num_params ? group_.Arg(role, index) : std::string(role),
                     role, a, rank,
                     // Constant weights run from the instance's pack, never from the argument.
                     /*needs_data=*/!(index == group_.weight && weight_));
}

void DenseInstance::RunEmptyReduction(const float* bias, float* out, int64_t m, int64_t n) const {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float v = bias != nullptr ? bias[j] : 0.0f;
      if (group_.relu) v = std::max(v, 0.0f);
      out[i * n + j] = v;
    }
  }
}

absl::Status DenseInstance::Run(const KernelContext& ctx, absl::Span<const TensorArg> args) {
  const DenseGroup& g = group_;
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d", g.function,
                        g.num_params + 1, g.num_params, args.size()));
  }
  const TensorArg& x = args[g.data];
  const TensorArg& w = args[g.weight];
  const TensorArg& y = args[g.num_params];
  RETURN_IF_ERROR(CheckArg(x, "data", g.data, g.data_rank));
  RETURN_IF_ERROR(CheckArg(w, "weight", g.weight, 2));
  RETURN_IF_ERROR(CheckArg(y, "result", g.num_params, g.data_rank));
  int64_t m = 1;
  for (int d = 0; d + 1 < g.data_rank; ++d) m *= x.shape[d];
  const int64_t k = x.shape[g.data_rank - 1], n = w.shape[0];
  if (w.shape[1] != k) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: nn.dense reduction dims differ: %s is %s but %s is %s", g.function,
                        g.Arg("data", g.data), ShapeString(x.shape), g.Arg("weight", g.weight),
                        ShapeString(w.shape)));
  }
  if (weight_ && !std::equal(w.shape.begin(), w.shape.end(), weight_->shape().begin(),
                             weight_->shape().end())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is %s but the constant bound at load is %s", g.function, g.Arg("weight", g.weight),
        ShapeString(w.shape), ShapeString(weight_->shape())));
  }
  const float* bias_data = nullptr;
  if (g.has_bias()) {
    const TensorArg& b = args[g.bias];
    RETURN_IF_ERROR(CheckArg(b, "bias", g.bias, 1));
    if (b.shape[0] != n) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s has %d elements but %s has %d rows",
                                                        g.function, g.Arg("bias", g.bias),
                                                        b.shape[0], g.Arg("weight", g.weight), n));
    }
    if (bias_ && bias_->shape()[0] != n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: %s has %d rows but the constant %s bound at load has %d elements", g.function,
          g.Arg("weight", g.weight), n, g.Arg("bias", g.bias), bias_->shape()[0]));
    }
    bias_data = bias_ ? bias_->data_as<float>() : b.as<const float>();
  }
  if (!std::equal(y.shape.begin(), y.shape.end() - 1, x.shape.begin()) || y.shape.back() != n) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: result is %s for data %s and %d units",
                                                      g.function, ShapeString(y.shape),
                                                      ShapeString(x.shape), n));
  }
  if (m == 0 || n == 0) return absl::OkStatus();
  if (k == 0) {
    RunEmptyReduction(bias_data, y.as<float>(), m, n);
    return absl::OkStatus();
  }

  ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> primitive, GetPrimitive(m, k, n));
  // Argument data pointers; the packed constant weights are already in `primitive->weights`.
  std::pair<int, void*> handles[4] = {{DNNL_ARG_SRC, x.data}, {DNNL_ARG_DST, y.data}};
  int num_handles = 2;
  if (!primitive->weights) handles[num_handles++] = {DNNL_ARG_WEIGHTS, w.data};
  if (g.has_bias()) handles[num_handles++] = {DNNL_ARG_BIAS, const_cast<float*>(bias_data)};
  try {
    ScopedLibraryThreads threads;
    auto make_args = [&] {
      std::unordered_map<int, memory> margs;
      margs.emplace(DNNL_ARG_SRC, memory({{m, k}, DataType::f32, Tag::ab}, engine_, x.data));
      margs.emplace(DNNL_ARG_DST, memory({{m, n}, DataType::f32, Tag::ab}, engine_, y.data));
      margs.emplace(DNNL_ARG_WEIGHTS, primitive->weights
                                          ? *primitive->weights
                                          : memory(PlainWeights(k, n), engine_, w.data));
      if (g.has_bias()) {
        margs.emplace(DNNL_ARG_BIAS, memory({{1, n}, DataType::f32, Tag::ab}, engine_,
                                            const_cast<float*>(bias_data)));
      }
      return margs;
    };
    dnnl::stream& stream = ThreadStream(engine_);
    // Executions of one primitive are serialised: oneDNN's library-managed scratchpad is not
    // safe for concurrent executions of the same primitive (a two-thread test got wrong
    // results in about one run in four with a try-lock and private arguments).
    std::lock_guard<std::mutex> lock(primitive->args_mu);
    if (primitive->args.empty()) {
      primitive->args = make_args();
    } else {
      for (int i = 0; i < num_handles; ++i) {
        primitive->args.at(handles[i].first).set_data_handle(handles[i].second);
      }
    }
    primitive->matmul.execute(stream, primitive->args);
    stream.wait();
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
  return absl::OkStatus();
}

// ---- compiled kernel -----------------------------------------------------------------------

class DenseKernel final : public CompiledKernel {
 public:
  DenseKernel(DenseGroup group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    auto instance = std::make_unique<DenseInstance>(group_, engine_);
    RETURN_IF_ERROR(instance->Load(constants));
    return std::unique_ptr<KernelInstance>(std::move(instance));
  }

  std::string Describe() const override {
    std::vector<std::string> fused;
    if (group_.has_bias()) fused.push_back("bias");
    if (group_.relu) fused.push_back("relu");
    std::string s = "onednn matmul";
    if (!fused.empty()) absl::StrAppend(&s, "[", absl::StrJoin(fused, ","), "]");
    absl::StrAppend(&s, " packed");
    return s;
  }

 private:
  const DenseGroup group_;
  const dnnl::engine& engine_;
};

}  // namespace

bool IsDenseGroup(const Function& primitive) { return MatchDenseGroup(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileDenseGroup(const Function& primitive) {
  std::optional<DenseGroup> group = MatchDenseGroup(primitive);
  if (!group) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "@%s: not a dense group (a primitive function of nn.dense over f32[M, K] x f32[N, K], "
        "optionally nn.bias_add on the last axis, then optionally nn.relu)",
        primitive.name()));
  }
  const dnnl::engine* engine = CpuEngine();
  if (engine == nullptr) {
    return absl::InternalError(absl::StrFormat("@%s: onednn: no cpu engine", primitive.name()));
  }
  return std::unique_ptr<CompiledKernel>(std::make_unique<DenseKernel>(*std::move(group), *engine));
}


namespace {
bool DenseRuns(const OpDef& op) { return OpIdOf(op) == kDenseOp; }
bool DenseFuses(const OpDef& op) {
  return OpIdOf(op) == kDenseOp || IsEpilogueOp(OpIdOf(op), /*allow_add=*/true);
}
}  // namespace

const KernelProvider& DenseKernelProvider() {
  static const GroupProvider provider({"onednn.dense", kNeedsKernelLibrary, &IsDenseGroup,
                                       &CompileDenseGroup, &DenseRuns, &DenseFuses});
  return provider;
}

}  // namespace hetpass
