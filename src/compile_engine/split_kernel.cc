// Library head + JIT tail: a fused group whose body starts with ops the kernel library runs
// (dense / conv2d with their bias and ReLU) and continues with elementwise ops (a residual add,
// an activation the library does not fuse) runs as two kernels over the same output buffer:
// the library writes the head's result into the group's output, then the JIT-compiled tail
// updates it in place. No intermediate buffer, and no reference kernel on the hot path. The
// mechanism is the same on every device, over that device's providers: oneDNN + the LLVM JIT
// on the host ("onednn+llvm.split"), cuBLASLt or cuDNN + NVPTX on cuda ("cublaslt/cudnn+nvptx.split":
// a ResNet block's conv + bias + residual add + ReLU is a cuDNN convolution with its bias and an
// NVPTX add + ReLU).
//
// The split: the longest prefix that the library accepts whose last result is the only value
// the tail reads from it, with a tail the JIT accepts whose result has the head result's type
// (so the in-place update is exact). Both halves are rebuilt as primitive functions (text IR,
// parsed into a module the kernel owns) and compiled by the ordinary paths.
#include "compile_engine/split_kernel.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/conv_kernel.h"
#include "compile_engine/cuda/cublaslt_dense.h"
#include "compile_engine/cuda/cudnn_conv.h"
#include "compile_engine/cuda/nvptx_kernel.h"
#include "compile_engine/dense_kernel.h"
#include "compile_engine/jit/kernels.h"
#include "compile_engine/group_provider.h"
#include "passes/ir/parser.h"
#include "passes/ir/printer.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

struct Half {
  std::string text;
  std::vector<int> params;  // original parameter index per half parameter (-1: the head result)
};

// `nodes` as a primitive function over the original parameters they use; `extra` (the head
// result, for the tail) comes first when given.
Half Build(const Function& f, const ValueNames& names, const std::vector<const Node*>& nodes,
           const Value* extra, const std::string& name) {
  std::set<const Value*> defined;
  for (const Node* n : nodes) {
    for (const auto& r : n->results()) defined.insert(r.get());
  }
  Half h;
  std::vector<std::string> decls;
  if (extra != nullptr) {
    h.params.push_back(-1);
    decls.push_back(absl::StrCat(names.Name(extra), ": ", extra->type().ToString()));
  }
  std::set<const Value*> seen;
  for (const Node* n : nodes) {
    for (const Value* v : n->operands()) {
      if (v == extra || defined.count(v) || !seen.insert(v).second || !v->is_param()) continue;
      h.params.push_back(v->index());
      decls.push_back(absl::StrCat(names.Name(v), ": ", v->type().ToString()));
    }
  }
  std::string body;
  for (const Node* n : nodes) {
    std::vector<std::string> ops;
    for (const Value* v : n->operands()) ops.push_back(names.Name(v));
    const std::string attrs = n->attrs().ToString();
    absl::StrAppend(&body, "  ", names.Name(n->result()), " = ", n->OpName(), "(",
                    absl::StrJoin(ops, ", "), ")", attrs.empty() ? "" : " " + attrs, " : ",
                    n->result()->type().ToString(), "\n");
  }
  const Value* result = nodes.back()->result();
  h.text = absl::StrCat("def @", name, "(", absl::StrJoin(decls, ", "), ") -> ",
                        result->type().ToString(), " attributes {primitive = true} {\n", body,
                        "  return ", names.Name(result), "\n}\n");
  return h;
}

class SplitInstance : public KernelInstance {
 public:
  SplitInstance(std::unique_ptr<KernelInstance> head, std::unique_ptr<KernelInstance> tail,
                const Half* h, const Half* t)
      : head_(std::move(head)), tail_(std::move(tail)), h_(h), t_(t) {}

  absl::Status Run(const KernelContext& ctx, absl::Span<const TensorArg> args) override {
    const TensorArg& out = args.back();
    head_args_.clear();
    for (int p : h_->params) head_args_.push_back(args[p]);
    head_args_.push_back(out);
    RETURN_IF_ERROR(head_->Run(ctx, head_args_));
    tail_args_.clear();
    for (int p : t_->params) tail_args_.push_back(p < 0 ? out : args[p]);
    tail_args_.push_back(out);
    return tail_->Run(ctx, tail_args_);
  }
  // Absorbed when every half that takes the parameter absorbed it (a dense weight: the head's).
  bool Absorbed(int param) const override {
    bool used = false;
    for (const auto& [half, instance] : {std::pair{h_, head_.get()}, std::pair{t_, tail_.get()}}) {
      for (size_t i = 0; i < half->params.size(); ++i) {
        if (half->params[i] != param) continue;
        if (!instance->Absorbed(static_cast<int>(i))) return false;
        used = true;
      }
    }
    return used;
  }

 private:
  std::unique_ptr<KernelInstance> head_, tail_;
  const Half* h_;
  const Half* t_;
  std::vector<TensorArg> head_args_, tail_args_;
};

class SplitKernel : public CompiledKernel {
 public:
  SplitKernel(std::unique_ptr<Module> module, Half head, Half tail,
              std::unique_ptr<CompiledKernel> head_kernel, std::unique_ptr<CompiledKernel> tail_kernel)
      : module_(std::move(module)), head_(std::move(head)), tail_(std::move(tail)),
        head_kernel_(std::move(head_kernel)), tail_kernel_(std::move(tail_kernel)) {}

  absl::StatusOr<std::unique_ptr<KernelInstance>> Instantiate(
      const KernelContext& ctx, absl::Span<const Tensor* const> constants) const override {
    auto pick = [&](const Half& h) {
      std::vector<const Tensor*> c;
      for (int p : h.params) c.push_back(p >= 0 && p < static_cast<int>(constants.size()) ? constants[p] : nullptr);
      return c;
    };
    ASSIGN_OR_RETURN(auto head, head_kernel_->Instantiate(ctx, pick(head_)));
    ASSIGN_OR_RETURN(auto tail, tail_kernel_->Instantiate(ctx, pick(tail_)));
    return std::make_unique<SplitInstance>(std::move(head), std::move(tail), &head_, &tail_);
  }
  std::string Describe() const override {
    return absl::StrCat(head_kernel_->Describe(), " + in-place ", tail_kernel_->Describe());
  }
  std::string Listing() const override { return absl::StrCat(head_kernel_->Listing(), tail_kernel_->Listing()); }

 private:
  std::unique_ptr<Module> module_;  // owns the two half functions the kernels were built from
  Half head_, tail_;
  std::unique_ptr<CompiledKernel> head_kernel_, tail_kernel_;
};

}  // namespace

namespace {

// The split CompileHeadTail makes: the halves (functions in `module`) and their kernels.
struct Split {
  std::unique_ptr<Module> module;
  Half head, tail;
  std::unique_ptr<CompiledKernel> head_kernel, tail_kernel;
};

// `compile` false: only whether some split is taken (the providers' Takes, no code made; the
// kernels stay null), for fuse-ops' questions, which must not pay a compile each.
absl::StatusOr<Split> FindSplit(const Function& f, absl::Span<const KernelProvider* const> heads,
                                const KernelProvider& tail, const KernelTarget& target, bool compile = true) {
  const Block& body = f.body();
  std::vector<const Node*> nodes;
  for (const auto& n : body.nodes()) {
    if (n->kind() != NodeKind::kCall || n->num_results() != 1) {
      return absl::UnimplementedError("not a chain of single-result calls");
    }
    nodes.push_back(n.get());
  }
  if (nodes.size() < 2 || body.results().size() != 1 || body.results()[0] != nodes.back()->result()) {
    return absl::UnimplementedError("no head and tail");
  }
  const ValueNames names(f);
  for (size_t k = nodes.size() - 1; k >= 1; --k) {
    const std::vector<const Node*> head(nodes.begin(), nodes.begin() + k);
    const std::vector<const Node*> tail_nodes(nodes.begin() + k, nodes.end());
    const Value* joint = head.back()->result();
    if (joint->type() != nodes.back()->result()->type()) continue;
    // The tail may read only the head's last result, never its intermediates.
    bool clean = true;
    std::set<const Value*> head_values;
    for (const Node* n : head) head_values.insert(n->result());
    for (const Node* n : tail_nodes) {
      for (const Value* v : n->operands()) clean &= (v == joint || !head_values.count(v));
    }
    if (!clean) continue;
    Split split;
    split.head = Build(f, names, head, nullptr, "head");
    split.tail = Build(f, names, tail_nodes, joint, "tail");
    auto module = ParseModule(absl::StrCat(split.head.text, "\n", split.tail.text));
    if (!module.ok()) continue;
    const Function& hf = *(*module)->FindFunction("head");
    const Function& tf = *(*module)->FindFunction("tail");
    // Elementwise tails only: each element is read and written at the same index, which is what
    // makes the in-place update exact.
    if (!IsJitElementwise(tf)) continue;
    if (!compile) {
      bool head_taken = false;
      for (const KernelProvider* p : heads) head_taken = head_taken || p->Takes(hf, target);
      if (!head_taken || !tail.Takes(tf, target)) continue;
      split.module = *std::move(module);
      return split;
    }
    for (const KernelProvider* p : heads) {
      auto k = p->TryCompile(hf, target);
      if (k.ok()) {
        split.head_kernel = *std::move(k);
        break;
      }
    }
    if (split.head_kernel == nullptr) continue;
    ASSIGN_OR_RETURN(split.tail_kernel, tail.TryCompile(tf, target));
    split.module = *std::move(module);
    return split;
  }
  return absl::UnimplementedError("no library head with an elementwise tail");
}

// cuda's heads: cuBLASLt dense, cuDNN conv2d.
absl::Span<const KernelProvider* const> CudaHeads() {
  static const KernelProvider* const kHeads[] = {&cuda::CublasLtDenseProvider(), &cuda::CudnnConvProvider()};
  return kHeads;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileHeadTail(
    const Function& f, absl::Span<const KernelProvider* const> heads, const KernelProvider& tail,
    const KernelTarget& target) {
  ASSIGN_OR_RETURN(Split split, FindSplit(f, heads, tail, target));
  return std::make_unique<SplitKernel>(std::move(split.module), std::move(split.head), std::move(split.tail),
                                       std::move(split.head_kernel), std::move(split.tail_kernel));
}

absl::StatusOr<SplitHead> CudaSplitHead(const Function& f) {
  ASSIGN_OR_RETURN(Split split, FindSplit(f, CudaHeads(), cuda::NvptxProvider(), KernelTarget()));
  SplitHead h;
  h.head = split.module->FindFunction("head");
  h.module = std::move(split.module);
  h.params = std::move(split.head.params);
  return h;
}

namespace {

// A split provider over `heads` (tried in order) and `tail`: runs no op alone, fuses what its
// halves fuse.
class SplitProvider final : public KernelProvider {
 public:
  SplitProvider(absl::string_view name, std::vector<const KernelProvider*> heads, const KernelProvider& tail)
      : name_(name), heads_(std::move(heads)), tail_(tail) {}
  absl::string_view name() const override { return name_; }
  uint8_t needs() const override {
    uint8_t n = tail_.needs();
    for (const KernelProvider* h : heads_) n |= h->needs();
    return n;
  }
  absl::StatusOr<std::unique_ptr<CompiledKernel>> TryCompile(const Function& primitive,
                                                             const KernelTarget& target) const override {
    return CompileHeadTail(primitive, heads_, tail_, target);
  }
  bool Takes(const Function& primitive, const KernelTarget& target) const override {
    // A head starts with an op a head provider runs (a convolution, a dense): most groups
    // fuse-ops asks about are not, and FindSplit prints and parses each candidate split.
    const auto& nodes = primitive.body().nodes();
    if (nodes.empty() || nodes.front()->kind() != NodeKind::kCall || nodes.front()->op() == nullptr) return false;
    bool head_op = false;
    for (const KernelProvider* h : heads_) head_op = head_op || h->Runs(*nodes.front()->op());
    return head_op && FindSplit(primitive, heads_, tail_, target, /*compile=*/false).ok();
  }
  bool Runs(const OpDef&) const override { return false; }
  bool Fuses(const OpDef& op) const override {
    if (tail_.Fuses(op)) return true;
    for (const KernelProvider* h : heads_) {
      if (h->Fuses(op)) return true;
    }
    return false;
  }

 private:
  absl::string_view name_;
  std::vector<const KernelProvider*> heads_;
  const KernelProvider& tail_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledKernel>> CompileLibraryHeadJitTail(const Function& f) {
  static const KernelProvider* const kHeads[] = {&DenseKernelProvider(), &ConvKernelProvider()};
  return CompileHeadTail(f, kHeads, JitElementwiseProvider());
}

const KernelProvider& SplitKernelProvider() {
  static const SplitProvider provider("onednn+llvm.split", {&DenseKernelProvider(), &ConvKernelProvider()},
                                      JitElementwiseProvider());
  return provider;
}

const KernelProvider& CudaSplitKernelProvider() {
  static const SplitProvider provider("cublaslt/cudnn+nvptx.split", {CudaHeads().begin(), CudaHeads().end()},
                                      cuda::NvptxProvider());
  return provider;
}

}  // namespace hetpass
