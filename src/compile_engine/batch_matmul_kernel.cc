// The batched-GEMM kernel (nn.batch_matmul as one oneDNN matmul over every batch); see
// batch_matmul_kernel.h for why it exists and its design.
//
// Phases:
//   match  the body is one nn.batch_matmul of two f32 parameters (the same one twice is fine),
//          whose result is the function's result
//   run    arguments checked (count, dtype, rank, K, batch broadcast, output shape); both
//          operands padded with leading 1s to the output rank, as oneDNN wants equal ranks
//          (a 1 is a broadcast batch dim to it, as to NumPy); the primitive for these dims
//          taken from the instance's cache or created; executed on a per-thread stream and
//          user scratchpad with KernelLibraryThreads() OpenMP threads
#include "compile_engine/batch_matmul_kernel.h"

#include <algorithm>
#include <cstring>
#include <dnnl.hpp>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"
#include "compile_engine/dense_kernel.h"
#include "compile_engine/onednn_common.h"
#include "compile_engine/group_match.h"
#include "compile_engine/group_provider.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

using namespace ::hetpass::onednn;  // NOLINT: the shared oneDNN helpers

using dnnl::memory;
using DataType = memory::data_type;

constexpr OpId kBatchMatmulOp = OpId::kNnBatchMatmul;
constexpr int kMaxRank = DNNL_MAX_NDIMS;
// Primitives cached per instance before the cache restarts (as the dense kernel).
constexpr size_t kMaxCachedShapes = 64;

using Group = group_match::BatchMatmulGroup;

std::optional<Group> Match(const Function& f) { return group_match::MatchBatchMatmulGroup(f, kMaxRank); }

class BatchMatmulInstance final : public KernelInstance {
 public:
  BatchMatmulInstance(const Group& group, const dnnl::engine& engine)
      : group_(group), engine_(engine) {}
  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override;

 private:
  struct Primitive {
    dnnl::matmul matmul;
    memory::desc src, weights, dst;
    size_t scratchpad_bytes = 0;
  };
  // Key: a's padded dims then b's padded dims.
  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(const memory::dims& a,
                                                                const memory::dims& b,
                                                                const memory::dims& c);
  absl::Status CheckArg(const TensorArg& t, absl::string_view role, int index, int rank) const;

  const Group& group_;
  const dnnl::engine& engine_;
  std::mutex mu_;
  absl::flat_hash_map<std::vector<int64_t>, std::shared_ptr<const Primitive>> cache_;  // mu_
};

absl::Status BatchMatmulInstance::CheckArg(const TensorArg& t, absl::string_view role, int index,
                                           int rank) const {
  const std::string name =
      index < group_.num_params ? group_.Arg(role, index) : std::string(role);
  return CheckF32Arg(group_.function, name, name, t, rank);
}

absl::StatusOr<std::shared_ptr<const BatchMatmulInstance::Primitive>>
BatchMatmulInstance::GetPrimitive(const memory::dims& a, const memory::dims& b,
                                  const memory::dims& c) {
  std::vector<int64_t> key(a.begin(), a.end());
  key.insert(key.end(), b.begin(), b.end());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCachedShapes) cache_.clear();  // running calls hold theirs
  try {
    ScopedLibraryThreads threads;
    auto p = std::make_shared<Primitive>();
    // Plain row-major layouts: strides from the dims (memory::desc's default for dims+tag-less
    // construction is not available in 2.6, so give the strides explicitly).
    auto row_major = [](const memory::dims& d) {
      memory::dims strides(d.size(), 1);
      for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) {
        strides[i] = strides[i + 1] * std::max<int64_t>(d[i + 1], 1);
      }
      return memory::desc(d, DataType::f32, strides);
    };
    p->src = row_major(a);
    p->weights = row_major(b);
    p->dst = row_major(c);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p->src, p->weights, p->dst), attr,
                                          engine_);
    p->matmul = dnnl::matmul(pd);
    p->scratchpad_bytes = pd.scratchpad_desc().get_size();
    std::shared_ptr<const Primitive> shared = std::move(p);
    cache_.emplace(std::move(key), shared);
    return shared;
  } catch (const std::exception& e) {
    return LibraryError(group_.function, e);
  }
}

absl::Status BatchMatmulInstance::Run(const KernelContext& ctx, absl::Span<const TensorArg> args) {
  const Group& g = group_;
  if (static_cast<int>(args.size()) != g.num_params + 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d arguments (%d parameters, 1 result), got %d", g.function,
                        g.num_params + 1, g.num_params, args.size()));
  }
  const TensorArg& a = args[g.a];
  const TensorArg& b = args[g.b];
  const TensorArg& c = args[g.num_params];
  RETURN_IF_ERROR(CheckArg(a, "a", g.a, g.a_rank));
  RETURN_IF_ERROR(CheckArg(b, "b", g.b, g.b_rank));
  RETURN_IF_ERROR(CheckArg(c, "result", g.num_params, g.out_rank));
  // Pad to the output rank with leading 1s; check K and the NumPy broadcast of batch dims.
  const int r = g.out_rank;
  std::vector<int64_t> ad, bd;
  const std::optional<std::vector<int64_t>> want = group_match::BatchMatmulShape(a.shape, b.shape, &ad, &bd);
  if (!want) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: nn.batch_matmul operands do not match: %s is %s, %s is %s", g.function,
        g.Arg("a", g.a), ShapeString(a.shape), g.Arg("b", g.b), ShapeString(b.shape)));
  }
  const int64_t k = ad[r - 1];
  if (!std::equal(want->begin(), want->end(), c.shape.begin(), c.shape.end())) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: result is %s for a %s and b %s",
                                                      g.function, ShapeString(c.shape),
                                                      ShapeString(a.shape), ShapeString(b.shape)));
  }
  if (c.num_elements() == 0) return absl::OkStatus();
  if (k == 0) {  // an empty sum: oneDNN rejects zero dims
    std::memset(c.data, 0, static_cast<size_t>(c.num_elements()) * sizeof(float));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const Primitive> p, GetPrimitive(ad, bd, *want));
  try {
    ScopedLibraryThreads threads;
    dnnl::stream& stream = ThreadStream(engine_);
    std::unordered_map<int, memory> margs;
    margs.emplace(DNNL_ARG_SRC, memory(p->src, engine_, a.data));
    margs.emplace(DNNL_ARG_WEIGHTS, memory(p->weights, engine_, b.data));
    margs.emplace(DNNL_ARG_DST, memory(p->dst, engine_, c.data));
    if (p->scratchpad_bytes > 0) {
      margs.emplace(DNNL_ARG_SCRATCHPAD,
                    memory({{static_cast<int64_t>(p->scratchpad_bytes)}, DataType::u8,
                            memory::format_tag::a},
                           engine_, ThreadScratch(p->scratchpad_bytes)));
    }
    p->matmul.execute(stream, margs);
    stream.wait();
  } catch (const std::exception& e) {
    return LibraryError(g.function, e);
  }
  return absl::OkStatus();
}

class BatchMatmulKernel final : public CompiledKernel {
 public:
  BatchMatmulKernel(Group group, const dnnl::engine& engine)
      : group_(std::move(group)), engine_(engine) {}
  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const>) const override {
    return std::unique_ptr<KernelInstance>(std::make_unique<BatchMatmulInstance>(group_, engine_));
  }
  std::string Describe() const override { return "onednn matmul[batched]"; }

 private:
  const Group group_;
  const dnnl::engine& engine_;
};

}  // namespace

bool IsBatchMatmulGroup(const Function& primitive) { return Match(primitive).has_value(); }

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileBatchMatmulGroup(const Function& primitive) {
  std::optional<Group> group = Match(primitive);
  if (!group) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "@%s: not a batch_matmul group (one nn.batch_matmul of two f32 parameters of rank "
        "2..%d)",
        primitive.name(), kMaxRank));
  }
  const dnnl::engine* engine = CpuEngine();
  if (engine == nullptr) {
    return absl::InternalError(absl::StrFormat("@%s: onednn: no cpu engine", primitive.name()));
  }
  return std::unique_ptr<CompiledKernel>(
      std::make_unique<BatchMatmulKernel>(*std::move(group), *engine));
}


namespace {
bool BatchMatmulRuns(const OpDef& op) { return OpIdOf(op) == kBatchMatmulOp; }
}  // namespace

const KernelProvider& BatchMatmulKernelProvider() {
  static const GroupProvider provider({"onednn.batch_matmul", kNeedsKernelLibrary,
                                       &IsBatchMatmulGroup, &CompileBatchMatmulGroup,
                                       &BatchMatmulRuns, nullptr});
  return provider;
}

}  // namespace hetpass
