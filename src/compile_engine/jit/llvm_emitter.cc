// Phase 3 of the CPU JIT (see lowering.cc for the algorithm): LLVM IR for a plan. The
// elementwise module has the `fast` entry (inner strides the static constants, vectorisable)
// and, unless every shape is static, the `generic` one (every stride at run time); the
// injective module has one scalar entry, plus `wide` when a reshape divides by a run-time dim.
// The NVPTX module (the cuda device) evaluates the same expression per output element, one
// element per GPU thread in a grid-stride loop (EmitGpuEntry).
#include "compile_engine/jit/llvm_emitter.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

namespace hetpass::jit_internal {
namespace {

class Emitter {
 public:
  Emitter(const Plan& plan, const Lowered& lowered, llvm::Module& module)
      : plan_(plan),
        lowered_(lowered),
        module_(module),
        ctx_(module.getContext()),
        b_(ctx_),
        i1_(llvm::Type::getInt1Ty(ctx_)),
        i8_(llvm::Type::getInt8Ty(ctx_)),
        i32_(llvm::Type::getInt32Ty(ctx_)),
        i64_(llvm::Type::getInt64Ty(ctx_)),
        ptr_(llvm::PointerType::getUnqual(ctx_)) {}

  // Emits one entry point; `fast` selects the constant-inner-stride variant.
  void EmitEntry(const std::string& name, bool fast) {
    fast_ = fast;
    auto* type = llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    MarkMetadataArrays();
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);

    const int depth = lowered_.depth;
    const int slots = static_cast<int>(lowered_.accesses.size()) + 1;
    llvm::Value* bases = fn_->getArg(0);
    llvm::Value* dims = fn_->getArg(1);
    llvm::Value* strides = fn_->getArg(2);
    std::vector<llvm::Value*> base(slots);
    for (int s = 0; s < slots; ++s) {
      base[s] = b_.CreateAlignedLoad(ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, bases, s),
                                     llvm::Align(8), absl::StrCat("base", s));
    }
    dims_.assign(depth, nullptr);
    strides_.assign(slots, std::vector<llvm::Value*>(depth, nullptr));
    for (int d = 0; d < depth; ++d) {
      dims_[d] = b_.CreateAlignedLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, dims, d),
                                      llvm::Align(8), absl::StrCat("dim", d));
      for (int s = 0; s < slots; ++s) {
        if (fast_ && d == depth - 1) {
          const bool one = s == 0 || lowered_.accesses[s - 1].inner_contiguous;
          strides_[s][d] = b_.getInt64(one ? 1 : 0);
        } else {
          strides_[s][d] = b_.CreateAlignedLoad(
              i64_, b_.CreateConstInBoundsGEP1_64(i64_, strides, s * depth + d), llvm::Align(8),
              absl::StrCat("stride", s, "_", d));
        }
      }
    }
    flag_ = nullptr;
    if (lowered_.divides_integers) {
      flag_ = b_.CreateAlloca(i32_, nullptr, "flags");
      b_.CreateStore(b_.getInt32(0), flag_);
    }
    access_group_ = llvm::MDNode::getDistinct(ctx_, {});
    inner_loop_id_ = MakeLoopId();

    EmitLevel(0, base);
    llvm::Value* flags = b_.getInt32(0);
    if (flag_ != nullptr) flags = b_.CreateLoad(i32_, flag_);
    b_.CreateRet(flags);
  }

  // The injective path's entry point: i32 name(ptr bases, ptr dims, ptr aux), a scalar loop
  // nest over the output; bases[0] is the output, bases[1 + p] parameter p.
  void EmitInjectiveEntry(const std::string& name, const InjectiveLayout& layout, bool wide) {
    fast_ = false;
    wide_ = wide;
    auto* type = llvm::FunctionType::get(i32_, {ptr_, ptr_, ptr_}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    MarkMetadataArrays();
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn_));
    LoadInjectiveState(fn_->getArg(0), fn_->getArg(1), fn_->getArg(2), layout);
    std::vector<llvm::Value*> idx;
    EmitInjectiveLevel(idx, b_.getInt64(0));
    b_.CreateRet(b_.CreateLoad(i32_, flag_));
  }

  // The GPU entry point (NVPTX) of the same plan:
  //   void name(byval [P x ptr] bases, byval [D x i64] dims, byval [A x i64] aux, ptr error,
  //             i64 total)
  // The three arrays travel in the launch's parameter space (by value, as a CUDA kernel's struct
  // arguments do), so a launch needs no device copy of its metadata. Each thread evaluates the
  // output elements tid, tid + stride, ... < total (a grid-stride loop), delinearising its linear
  // index over the output dims (32-bit arithmetic unless `wide`), and ORs any error flag into
  // the device's error word, which the device checks at its next synchronisation.
  void EmitGpuEntry(const std::string& name, const InjectiveLayout& layout, bool wide) {
    fast_ = false;
    wide_ = wide;
    gpu_ = true;
    const int np = plan_.num_params;
    auto* bases_type = llvm::ArrayType::get(ptr_, np + 1);
    auto* dims_type = llvm::ArrayType::get(i64_, std::max(layout.num_dims, 1));
    auto* aux_type = llvm::ArrayType::get(i64_, std::max(layout.num_aux, 1));
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx_),
                                         {ptr_, ptr_, ptr_, ptr_, i64_}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn_->setDoesNotThrow();
    llvm::Type* byval[] = {bases_type, dims_type, aux_type};
    for (unsigned i = 0; i < 3; ++i) {
      fn_->addParamAttr(i, llvm::Attribute::getWithByValType(ctx_, byval[i]));
      fn_->addParamAttr(i, llvm::Attribute::getWithAlignment(ctx_, llvm::Align(8)));
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
    module_.getOrInsertNamedMetadata("nvvm.annotations")
        ->addOperand(llvm::MDNode::get(
            ctx_, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, "kernel"),
                   llvm::ValueAsMetadata::get(b_.getInt32(1))}));
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    LoadInjectiveState(fn_->getArg(0), fn_->getArg(1), fn_->getArg(2), layout);
    llvm::Value* total = fn_->getArg(4);
    auto sreg = [&](llvm::Intrinsic::ID id) -> llvm::Value* {
      return b_.CreateZExt(b_.CreateIntrinsic(id, {}, {}), i64_);
    };
    llvm::Value* tid = b_.CreateAdd(
        sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x),
        b_.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x),
                     sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x)));
    llvm::Value* stride = b_.CreateMul(sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x),
                                       sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x));
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, "loop", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, "exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* lin = b_.CreatePHI(i64_, 2, "lin");
    lin->addIncoming(tid, entry);
    b_.CreateCondBr(b_.CreateICmpULT(lin, total), body, exit);
    b_.SetInsertPoint(body);
    // Delinearise over the output dims, innermost first.
    const int out = plan_.result;
    const int rank = plan_.rank(out);
    std::vector<llvm::Value*> idx(rank);
    llvm::Type* index_type = wide ? i64_ : i32_;
    llvm::Value* rest = b_.CreateTrunc(lin, index_type);
    for (int d = rank - 1; d >= 0; --d) {
      if (d == 0) {
        idx[0] = b_.CreateZExt(rest, i64_);
        break;
      }
      llvm::Value* n = b_.CreateTrunc(inj_dims_[out][d], index_type);
      llvm::Value* q = b_.CreateUDiv(rest, n);
      idx[d] = b_.CreateZExt(b_.CreateSub(rest, b_.CreateMul(q, n)), i64_);
      rest = q;
    }
    memo_.clear();
    llvm::Value* result = Eval(out, idx);
    const DType t = plan_.dtypes[out];
    if (t == DType::kBool) result = b_.CreateZExt(result, i8_);
    b_.CreateAlignedStore(result, b_.CreateInBoundsGEP(MemType(t), inj_bases_[0], lin),
                          llvm::Align(DTypeSize(t)));
    memo_.clear();
    lin->addIncoming(b_.CreateAdd(lin, stride), b_.GetInsertBlock());
    b_.CreateBr(header);
    b_.SetInsertPoint(exit);
    llvm::Value* flags = b_.CreateLoad(i32_, flag_);
    llvm::BasicBlock* report = llvm::BasicBlock::Create(ctx_, "report", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "done", fn_);
    b_.CreateCondBr(b_.CreateICmpNE(flags, b_.getInt32(0)), report, done);
    b_.SetInsertPoint(report);
    b_.CreateAtomicRMW(llvm::AtomicRMWInst::Or, fn_->getArg(3), flags, llvm::Align(4),
                       llvm::AtomicOrdering::Monotonic);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
    gpu_ = false;
  }

 private:
  // The host entry points' three argument arrays are metadata, distinct from every tensor and
  // never written.
  void MarkMetadataArrays() {
    fn_->setDoesNotThrow();
    for (unsigned i = 0; i < 3; ++i) {
      fn_->addParamAttr(i, llvm::Attribute::NoAlias);
      fn_->addParamAttr(i, llvm::Attribute::NoCapture);
      fn_->addParamAttr(i, llvm::Attribute::ReadOnly);
    }
  }

  // ---- the injective path ----

  // The injective entry points' state: the tensor bases, every value's dims (constants where
  // the type says so), the aux entries and a zeroed error-flag slot.
  void LoadInjectiveState(llvm::Value* bases, llvm::Value* dims, llvm::Value* aux,
                          const InjectiveLayout& layout) {
    auto load_i64 = [&](llvm::Value* array, int i, const std::string& what) -> llvm::Value* {
      return b_.CreateAlignedLoad(i64_, b_.CreateConstInBoundsGEP1_64(i64_, array, i),
                                  llvm::Align(8), what);
    };
    inj_bases_.clear();
    for (int p = 0; p <= plan_.num_params; ++p) {
      inj_bases_.push_back(b_.CreateAlignedLoad(
          ptr_, b_.CreateConstInBoundsGEP1_64(ptr_, bases, p), llvm::Align(8)));
    }
    inj_dims_.assign(plan_.dims.size(), {});
    for (size_t v = 0; v < plan_.dims.size(); ++v) {
      for (size_t j = 0; j < plan_.dims[v].size(); ++j) {
        const DimExpr& d = plan_.dims[v][j];
        inj_dims_[v].push_back(d.is_constant()
                                   ? b_.getInt64(d.constant())
                                   : load_i64(dims, layout.dim_offset[v] + j,
                                              absl::StrCat("d", v, "_", j)));
      }
    }
    aux_.clear();
    for (int i = 0; i < layout.num_aux; ++i) {
      aux_.push_back(load_i64(aux, i, absl::StrCat("aux", i)));
    }
    aux_offset_ = &layout.aux_offset;
    flag_ = b_.CreateAlloca(i32_, nullptr, "flags");
    b_.CreateStore(b_.getInt32(0), flag_);
    memo_.clear();
    access_group_ = llvm::MDNode::getDistinct(ctx_, {});
  }

  // for (i = 0; i < dim; ++i) over output dim idx.size(); the body stores the result at the
  // linear index `lin`.
  void EmitInjectiveLevel(std::vector<llvm::Value*>& idx, llvm::Value* lin) {
    const int d = static_cast<int>(idx.size());
    const int out = plan_.result;
    if (d == plan_.rank(out)) {
      llvm::Value* result = Eval(out, idx);
      const DType t = plan_.dtypes[out];
      if (t == DType::kBool) result = b_.CreateZExt(result, i8_);
      b_.CreateAlignedStore(result, b_.CreateInBoundsGEP(MemType(t), inj_bases_[0], lin),
                            llvm::Align(DTypeSize(t)))
          ->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
      return;
    }
    llvm::Value* n = inj_dims_[out][d];
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("loop", d), fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("body", d), fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("exit", d), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, absl::StrCat("i", d));
    iv->addIncoming(b_.getInt64(0), preheader);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, n), body, exit);
    b_.SetInsertPoint(body);
    const auto saved = memo_;  // values computed inside the loop do not dominate its exit
    idx.push_back(iv);
    EmitInjectiveLevel(idx, b_.CreateAdd(b_.CreateMul(lin, n), iv));
    idx.pop_back();
    memo_ = saved;
    llvm::Value* iv_next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    // The innermost loop: its iterations are independent (Run refuses any overlap of the
    // output with an input), so loads and stores are marked parallel and LLVM may vectorise
    // it without run-time alias checks (it does where the reads are contiguous, e.g. a take
    // of rows). Outer loops: neither vectorised nor unrolled (quicker to compile).
    const bool innermost = d + 1 == plan_.rank(out);
    fast_ = innermost;
    b_.CreateBr(header)->setMetadata(llvm::LLVMContext::MD_loop, MakeLoopId());
    fast_ = false;
    iv->addIncoming(iv_next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
  }

  // Value v's element at `idx` (one i64 per dim of v), in registers.
  llvm::Value* Eval(int v, const std::vector<llvm::Value*>& idx) {
    auto key = std::make_pair(v, idx);
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    llvm::Value* r = v < plan_.num_params ? LoadParam(v, idx)
                                          : EvalStep(plan_.steps[v - plan_.num_params], idx);
    memo_.emplace(std::move(key), r);
    return r;
  }

  llvm::Value* LoadParam(int v, const std::vector<llvm::Value*>& idx) {
    llvm::Value* offset = b_.getInt64(0);
    for (size_t j = 0; j < idx.size(); ++j) {
      offset = j == 0 ? idx[0] : b_.CreateAdd(b_.CreateMul(offset, inj_dims_[v][j]), idx[j]);
    }
    const DType t = plan_.dtypes[v];
    llvm::LoadInst* x = b_.CreateAlignedLoad(
        MemType(t), b_.CreateInBoundsGEP(MemType(t), inj_bases_[1 + v], offset),
        llvm::Align(DTypeSize(t)));
    x->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
    return t == DType::kBool ? b_.CreateICmpNE(x, b_.getInt8(0)) : x;
  }

  // NumPy broadcasting of value a into an index of higher (or equal) rank: right-aligned,
  // unit dims read element 0.
  std::vector<llvm::Value*> BroadcastIndex(int a, const std::vector<llvm::Value*>& idx) {
    const int rank = plan_.rank(a);
    const size_t offset = idx.size() - rank;
    std::vector<llvm::Value*> r(rank);
    for (int j = 0; j < rank; ++j) {
      const DimExpr& d = plan_.dims[a][j];
      llvm::Value* i = idx[offset + j];
      if (d.is_constant()) {
        r[j] = d.constant() == 1 ? b_.getInt64(0) : i;
      } else {
        r[j] = b_.CreateSelect(b_.CreateICmpEQ(inj_dims_[a][j], b_.getInt64(1)), b_.getInt64(0), i);
      }
    }
    return r;
  }

  llvm::Value* EvalStep(const Step& step, const std::vector<llvm::Value*>& idx) {
    const std::vector<int>& a = step.args;
    if (step.form != OpForm::kInjective) {
      std::vector<llvm::Value*> operands;
      for (size_t i = 0; i < a.size(); ++i) {
        if (step.form == OpForm::kBiasAdd && i == 1) {
          operands.push_back(Eval(a[1], {idx[step.axis]}));
        } else {
          operands.push_back(Eval(a[i], BroadcastIndex(a[i], idx)));
        }
      }
      return EmitStep(step, operands);
    }
    const int data = a[0];
    const int rank = plan_.rank(data);
    std::vector<llvm::Value*> in;
    switch (step.op) {
      case JitOp::kTranspose:
        in.resize(rank);
        for (int j = 0; j < rank; ++j) in[step.ints[j]] = idx[j];
        return Eval(data, in);
      case JitOp::kReshape:
      case JitOp::kDynReshape: {
        // Linearise over the result's dims, delinearise over the data's.
        llvm::Value* lin = b_.getInt64(0);
        const int v = step.result;
        for (size_t j = 0; j < idx.size(); ++j) {
          lin = j == 0 ? idx[0] : b_.CreateAdd(b_.CreateMul(lin, inj_dims_[v][j]), idx[j]);
        }
        in.resize(rank);
        const int offset = (*aux_offset_)[step.result - plan_.num_params];
        for (int k = rank - 1; k > 0; --k) {
          llvm::Value* d = inj_dims_[data][k];
          llvm::Value* q = Divide(lin, d, offset + k);
          in[k] = b_.CreateSub(lin, b_.CreateMul(q, d));
          lin = q;
        }
        if (rank > 0) in[0] = lin;
        return Eval(data, in);
      }
      case JitOp::kExpandDims:
        for (int j = 0; j < static_cast<int>(idx.size()); ++j) {
          if (j < step.axis || j >= step.axis + step.num) in.push_back(idx[j]);
        }
        return Eval(data, in);
      case JitOp::kSqueeze: {
        size_t next = 0;
        for (int j = 0; j < rank; ++j) in.push_back(step.ints[j] ? b_.getInt64(0) : idx[next++]);
        return Eval(data, in);
      }
      case JitOp::kStridedSlice:
      case JitOp::kDynStridedSlice: {
        const int offset = (*aux_offset_)[step.result - plan_.num_params];
        for (int j = 0; j < rank; ++j) {
          in.push_back(b_.CreateAdd(aux_[offset + 2 * j],
                                    b_.CreateMul(idx[j], aux_[offset + 2 * j + 1])));
        }
        return Eval(data, in);
      }
      case JitOp::kTake:
        return EvalTake(step, idx);
      case JitOp::kConcatenate:
        return EvalConcatenate(step, idx);
      case JitOp::kBroadcastTo:
      case JitOp::kDynBroadcastTo:
        return Eval(data, BroadcastIndex(data, idx));
      case JitOp::kLayoutTransform: {
        // Through the logical channel c: c = cb * dst + ci on the result's side, split by the
        // source's block on the data's (constant blocks: the divisions become shifts / masks).
        const int64_t src = step.ints[0], dst = step.ints[1];
        llvm::Value* c =
            dst == 0 ? idx[1] : b_.CreateAdd(b_.CreateMul(idx[1], b_.getInt64(dst)), idx[4]);
        in = {idx[0], c, idx[2], idx[3]};
        if (src > 0) {
          in[1] = b_.CreateUDiv(c, b_.getInt64(src));
          in.push_back(b_.CreateURem(c, b_.getInt64(src)));
        }
        return Eval(data, in);
      }
      default:
        return nullptr;  // excluded by Analyze
    }
  }

  // lin / d for 0 <= lin < 2^32 (the not-`wide` entry) and a run-time 1 <= d < 2^32: the high
  // half of lin * m, m = floor((2^64 - 1) / d) + 1 from aux (0 for d = 1, selected away);
  // exact in that range (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
  // 2019), and a multiply instead of a 64-bit divide on every element. Constant divisors are
  // left to LLVM.
  llvm::Value* Divide(llvm::Value* lin, llvm::Value* d, int aux_index) {
    if (wide_ || llvm::isa<llvm::Constant>(d)) return b_.CreateUDiv(lin, d);
    llvm::Type* i128 = llvm::Type::getInt128Ty(ctx_);
    llvm::Value* product =
        b_.CreateMul(b_.CreateZExt(lin, i128), b_.CreateZExt(aux_[aux_index], i128));
    llvm::Value* q = b_.CreateTrunc(b_.CreateLShr(product, 64), i64_);
    return b_.CreateSelect(b_.CreateICmpEQ(d, b_.getInt64(1)), lin, q);
  }

  // take: the index read from `indices` at the result index's middle dims, resolved into
  // [0, n) by the mode exactly as the reference does (Run has checked what can fail).
  llvm::Value* EvalTake(const Step& step, const std::vector<llvm::Value*>& idx) {
    const int data = step.args[0], indices = step.args[1];
    const int ri = plan_.rank(indices);
    const int axis = static_cast<int>(step.axis);
    std::vector<llvm::Value*> at(idx.begin() + axis, idx.begin() + axis + ri);
    llvm::Value* k = Eval(indices, at);
    k = b_.CreateIntCast(k, i64_, SignedIntDType(plan_.dtypes[indices]));
    llvm::Value* n = inj_dims_[data][axis];
    llvm::Value* zero = b_.getInt64(0);
    switch (step.mode) {
      case TakeMode::kClip: {
        k = b_.CreateSelect(b_.CreateICmpSLT(k, zero), zero, k);
        llvm::Value* last = b_.CreateSub(n, b_.getInt64(1));
        k = b_.CreateSelect(b_.CreateICmpSGT(k, last), last, k);
        break;
      }
      case TakeMode::kWrap: {
        llvm::Value* r = b_.CreateSRem(k, n);
        k = b_.CreateSelect(b_.CreateICmpSLT(r, zero), b_.CreateAdd(r, n), r);
        break;
      }
      case TakeMode::kFast: {
        k = b_.CreateSelect(b_.CreateICmpSLT(k, zero), b_.CreateAdd(k, n), k);
        llvm::Value* bad = b_.CreateICmpUGE(k, n);
        llvm::Value* flags = b_.CreateLoad(i32_, flag_);
        llvm::Value* bit = b_.CreateSelect(bad, b_.getInt32(kFlagIndexOutOfRange), b_.getInt32(0));
        b_.CreateStore(b_.CreateOr(flags, bit), flag_);
        k = b_.CreateSelect(bad, zero, k);
        break;
      }
    }
    std::vector<llvm::Value*> in(idx.begin(), idx.begin() + axis);
    in.push_back(k);
    in.insert(in.end(), idx.begin() + axis + ri, idx.end());
    return Eval(data, in);
  }

  // concatenate: a branch per input, chosen by the range the axis index falls in; only the
  // chosen input is read.
  llvm::Value* EvalConcatenate(const Step& step, const std::vector<llvm::Value*>& idx) {
    const std::vector<int>& a = step.args;
    const int axis = static_cast<int>(step.axis);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "concat.merge", fn_);
    std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> incoming;
    llvm::Value* begin = b_.getInt64(0);
    for (size_t i = 0; i < a.size(); ++i) {
      llvm::Value* end = b_.CreateAdd(begin, inj_dims_[a[i]][axis]);
      llvm::BasicBlock* next = nullptr;
      if (i + 1 < a.size()) {
        llvm::BasicBlock* then = llvm::BasicBlock::Create(ctx_, "concat.in", fn_);
        next = llvm::BasicBlock::Create(ctx_, "concat.next", fn_);
        b_.CreateCondBr(b_.CreateICmpSLT(idx[axis], end), then, next);
        b_.SetInsertPoint(then);
      }
      const auto saved = memo_;
      std::vector<llvm::Value*> in = idx;
      in[axis] = b_.CreateSub(idx[axis], begin);
      llvm::Value* x = Eval(a[i], in);
      memo_ = saved;
      incoming.emplace_back(x, b_.GetInsertBlock());
      b_.CreateBr(merge);
      if (next != nullptr) b_.SetInsertPoint(next);
      begin = end;
    }
    b_.SetInsertPoint(merge);
    llvm::PHINode* phi = b_.CreatePHI(incoming[0].first->getType(), incoming.size());
    for (const auto& [x, block] : incoming) phi->addIncoming(x, block);
    return phi;
  }

  llvm::Type* RegType(DType t) const {
    switch (t) {
      case DType::kF32:
        return llvm::Type::getFloatTy(ctx_);
      case DType::kF64:
        return llvm::Type::getDoubleTy(ctx_);
      case DType::kI8:
      case DType::kU8:
        return i8_;
      case DType::kI16:
      case DType::kU16:
        return llvm::Type::getInt16Ty(ctx_);
      case DType::kI32:
      case DType::kU32:
        return i32_;
      case DType::kI64:
      case DType::kU64:
        return i64_;
      case DType::kBool:
        return i1_;
      default:
        return nullptr;  // excluded by Analyze
    }
  }
  llvm::Type* MemType(DType t) const { return t == DType::kBool ? i8_ : RegType(t); }
  DType SlotDType(int slot) const {
    return slot == 0 ? plan_.dtypes[plan_.result] : plan_.dtypes[lowered_.accesses[slot - 1].param];
  }

  // !{self, parallel_accesses(group)} for `fast`; !{self, no vectorise, no unroll} for
  // `generic` (rarely used: keep it small and quick to compile).
  llvm::MDNode* MakeLoopId() {
    llvm::SmallVector<llvm::Metadata*, 4> ops;
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, std::nullopt);
    ops.push_back(self.get());
    if (fast_) {
      ops.push_back(llvm::MDNode::get(
          ctx_, {llvm::MDString::get(ctx_, "llvm.loop.parallel_accesses"), access_group_}));
    } else {
      ops.push_back(
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                   llvm::ConstantAsMetadata::get(b_.getFalse())}));
      ops.push_back(
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    }
    llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, ops);
    id->replaceOperandWith(0, id);
    return id;
  }

  // One loop level: for (i = 0; i < dims[d]; ++i) { inner levels or the body }. `ptr` holds,
  // per slot, the address of the first element of this level's slice.
  void EmitLevel(int d, const std::vector<llvm::Value*>& ptr) {
    const int depth = lowered_.depth;
    const bool innermost = d == depth - 1;
    const int slots = static_cast<int>(ptr.size());
    if (innermost) EmitHoistedLoads(ptr);
    llvm::BasicBlock* preheader = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx_, absl::StrCat("loop", d), fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, absl::StrCat("body", d), fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx_, absl::StrCat("exit", d), fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, absl::StrCat("i", d));
    iv->addIncoming(b_.getInt64(0), preheader);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, dims_[d]), body, exit);
    b_.SetInsertPoint(body);
    if (innermost) {
      EmitBody(iv, ptr);
    } else {
      std::vector<llvm::Value*> next(slots);
      for (int s = 0; s < slots; ++s) {
        next[s] =
            b_.CreateInBoundsGEP(MemType(SlotDType(s)), ptr[s], b_.CreateMul(iv, strides_[s][d]));
      }
      EmitLevel(d + 1, next);
    }
    llvm::Value* iv_next = b_.CreateAdd(iv, b_.getInt64(1), "", /*HasNUW=*/true,
                                        /*HasNSW=*/true);
    llvm::BranchInst* back = b_.CreateBr(header);
    if (innermost) back->setMetadata(llvm::LLVMContext::MD_loop, inner_loop_id_);
    iv->addIncoming(iv_next, b_.GetInsertBlock());
    b_.SetInsertPoint(exit);
  }

  // `fast`: broadcast accesses (stride 0 in the inner loop) are loaded once per inner loop.
  // Their memory never overlaps the output (Run checks), so the value cannot change inside it.
  void EmitHoistedLoads(const std::vector<llvm::Value*>& ptr) {
    hoisted_.assign(lowered_.accesses.size(), nullptr);
    if (!fast_) return;
    for (size_t a = 0; a < lowered_.accesses.size(); ++a) {
      if (!lowered_.accesses[a].inner_contiguous) hoisted_[a] = Load(a + 1, ptr[a + 1], false);
    }
  }

  llvm::Value* Load(int slot, llvm::Value* address, bool in_parallel_loop) {
    const DType t = SlotDType(slot);
    llvm::LoadInst* load = b_.CreateAlignedLoad(MemType(t), address, llvm::Align(DTypeSize(t)));
    if (in_parallel_loop) load->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
    if (t == DType::kBool) return b_.CreateICmpNE(load, b_.getInt8(0));
    return load;
  }

  llvm::Value* Address(int slot, llvm::Value* base, llvm::Value* iv) {
    const int inner = lowered_.depth - 1;
    llvm::Value* index = iv;
    if (!fast_) index = b_.CreateMul(iv, strides_[slot][inner]);
    return b_.CreateInBoundsGEP(MemType(SlotDType(slot)), base, index);
  }

  void EmitBody(llvm::Value* iv, const std::vector<llvm::Value*>& ptr) {
    std::vector<llvm::Value*> values(lowered_.exprs.size(), nullptr);
    for (size_t e = 0; e < lowered_.exprs.size(); ++e) {
      const Expr& expr = lowered_.exprs[e];
      if (expr.access >= 0) {
        const int slot = expr.access + 1;
        values[e] = hoisted_[expr.access] != nullptr
                        ? hoisted_[expr.access]
                        : Load(slot, Address(slot, ptr[slot], iv), fast_);
        continue;
      }
      const Step& step = plan_.steps[expr.value - plan_.num_params];
      std::vector<llvm::Value*> args;
      for (int a : expr.args) args.push_back(values[a]);
      values[e] = EmitStep(step, args);
    }
    llvm::Value* result = values[lowered_.root];
    const DType out = plan_.dtypes[plan_.result];
    if (out == DType::kBool) result = b_.CreateZExt(result, i8_);
    llvm::StoreInst* store =
        b_.CreateAlignedStore(result, Address(0, ptr[0], iv), llvm::Align(DTypeSize(out)));
    if (fast_) store->setMetadata(llvm::LLVMContext::MD_access_group, access_group_);
  }

  llvm::Value* ToBool(llvm::Value* x, DType t) {
    if (t == DType::kBool) return x;
    if (FloatDType(t)) return b_.CreateFCmpUNE(x, llvm::ConstantFP::get(x->getType(), 0.0));
    return b_.CreateICmpNE(x, llvm::ConstantInt::get(x->getType(), 0));
  }

  // Tensor::SetDouble / SetInt64 semantics (see the file comment).
  llvm::Value* Convert(llvm::Value* x, DType from, DType to) {
    if (from == to) return x;
    if (to == DType::kBool) return ToBool(x, from);
    llvm::Type* dst = RegType(to);
    if (FloatDType(from) && FloatDType(to)) return b_.CreateFPCast(x, dst);
    if (FloatDType(from)) {
      llvm::Value* wide =
          b_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i64_, x->getType()}, {x});
      if (to == DType::kU64) {  // from 2^63 up a u64 holds the value itself
        llvm::Value* big = b_.CreateFCmpOGE(x, llvm::ConstantFP::get(x->getType(), 0x1p63));
        llvm::Value* u = b_.CreateIntrinsic(llvm::Intrinsic::fptoui_sat, {i64_, x->getType()}, {x});
        wide = b_.CreateSelect(big, u, wide);
      }
      return b_.CreateTrunc(wide, dst);
    }
    if (FloatDType(to)) {
      llvm::Type* f64 = llvm::Type::getDoubleTy(ctx_);
      llvm::Value* d = SignedIntDType(from) ? b_.CreateSIToFP(x, f64) : b_.CreateUIToFP(x, f64);
      return to == DType::kF64 ? d : b_.CreateFPTrunc(d, dst);
    }
    return b_.CreateIntCast(x, dst, SignedIntDType(from));
  }

  llvm::Value* LibmCall(absl::string_view f32_name, absl::string_view f64_name, llvm::Value* x) {
    const bool is_f32 = x->getType()->isFloatTy();
    const absl::string_view name = is_f32 ? f32_name : f64_name;
    llvm::FunctionCallee callee =
        module_.getOrInsertFunction(llvm::StringRef(name.data(), name.size()),
                                    llvm::FunctionType::get(x->getType(), {x->getType()}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotAccessMemory();
      f->setDoesNotThrow();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    llvm::CallInst* call = b_.CreateCall(callee, {x});
    call->setDoesNotAccessMemory();
    call->setDoesNotThrow();
    return call;
  }

  // An LLVM math intrinsic on the host; on the GPU, where NVPTX has no lowering for exp, log
  // or pow, libdevice's `libdevice_name` (+ "f" for f32), linked in by the PTX code generator.
  llvm::Value* MathCall(llvm::Intrinsic::ID id, absl::string_view libdevice_name,
                        std::vector<llvm::Value*> args) {
    if (!gpu_) return b_.CreateIntrinsic(id, {args[0]->getType()}, args);
    return LibdeviceCall(libdevice_name, std::move(args));
  }

  // libdevice's `libdevice_name` (+ "f" for f32) on arguments of one float type.
  llvm::Value* LibdeviceCall(absl::string_view libdevice_name, std::vector<llvm::Value*> args) {
    llvm::Type* type = args[0]->getType();
    const std::string symbol = absl::StrCat(libdevice_name, type->isFloatTy() ? "f" : "");
    std::vector<llvm::Type*> types(args.size(), type);
    llvm::FunctionCallee callee =
        module_.getOrInsertFunction(symbol, llvm::FunctionType::get(type, types, false));
    llvm::CallInst* call = b_.CreateCall(callee, args);
    call->setDoesNotAccessMemory();
    call->setDoesNotThrow();
    return call;
  }

  // ---- f32 transcendentals in plain arithmetic ----
  // libm calls (expf, tanhf) cannot be vectorised without a vector math library: the loop would
  // make one call per element. These expansions vectorise with the rest of the group and stay
  // within a few ulp of the correctly rounded result (the tests sweep the whole range).

  llvm::Value* F32(double v) { return llvm::ConstantFP::get(llvm::Type::getFloatTy(ctx_), v); }
  llvm::Value* MulAdd(llvm::Value* a, llvm::Value* m, llvm::Value* c) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, m, c});
  }

  // e^x as in Cephes' expf: n = rint(x log2 e); r = x - n ln 2 with ln 2 split in two so n*C1
  // is exact (Cody-Waite); e^r by a degree-7 polynomial on [-ln2/2, ln2/2]; times 2^n, built
  // from exponent bits in two halves so that results down to the subnormal range and up to
  // overflow (inf) come out right. x is clamped to [-104, 89] first (exp is 0 or inf beyond);
  // NaN is passed through.
  llvm::Value* ExpF32(llvm::Value* x) {
    llvm::Value* is_nan = b_.CreateFCmpUNO(x, x);
    llvm::Value* xc = b_.CreateSelect(b_.CreateFCmpOGT(x, F32(89.0)), F32(89.0), x);
    xc = b_.CreateSelect(b_.CreateFCmpOLT(xc, F32(-104.0)), F32(-104.0), xc);
    xc = b_.CreateSelect(is_nan, F32(0.0), xc);
    llvm::Value* n =
        b_.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b_.CreateFMul(xc, F32(1.44269504088896341)));
    llvm::Value* r = b_.CreateFSub(xc, b_.CreateFMul(n, F32(0.693359375)));
    r = b_.CreateFSub(r, b_.CreateFMul(n, F32(-2.12194440e-4)));
    llvm::Value* p = F32(1.9875691500e-4);
    for (double k :
         {1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1}) {
      p = MulAdd(p, r, F32(k));
    }
    llvm::Value* e_r = b_.CreateFAdd(MulAdd(p, b_.CreateFMul(r, r), r), F32(1.0));
    llvm::Value* ni = b_.CreateFPToSI(n, i32_);  // in [-151, 129]
    llvm::Value* n1 = b_.CreateAShr(ni, 1);
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    auto pow2 = [&](llvm::Value* k) {  // 2^k for k in [-126, 127]
      return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(k, b_.getInt32(127)), 23),
                              llvm::Type::getFloatTy(ctx_));
    };
    llvm::Value* result = b_.CreateFMul(b_.CreateFMul(e_r, pow2(n1)), pow2(n2));
    return b_.CreateSelect(is_nan, x, result);
  }

  // tanh: for |x| < 0.55 its odd Taylor series through x^17 (the first omitted term is below
  // 1e-8 relative there); above, 1 - 2 / (e^2|x| + 1) with x's sign (no cancellation once
  // tanh > 0.5; e^2|x| = inf gives exactly 1).
  llvm::Value* TanhF32(llvm::Value* x) {
    llvm::Value* ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value* x2 = b_.CreateFMul(x, x);
    llvm::Value* q = F32(6404582.0 / 10854718875.0);
    for (double k : {-929569.0 / 638512875.0, 21844.0 / 6081075.0, -1382.0 / 155925.0,
                     62.0 / 2835.0, -17.0 / 315.0, 2.0 / 15.0, -1.0 / 3.0}) {
      q = MulAdd(q, x2, F32(k));
    }
    llvm::Value* small = MulAdd(b_.CreateFMul(x, x2), q, x);
    llvm::Value* e = ExpF32(b_.CreateFMul(ax, F32(2.0)));
    llvm::Value* big = b_.CreateFSub(F32(1.0), b_.CreateFDiv(F32(2.0), b_.CreateFAdd(e, F32(1.0))));
    big = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, big, x);
    return b_.CreateSelect(b_.CreateFCmpOLT(ax, F32(0.55)), small, big);
  }

  // sigmoid in the stable form: e = e^-|x|, s = 1 / (1 + e); x >= 0 ? s : e * s. Unlike
  // 1 / (1 + e^-x) in f32 it keeps the tiny results for x < -88 (e^-x would overflow).
  llvm::Value* SigmoidF32(llvm::Value* x) {
    llvm::Value* e = ExpF32(b_.CreateFNeg(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x)));
    llvm::Value* s = b_.CreateFDiv(F32(1.0), b_.CreateFAdd(F32(1.0), e));
    return b_.CreateSelect(b_.CreateFCmpOGE(x, F32(0.0)), s, b_.CreateFMul(e, s));
  }

  llvm::Value* EmitDivide(llvm::Value* x, llvm::Value* y, DType t) {
    if (FloatDType(t)) return b_.CreateFDiv(x, y);
    llvm::Type* type = x->getType();
    llvm::Value* zero = b_.CreateICmpEQ(y, llvm::ConstantInt::get(type, 0));
    llvm::Value* one = llvm::ConstantInt::get(type, 1);
    llvm::Value* quotient;
    if (SignedIntDType(t)) {
      // INT_MIN / -1 traps in hardware; x / -1 is -x (wrapping), as the int64 reference gives
      // after truncation.
      llvm::Value* minus_one = b_.CreateICmpEQ(y, llvm::ConstantInt::getSigned(type, -1));
      llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), one, y);
      quotient = b_.CreateSelect(minus_one, b_.CreateNeg(x), b_.CreateSDiv(x, safe));
    } else {
      quotient = b_.CreateUDiv(x, b_.CreateSelect(zero, one, y));
    }
    llvm::Value* flags = b_.CreateLoad(i32_, flag_);
    llvm::Value* bit = b_.CreateSelect(zero, b_.getInt32(kFlagDivisionByZero), b_.getInt32(0));
    b_.CreateStore(b_.CreateOr(flags, bit), flag_);
    return quotient;
  }

  // x mod y for integers: C's remainder (truncated, the sign of x), or with `floor` the floor
  // modulo (the sign of y). A zero divisor sets the division-by-zero flag and gives 0 instead of
  // trapping; x % -1 is 0 (INT_MIN % -1 traps in hardware).
  llvm::Value* EmitIntMod(llvm::Value* x, llvm::Value* y, DType t, bool floor) {
    llvm::Type* type = x->getType();
    llvm::Value* zero_v = llvm::ConstantInt::get(type, 0);
    llvm::Value* one = llvm::ConstantInt::get(type, 1);
    llvm::Value* zero = b_.CreateICmpEQ(y, zero_v);
    llvm::Value* flags = b_.CreateLoad(i32_, flag_);
    llvm::Value* bit = b_.CreateSelect(zero, b_.getInt32(kFlagDivisionByZero), b_.getInt32(0));
    b_.CreateStore(b_.CreateOr(flags, bit), flag_);
    if (!SignedIntDType(t)) return b_.CreateURem(x, b_.CreateSelect(zero, one, y));
    llvm::Value* minus_one = b_.CreateICmpEQ(y, llvm::ConstantInt::getSigned(type, -1));
    llvm::Value* safe = b_.CreateSelect(b_.CreateOr(zero, minus_one), one, y);
    llvm::Value* r = b_.CreateSRem(x, safe);  // 0 for the divisors replaced by 1
    if (!floor) return r;
    // Signs differ (r ^ y < 0) and r != 0: move r by y.
    llvm::Value* differ = b_.CreateICmpSLT(b_.CreateXor(r, y), zero_v);
    llvm::Value* adjust = b_.CreateAnd(differ, b_.CreateICmpNE(r, zero_v));
    return b_.CreateSelect(adjust, b_.CreateAdd(r, y), r);
  }

  // The same for floats: fmod (frem on the host, libdevice's fmod on the GPU), and with `floor`
  // moved by y where a nonzero result has the other sign, as the reference's FloorMod.
  llvm::Value* EmitFloatMod(llvm::Value* x, llvm::Value* y, bool floor) {
    llvm::Value* r = gpu_ ? LibdeviceCall("__nv_fmod", {x, y}) : b_.CreateFRem(x, y);
    if (!floor) return r;
    llvm::Value* zero = llvm::ConstantFP::get(x->getType(), 0.0);
    llvm::Value* differ = b_.CreateXor(b_.CreateFCmpOLT(r, zero), b_.CreateFCmpOLT(y, zero));
    llvm::Value* adjust = b_.CreateAnd(differ, b_.CreateFCmpONE(r, zero));
    return b_.CreateSelect(adjust, b_.CreateFAdd(r, y), r);
  }

  // libdevice's `libdevice_name` ("__nv_<f>") on the GPU, libm's <f> (<f>f for f32) on the
  // host: the transcendentals LLVM has no intrinsic for, computed as the reference's libm does.
  llvm::Value* Libm(absl::string_view libdevice_name, llvm::Value* x) {
    if (gpu_) return LibdeviceCall(libdevice_name, {x});
    absl::string_view name = libdevice_name;
    name.remove_prefix(std::string_view("__nv_").size());
    return LibmCall(absl::StrCat(name, "f"), name, x);
  }

  llvm::Value* EmitStep(const Step& step, const std::vector<llvm::Value*>& v) {
    const DType t =
        step.form == OpForm::kWhere ? plan_.dtypes[step.args[1]] : plan_.dtypes[step.args[0]];
    const bool fp = FloatDType(t);
    const bool is_signed = SignedIntDType(t);
    llvm::Value* x = v[0];
    llvm::Type* type = x->getType();
    auto zero = [&]() -> llvm::Value* {
      return fp ? llvm::ConstantFP::get(type, 0.0) : llvm::ConstantInt::get(type, 0);
    };
    auto less = [&](llvm::Value* p, llvm::Value* q) -> llvm::Value* {
      if (fp) return b_.CreateFCmpOLT(p, q);
      return is_signed ? b_.CreateICmpSLT(p, q) : b_.CreateICmpULT(p, q);
    };
    switch (step.op) {
      case JitOp::kNnRelu:  // x > 0 ? x : 0
        return b_.CreateSelect(less(zero(), x), x, zero());
      case JitOp::kNegative:
        return fp ? b_.CreateFNeg(x) : b_.CreateNeg(x);
      case JitOp::kAbs:
        if (fp) return b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
        if (!is_signed) return x;
        return b_.CreateSelect(less(x, zero()), b_.CreateNeg(x), x);
      case JitOp::kExp:
        if (t == DType::kF32) return ExpF32(x);
        return MathCall(llvm::Intrinsic::exp, "__nv_exp", {x});
      case JitOp::kLog:
        return MathCall(llvm::Intrinsic::log, "__nv_log", {x});
      case JitOp::kSqrt:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
      case JitOp::kFloor:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x);
      case JitOp::kCeil:
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, x);
      case JitOp::kTanh:
        if (t == DType::kF32) return TanhF32(x);
        if (gpu_) return MathCall(llvm::Intrinsic::not_intrinsic, "__nv_tanh", {x});
        return LibmCall("tanhf", "tanh", x);
      case JitOp::kSigmoid: {  // 1 / (1 + e^-x), as the reference computes it
        if (t == DType::kF32) return SigmoidF32(x);
        llvm::Value* one = llvm::ConstantFP::get(type, 1.0);
        llvm::Value* e = MathCall(llvm::Intrinsic::exp, "__nv_exp", {b_.CreateFNeg(x)});
        return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
      }
      case JitOp::kRound:
        // Halves to even, as the default rounding mode: cvt.rni on NVPTX. Not libdevice's
        // __nv_rintf: LLVM 16 upgrades its llvm.nvvm.round.f to llvm.round, which rounds
        // halves away from zero (caught on an H100: 0.5 gave 1, 2.5 gave 3).
        return b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, x);
      case JitOp::kErf:
        return Libm("__nv_erf", x);
      case JitOp::kSin:
        return Libm("__nv_sin", x);
      case JitOp::kCos:
        return Libm("__nv_cos", x);
      case JitOp::kTan:
        return Libm("__nv_tan", x);
      case JitOp::kAsin:
        return Libm("__nv_asin", x);
      case JitOp::kAcos:
        return Libm("__nv_acos", x);
      case JitOp::kAtan:
        return Libm("__nv_atan", x);
      case JitOp::kSinh:
        return Libm("__nv_sinh", x);
      case JitOp::kCosh:
        return Libm("__nv_cosh", x);
      case JitOp::kAsinh:
        return Libm("__nv_asinh", x);
      case JitOp::kAcosh:
        return Libm("__nv_acosh", x);
      case JitOp::kAtanh:
        return Libm("__nv_atanh", x);
      case JitOp::kMod:
      case JitOp::kFmod: {
        const bool floor = step.op == JitOp::kMod;
        return fp ? EmitFloatMod(x, v[1], floor) : EmitIntMod(x, v[1], t, floor);
      }
      case JitOp::kAdd:
      case JitOp::kBiasAdd:
        return fp ? b_.CreateFAdd(x, v[1]) : b_.CreateAdd(x, v[1]);
      case JitOp::kSubtract:
        return fp ? b_.CreateFSub(x, v[1]) : b_.CreateSub(x, v[1]);
      case JitOp::kMultiply:
        return fp ? b_.CreateFMul(x, v[1]) : b_.CreateMul(x, v[1]);
      case JitOp::kDivide:
        return EmitDivide(x, v[1], t);
      case JitOp::kMaximum:  // std::max(x, y) = x < y ? y : x
        return b_.CreateSelect(less(x, v[1]), v[1], x);
      case JitOp::kMinimum:  // std::min(x, y) = y < x ? y : x
        return b_.CreateSelect(less(v[1], x), v[1], x);
      case JitOp::kPower:
        return MathCall(llvm::Intrinsic::pow, "__nv_pow", {x, v[1]});
      case JitOp::kLeftShift:
      case JitOp::kRightShift: {
        // LLVM's shifts are poison from the bit width up; the op defines those amounts (and
        // negative ones, which compare as huge unsigned) as shifting everything out.
        const unsigned bits = type->getIntegerBitWidth();
        llvm::Value* out_of_range = b_.CreateICmpUGE(v[1], llvm::ConstantInt::get(type, bits));
        if (step.op == JitOp::kRightShift && is_signed) {
          llvm::Value* amount =
              b_.CreateSelect(out_of_range, llvm::ConstantInt::get(type, bits - 1), v[1]);
          return b_.CreateAShr(x, amount);
        }
        llvm::Value* shifted =
            step.op == JitOp::kLeftShift ? b_.CreateShl(x, v[1]) : b_.CreateLShr(x, v[1]);
        return b_.CreateSelect(out_of_range, zero(), shifted);
      }
      case JitOp::kEqual:
        return fp ? b_.CreateFCmpOEQ(x, v[1]) : b_.CreateICmpEQ(x, v[1]);
      case JitOp::kLess:
        return less(x, v[1]);
      case JitOp::kGreater:
        return less(v[1], x);
      case JitOp::kWhere:
        return b_.CreateSelect(ToBool(x, plan_.dtypes[step.args[0]]), v[1], v[2]);
      case JitOp::kCast:
        return Convert(x, t, plan_.dtypes[step.result]);
      case JitOp::kTranspose:
      case JitOp::kReshape:
      case JitOp::kDynReshape:
      case JitOp::kExpandDims:
      case JitOp::kSqueeze:
      case JitOp::kStridedSlice:
      case JitOp::kDynStridedSlice:
      case JitOp::kTake:
      case JitOp::kConcatenate:
      case JitOp::kBroadcastTo:
      case JitOp::kDynBroadcastTo:
      case JitOp::kLayoutTransform:
        return nullptr;  // index maps, not arithmetic: EvalStep
    }
    return nullptr;
  }

  const Plan& plan_;
  const Lowered& lowered_;
  llvm::Module& module_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  llvm::Type* i1_;
  llvm::Type* i8_;
  llvm::Type* i32_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;

  // Per entry point.
  bool fast_ = false;
  llvm::Function* fn_ = nullptr;
  std::vector<llvm::Value*> dims_;
  std::vector<std::vector<llvm::Value*>> strides_;  // [slot][level]
  std::vector<llvm::Value*> hoisted_;
  llvm::Value* flag_ = nullptr;
  llvm::MDNode* access_group_ = nullptr;
  llvm::MDNode* inner_loop_id_ = nullptr;

  // The injective entry point.
  std::vector<llvm::Value*> inj_bases_;               // [0] output, [1 + p] parameter p
  std::vector<std::vector<llvm::Value*>> inj_dims_;   // [value][dim]: constant or loaded
  std::vector<llvm::Value*> aux_;
  const std::vector<int>* aux_offset_ = nullptr;
  bool wide_ = false;
  bool gpu_ = false;  // the GPU entry: libdevice calls instead of host math
  // (value, index) -> its element; only looked up, never iterated.
  std::map<std::pair<int, std::vector<llvm::Value*>>, llvm::Value*> memo_;
};

}  // namespace

BuiltModule BuildModule(const Plan& plan, const Lowered& lowered, const std::string& symbol) {
  BuiltModule m;
  m.context = std::make_unique<llvm::LLVMContext>();
  m.module = std::make_unique<llvm::Module>(symbol, *m.context);
  m.fast_name = symbol + "_fast";
  Emitter emitter(plan, lowered, *m.module);
  emitter.EmitEntry(m.fast_name, /*fast=*/true);
  if (!lowered.static_shapes) {
    m.generic_name = symbol + "_generic";
    emitter.EmitEntry(m.generic_name, /*fast=*/false);
  }
  return m;
}

BuiltModule BuildInjectiveModule(const Plan& plan, const InjectiveLayout& layout,
                                 const std::string& symbol) {
  BuiltModule m;
  m.context = std::make_unique<llvm::LLVMContext>();
  m.module = std::make_unique<llvm::Module>(symbol, *m.context);
  m.fast_name = symbol;
  Lowered lowered;  // the injective entry does not use the elementwise accesses
  lowered.out_rank = plan.rank(plan.result);
  lowered.depth = std::max(lowered.out_rank, 1);
  Emitter emitter(plan, lowered, *m.module);
  emitter.EmitInjectiveEntry(symbol, layout, /*wide=*/false);
  if (layout.needs_wide) {
    m.generic_name = symbol + "_wide";
    emitter.EmitInjectiveEntry(m.generic_name, layout, /*wide=*/true);
  }
  return m;
}

BuiltModule BuildNvptxModule(const Plan& plan, const InjectiveLayout& layout,
                             const std::string& symbol) {
  BuiltModule m;
  m.context = std::make_unique<llvm::LLVMContext>();
  m.module = std::make_unique<llvm::Module>(symbol, *m.context);
  m.module->setTargetTriple("nvptx64-nvidia-cuda");
  m.fast_name = symbol;
  Lowered lowered;
  lowered.out_rank = plan.rank(plan.result);
  lowered.depth = std::max(lowered.out_rank, 1);
  Emitter emitter(plan, lowered, *m.module);
  emitter.EmitGpuEntry(symbol, layout, /*wide=*/false);
  m.generic_name = symbol + "_wide";
  emitter.EmitGpuEntry(m.generic_name, layout, /*wide=*/true);
  return m;
}

}  // namespace hetpass::jit_internal
