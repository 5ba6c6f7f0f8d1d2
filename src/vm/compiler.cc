// IR -> VM bytecode (see executable.h).
//
// One pass over each entry function in program order: every value gets a register, every
// binding one instruction. Sizes and dims become postfix programs over symbol slots; a symbol is
// bound by the first `arg` whose declared dim is exactly that symbol, and every later occurrence
// (or a dim that is an expression) is checked against it at run time. A symbol no parameter
// binds (a data-dependent dim infer-types named) is bound by the first alloc_tensor_dyn, in
// program order, whose type has it as a whole dim; a dim over a symbol still unbound there is
// taken from the computed shape unchecked. Regions share their parent's symbol slots (the VM
// passes them down), so a region starts with what is bound before it, and what it binds is not
// counted as bound after it (a branch may not run). Regions of if/loop become
// VM functions of their own: their parameters are the block parameters followed by the outer
// values the region captures (free-variable analysis), so the interpreter needs no nested
// scopes. Kernel call sites record which parameters are constants, so the VM can hand those to
// the kernel at load (prepacking).
#include "passes/vm/executable.h"

#include <deque>
#include <functional>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "passes/analysis/copy_ledger.h"
#include "passes/ir/printer.h"
#include "passes/support/status_macros.h"

namespace hetpass::vm {
namespace {

class ModuleCompiler {
 public:
  explicit ModuleCompiler(const Module& m) : module_(m) {}

 private:
  struct Scope {
    VmFunction* fn;  // in building_ (a deque: stable while regions add functions)
    int32_t index;
    absl::flat_hash_map<const Value*, int32_t> regs;
    absl::flat_hash_map<const Value*, int32_t> constant_index;
    std::set<std::string> bound;  // symbols bound at this point of the code
    absl::flat_hash_map<const Value*, int32_t> storage_pc;  // alloc_storage instruction per value
    std::set<size_t> checked;  // the entry function's assumptions checked on this path
    bool in_region = false;    // a region's VM function (a loop body, an if branch)
  };

  // Emits a kAssume for each assumption of the function being compiled whose symbols are all
  // bound at this point and that this path has not checked yet: called after the arguments
  // bind the input symbols and after each allocation that binds a data-dependent one, so every
  // assumption is checked once per call (per iteration in a loop body), before anything sized
  // by it runs.
  absl::Status EmitAssumptions(Scope& s) {
    const std::vector<Assumption>& all = entry_->assumptions();
    for (size_t i = 0; i < all.size(); ++i) {
      if (s.checked.contains(i)) continue;
      std::set<std::string> syms;
      all[i].CollectSymbols(&syms);
      bool ready = true;
      for (const std::string& sym : syms) ready = ready && s.bound.contains(sym);
      if (!ready) continue;
      auto [it, inserted] =
          assumption_index_.try_emplace(i, static_cast<int32_t>(exe_.assumptions.size()));
      if (inserted) {
        AssumptionCheck c;
        c.kind = all[i].kind;
        ASSIGN_OR_RETURN(c.lhs, Dim(all[i].lhs));
        ASSIGN_OR_RETURN(c.rhs, Dim(all[i].rhs));
        c.condition = all[i].Condition();
        c.reason = all[i].reason;
        for (const std::string& sym : syms) c.symbols.push_back(Symbol(sym));
        exe_.assumptions.push_back(std::move(c));
      }
      Push(s, Instruction{.op = Opcode::kAssume, .a = it->second}, all[i].Condition());
      s.checked.insert(i);
      ever_checked_.insert(i);
    }
    return absl::OkStatus();
  }

  // The first symbol of `e` not bound in `s`, or "".
  static std::string UnboundSymbol(const Scope& s, const DimExpr& e) {
    std::set<std::string> syms;
    e.CollectSymbols(&syms);
    for (const std::string& sym : syms) {
      if (!s.bound.contains(sym)) return sym;
    }
    return "";
  }

  // Errors unless every symbol of `t` is bound (storage sizes, static allocations).
  absl::Status CheckBound(const Scope& s, const Type& t, const std::string& where) {
    std::vector<DimExpr> dims;
    if (t.is_storage()) dims.push_back(t.storage_bytes());
    if (t.is_tensor()) dims = t.shape();
    for (const DimExpr& d : dims) {
      const std::string sym = UnboundSymbol(s, d);
      if (!sym.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(where, "symbol ", sym, " of ", t.ToString(),
                                                       " is not bound here (no parameter dim or "
                                                       "earlier alloc_tensor_dyn binds it)"));
      }
    }
    return absl::OkStatus();
  }


  std::string Where(const Node& n) { return NodeContext(&module_, n); }

  int32_t Symbol(const std::string& name) {
    auto [it, inserted] = symbol_slots_.emplace(name, static_cast<int32_t>(exe_.symbols.size()));
    if (inserted) exe_.symbols.push_back(name);
    return it->second;
  }

  absl::Status Emit(const DimExpr& e, DimProgram* p) {
    switch (e.kind()) {
      case DimExpr::Kind::kConstant:
        p->ops.push_back({DimOp::kConst, e.constant()});
        return absl::OkStatus();
      case DimExpr::Kind::kSymbol:
        p->ops.push_back({DimOp::kSymbol, Symbol(e.symbol_name())});
        return absl::OkStatus();
      case DimExpr::Kind::kUnknown:
        return absl::InvalidArgumentError("an unknown dim `?` has no value");
      case DimExpr::Kind::kSum: {
        // Shortest program: no `0 +` and no `1 *` (sizes like n*2048 are 3 ops).
        const DimNode& n = *e.node();
        bool first_term = true;
        if (n.constant != 0) {
          p->ops.push_back({DimOp::kConst, n.constant});
          first_term = false;
        }
        for (const DimTerm& t : n.terms) {
          bool first_factor = true;
          if (t.coeff != 1) {
            p->ops.push_back({DimOp::kConst, t.coeff});
            first_factor = false;
          }
          for (const DimExpr& f : t.factors) {
            RETURN_IF_ERROR(Emit(f, p));
            if (!first_factor) p->ops.push_back({DimOp::kMul, 0});
            first_factor = false;
          }
          if (first_factor) p->ops.push_back({DimOp::kConst, 1});  // a term with no factors
          if (!first_term) p->ops.push_back({DimOp::kAdd, 0});
          first_term = false;
        }
        if (first_term) p->ops.push_back({DimOp::kConst, 0});
        return absl::OkStatus();
      }
      case DimExpr::Kind::kFloorDiv:
      case DimExpr::Kind::kMod:
      case DimExpr::Kind::kMin:
      case DimExpr::Kind::kMax: {
        const DimNode& n = *e.node();
        RETURN_IF_ERROR(Emit(n.args[0], p));
        RETURN_IF_ERROR(Emit(n.args[1], p));
        const DimOp::Kind k = e.kind() == DimExpr::Kind::kFloorDiv ? DimOp::kFloorDiv
                              : e.kind() == DimExpr::Kind::kMod    ? DimOp::kMod
                              : e.kind() == DimExpr::Kind::kMin    ? DimOp::kMin
                                                                   : DimOp::kMax;
        p->ops.push_back({k, 0});
        return absl::OkStatus();
      }
    }
    return absl::InternalError("unhandled dim kind");
  }

  // Index of the program computing `e` (interned by text).
  absl::StatusOr<int32_t> Dim(const DimExpr& e) {
    const std::string key = e.ToString();
    auto it = dim_index_.find(key);
    if (it != dim_index_.end()) return it->second;
    DimProgram p;
    RETURN_IF_ERROR(Emit(e, &p));
    const int32_t idx = static_cast<int32_t>(exe_.dims.size());
    exe_.dims.push_back(std::move(p));
    dim_index_.emplace(key, idx);
    return idx;
  }

  // The TypeSpec of `t`. With `binds` (an alloc_tensor_dyn in that scope): a whole-dim symbol
  // still unbound is bound there (encoded as -2 - slot) and a dim over unbound symbols is
  // unknown (-1); every other dim is checked.
  absl::StatusOr<int32_t> TypeIndex(const Type& t, Scope* binds = nullptr) {
    if (!t.is_tensor()) {
      return absl::InvalidArgumentError(absl::StrCat("expected a tensor type, got ", t.ToString()));
    }
    TypeSpec spec;
    spec.dtype = t.dtype();
    for (const DimExpr& d : t.shape()) {
      if (d.has_unknown()) {
        spec.dims.push_back(-1);
      } else if (binds != nullptr && d.is_symbol() && !binds->bound.contains(d.symbol_name())) {
        binds->bound.insert(d.symbol_name());
        spec.dims.push_back(-2 - Symbol(d.symbol_name()));
      } else if (binds != nullptr && !UnboundSymbol(*binds, d).empty()) {
        spec.dims.push_back(-1);
      } else {
        ASSIGN_OR_RETURN(int32_t idx, Dim(d));
        spec.dims.push_back(idx);
      }
    }
    exe_.types.push_back(std::move(spec));
    return static_cast<int32_t>(exe_.types.size() - 1);
  }

  int32_t NewReg(Scope& s, const Value* v) {
    const int32_t r = s.fn->num_registers++;
    if (v != nullptr) s.regs[v] = r;
    return r;
  }

  absl::StatusOr<int32_t> Reg(Scope& s, const Value* v, const Node& user) {
    auto it = s.regs.find(v);
    if (it == s.regs.end()) {
      return absl::InternalError(absl::StrCat(Where(user), "operand has no register"));
    }
    return it->second;
  }

  // Appends a register list to the operand pool; returns its offset.
  absl::StatusOr<int32_t> List(Scope& s, absl::Span<Value* const> values, const Node& user) {
    const int32_t off = static_cast<int32_t>(s.fn->operands.size());
    for (const Value* v : values) {
      ASSIGN_OR_RETURN(int32_t r, Reg(s, v, user));
      s.fn->operands.push_back(r);
    }
    return off;
  }

  void Push(Scope& s, Instruction in, std::string comment) {
    s.fn->code.push_back(in);
    s.fn->comments.push_back(std::move(comment));
  }

  absl::Status CompileEntry(const Function& f) {
    entry_ = &f;
    function_level_ = FunctionLevelSymbols(f);
    assumption_index_.clear();
    ever_checked_.clear();
    names_ = std::make_unique<ValueNames>(f);
    region_names_ = RegionNames(f);
    building_.emplace_back();
    const int32_t index = static_cast<int32_t>(building_.size() - 1);
    building_[index].name = f.name();
    Scope s{&building_[index], index, {}, {}};
    const Block& body = f.body();
    s.fn->num_params = body.num_params();
    for (int i = 0; i < body.num_params(); ++i) NewReg(s, body.param(i));
    std::set<std::string>& bound = s.bound;
    for (int i = 0; i < body.num_params(); ++i) {
      const Value* p = body.param(i);
      // A sequence or optional parameter: `arg` checks its elements against the tensor type
      // inside (whose symbols are not bound: elements may differ).
      Type tensor = p->type();
      ArgSpec spec;
      if (tensor.is_optional()) {
        tensor = Type(tensor.element());
        spec.container = ArgSpec::kOptional;
      }
      if (tensor.is_sequence()) {
        spec.container = spec.container == ArgSpec::kOptional ? ArgSpec::kOptionalSequence
                                                              : ArgSpec::kSequence;
        spec.any_element = tensor.element().is_unset();
        tensor = tensor.element().is_unset() ? Type::Tensor(DType::kF32, {}) : Type(tensor.element());
      }
      if (!tensor.is_tensor()) {
        return absl::UnimplementedError(absl::StrCat("@", f.name(), ": parameter %", p->name(),
                                                     " of type ", p->type().ToString(),
                                                     " (only tensor parameters run on the VM)"));
      }
      spec.name = std::string(absl::StripPrefix(names_->Name(p), "%"));
      spec.dtype = tensor.dtype();
      spec.device = p->device() == DeviceKind::kUnset ? DeviceKind::kCpu : p->device();
      spec.type_text = absl::StrCat(p->type().ToString(), " @", DeviceName(spec.device));
      for (const DimExpr& d : tensor.shape()) {
        ArgDim ad;
        if (d.is_constant()) {
          ad = {ArgDim::kStatic, d.constant()};
        } else if (d.is_unknown() || spec.container != ArgSpec::kTensor) {
          ad = {ArgDim::kAny, 0};
        } else if (d.is_symbol() && !bound.contains(d.symbol_name())) {
          bound.insert(d.symbol_name());
          ad = {ArgDim::kBind, Symbol(d.symbol_name())};
        } else {
          ad.kind = ArgDim::kCheck;
          // A compound dim is checkable only once all its symbols are bound by earlier dims.
          std::set<std::string> syms;
          d.CollectSymbols(&syms);
          for (const std::string& sym : syms) {
            if (!bound.contains(sym)) {
              return absl::UnimplementedError(absl::StrCat(
                  "@", f.name(), ": dim ", d.ToString(), " of parameter %", p->name(),
                  " uses symbol ", sym, " before any parameter dim binds it"));
            }
          }
          ASSIGN_OR_RETURN(int32_t idx, Dim(d));
          ad.value = idx;
        }
        spec.dims.push_back(ad);
      }
      s.fn->params.push_back(std::move(spec));
      Push(s, Instruction{.op = Opcode::kArg, .device = s.fn->params.back().device, .dst = i, .a = i},
           absl::StrCat(names_->Name(p), ": ", s.fn->params.back().type_text));
    }
    RETURN_IF_ERROR(EmitAssumptions(s));
    RETURN_IF_ERROR(CompileBlock(s, body));
    for (size_t i = 0; i < f.assumptions().size(); ++i) {
      if (ever_checked_.contains(i)) continue;
      std::set<std::string> syms;
      f.assumptions()[i].CollectSymbols(&syms);
      return absl::InvalidArgumentError(absl::StrCat(
          "@", f.name(), ": assumption `", f.assumptions()[i].Condition(), "` (",
          f.assumptions()[i].reason, ") can never be checked: no path binds all of its symbols (",
          absl::StrJoin(syms, ", "), ")"));
    }
    return EmitRet(s, body);
  }

  absl::Status EmitRet(Scope& s, const Block& b) {
    Instruction in{.op = Opcode::kRet};
    in.list = static_cast<int32_t>(s.fn->operands.size());
    for (const Value* v : b.results()) {
      auto it = s.regs.find(v);
      if (it == s.regs.end()) {
        return absl::InternalError(absl::StrCat("@", s.fn->name, ": returned value %", v->name(),
                                                " has no register"));
      }
      s.fn->operands.push_back(it->second);
    }
    in.count = static_cast<int32_t>(b.results().size());
    Push(s, in, "return");
    return absl::OkStatus();
  }

  // Values used in `block` (recursively) but defined outside it, in first-use order.
  void FreeValues(const Block& block, std::vector<const Value*>* out) {
    absl::flat_hash_map<const Value*, bool> defined;
    std::set<const Value*> seen;
    std::function<void(const Block&)> define = [&](const Block& b) {
      for (const auto& p : b.params()) defined[p.get()] = true;
      for (const auto& n : b.nodes()) {
        for (const auto& r : n->results()) defined[r.get()] = true;
        for (int i = 0; i < n->num_regions(); ++i) define(*n->region(i));
      }
    };
    define(block);
    std::function<void(const Block&)> use = [&](const Block& b) {
      auto note = [&](const Value* v) {
        if (!defined.contains(v) && seen.insert(v).second) out->push_back(v);
      };
      for (const auto& n : b.nodes()) {
        for (const Value* v : n->operands()) note(v);
        for (int i = 0; i < n->num_regions(); ++i) use(*n->region(i));
      }
      for (const Value* v : b.results()) note(v);
    };
    use(block);
  }

  // A region as its own VM function; `captures` receives the outer values passed after the
  // block parameters.
  absl::StatusOr<int32_t> CompileRegion(const Scope& parent, const Block& region,
                                        const std::string& name,
                                        std::vector<const Value*>* captures) {
    FreeValues(region, captures);
    building_.emplace_back();
    const int32_t index = static_cast<int32_t>(building_.size() - 1);
    building_[index].name = name;
    Scope s{&building_[index], index, {}, {}, parent.bound};
    s.checked = parent.checked;
    s.in_region = true;
    for (int i = 0; i < region.num_params(); ++i) NewReg(s, region.param(i));
    for (const Value* v : *captures) NewReg(s, v);
    s.fn->num_params = s.fn->num_registers;
    RETURN_IF_ERROR(CompileBlock(s, region));
    RETURN_IF_ERROR(EmitRet(s, region));
    return index;
  }

  absl::Status CompileBlock(Scope& s, const Block& block) {
    for (const auto& node : block.nodes()) RETURN_IF_ERROR(CompileNode(s, *node));
    return absl::OkStatus();
  }

  std::string Comment(const Node& n) {
    std::string lhs;
    for (const auto& r : n.results()) absl::StrAppend(&lhs, lhs.empty() ? "" : ", ", names_->Name(r.get()));
    std::string ops;
    for (const Value* v : n.operands()) absl::StrAppend(&ops, ops.empty() ? "" : ", ", names_->Name(v));
    std::string callee = n.kind() == NodeKind::kInvoke ? absl::StrCat(" @", n.callee()) : "";
    return absl::StrCat(lhs.empty() ? "" : lhs + " = ", n.OpName(), callee, "(", ops, ")");
  }

  absl::Status CompileNode(Scope& s, const Node& n) {
    const std::string where = Where(n);
    switch (n.kind()) {
      case NodeKind::kConstant: {
        const int32_t idx = static_cast<int32_t>(exe_.constants.size());
        exe_.constants.push_back(ConstantEntry{
            n.constant_value(), n.device() == DeviceKind::kUnset ? DeviceKind::kCpu : n.device()});
        const int32_t r = NewReg(s, n.result());
        s.constant_index[n.result()] = idx;
        Push(s, Instruction{.op = Opcode::kConst, .device = exe_.constants.back().device, .dst = r, .a = idx},
             Comment(n));
        return absl::OkStatus();
      }
      case NodeKind::kCall:
        return CompileCall(s, n);
      case NodeKind::kInvoke:
        return CompileInvoke(s, n);
      case NodeKind::kTuple: {
        ASSIGN_OR_RETURN(int32_t list, List(s, n.operands(), n));
        const int32_t r = NewReg(s, n.result());
        Push(s, Instruction{.op = Opcode::kTuple, .dst = r, .list = list, .count = n.num_operands()},
             Comment(n));
        return absl::OkStatus();
      }
      case NodeKind::kBuiltin: {
        ASSIGN_OR_RETURN(int32_t list, List(s, n.operands(), n));
        const int32_t r = NewReg(s, n.result());
        Push(s, Instruction{.op = Opcode::kBuiltin, .dst = r, .a = static_cast<int32_t>(n.builtin()),
                            .list = list, .count = n.num_operands()},
             Comment(n));
        return absl::OkStatus();
      }
      case NodeKind::kGetItem: {
        ASSIGN_OR_RETURN(int32_t src, Reg(s, n.operand(0), n));
        const int32_t r = NewReg(s, n.result());
        Push(s, Instruction{.op = Opcode::kGetItem, .dst = r, .a = src,
                            .b = static_cast<int32_t>(n.attrs().GetInt("index"))},
             Comment(n));
        return absl::OkStatus();
      }
      case NodeKind::kIf: {
        std::vector<const Value*> then_caps, else_caps;
        ASSIGN_OR_RETURN(int32_t then_fn, CompileRegion(s, *n.region(0), region_names_.at(n.region(0)), &then_caps));
        ASSIGN_OR_RETURN(int32_t else_fn, CompileRegion(s, *n.region(1), region_names_.at(n.region(1)), &else_caps));
        // Both branches receive the union of captures; each uses its own prefix list.
        ASSIGN_OR_RETURN(int32_t cond, Reg(s, n.operand(0), n));
        Instruction in{.op = Opcode::kIf, .dst = -1, .a = then_fn, .b = else_fn, .c = cond};
        in.list = static_cast<int32_t>(s.fn->operands.size());
        for (const Value* v : then_caps) { ASSIGN_OR_RETURN(int32_t r, Reg(s, v, n)); s.fn->operands.push_back(r); }
        for (const Value* v : else_caps) { ASSIGN_OR_RETURN(int32_t r, Reg(s, v, n)); s.fn->operands.push_back(r); }
        in.count = static_cast<int32_t>(then_caps.size());
        // Layout: then captures, else captures ([count .. count + else)), then dsts.
        const int32_t else_count = static_cast<int32_t>(else_caps.size());
        for (const auto& r : n.results()) s.fn->operands.push_back(NewReg(s, r.get()));
        in.count2 = n.num_results();
        in.dst = else_count;  // kIf reuses dst as the length of the else-capture list
        Push(s, in, Comment(n));
        return absl::OkStatus();
      }
      case NodeKind::kLoop: {
        std::vector<const Value*> caps;
        ASSIGN_OR_RETURN(int32_t body_fn, CompileRegion(s, *n.region(0), region_names_.at(n.region(0)), &caps));
        Instruction in{.op = Opcode::kLoop, .a = body_fn,
                       .b = n.num_operands() - 2 /* carried */};
        in.list = static_cast<int32_t>(s.fn->operands.size());
        for (const Value* v : n.operands()) { ASSIGN_OR_RETURN(int32_t r, Reg(s, v, n)); s.fn->operands.push_back(r); }
        for (const Value* v : caps) { ASSIGN_OR_RETURN(int32_t r, Reg(s, v, n)); s.fn->operands.push_back(r); }
        in.count = n.num_operands() + static_cast<int32_t>(caps.size());
        for (const auto& r : n.results()) s.fn->operands.push_back(NewReg(s, r.get()));
        in.count2 = n.num_results();
        // The scan outputs' types, for a loop that runs zero times (nothing to stack).
        in.c = static_cast<int32_t>(s.fn->operands.size());
        for (int i = in.b; i < n.num_results(); ++i) {
          ASSIGN_OR_RETURN(int32_t t, TypeIndex(n.result(i)->type()));
          s.fn->operands.push_back(t);
        }
        // Then per scan output: kCopyRuntimeSized when the ledger gives its stacking copies `?`
        // bytes (ScanPartBytesStated), so the VM counts them apart as it does such copies.
        for (int i = in.b; i < n.num_results(); ++i) {
          s.fn->operands.push_back(ScanPartBytesStated(n, i) ? 0 : kCopyRuntimeSized);
        }
        // Scan outputs are stacked on the device of the loop's results.
        in.device = n.device();
        Push(s, in, Comment(n));
        return absl::OkStatus();
      }
    }
    return absl::InternalError(absl::StrCat(where, "unhandled node kind"));
  }

  absl::Status CompileCall(Scope& s, const Node& n) {
    const OpDef& op = *n.op();
    const std::string where = Where(n);
    const DeviceKind dev = n.device() == DeviceKind::kUnset ? DeviceKind::kCpu : n.device();
    switch (op.role()) {
      case OpRole::kAllocTensorDyn: {
        ASSIGN_OR_RETURN(int32_t dims, Reg(s, n.operand(0), n));
        auto t = TypeIndex(n.result()->type(), &s);
        if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(where, t.status().message()));
        const int32_t r = NewReg(s, n.result());
        Push(s, Instruction{.op = Opcode::kAllocTensorDyn, .device = dev, .dst = r, .a = dims, .b = *t},
             Comment(n));
        return EmitAssumptions(s);
      }
      case OpRole::kAllocStorage: {
        const Type& t = n.result()->type();
        if (!t.is_storage() || t.storage_bytes().has_unknown()) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "storage size must be an expression of the symbols, got ", t.ToString()));
        }
        RETURN_IF_ERROR(CheckBound(s, t, where));
        ASSIGN_OR_RETURN(int32_t size, Dim(t.storage_bytes()));
        const int64_t align = n.attrs().Has("alignment") ? n.attrs().GetInt("alignment") : 64;
        const int32_t r = NewReg(s, n.result());
        s.storage_pc[n.result()] = static_cast<int32_t>(s.fn->code.size());
        Push(s, Instruction{.op = Opcode::kAllocStorage, .device = dev, .dst = r, .a = size,
                            .b = static_cast<int32_t>(align)},
             absl::StrCat(Comment(n), " : ", t.ToString()));
        return absl::OkStatus();
      }
      case OpRole::kAllocTensor: {
        ASSIGN_OR_RETURN(int32_t st, Reg(s, n.operand(0), n));
        RETURN_IF_ERROR(CheckBound(s, n.result()->type(), where));
        auto t = TypeIndex(n.result()->type());
        if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(where, t.status().message()));
        for (int32_t d : exe_.types[*t].dims) {
          if (d < 0) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, "memory.alloc_tensor needs every dim known, got ", n.result()->type().ToString()));
          }
        }
        const int64_t offset = n.attrs().Has("offset") ? n.attrs().GetInt("offset") : 0;
        const int32_t r = NewReg(s, n.result());
        Push(s, Instruction{.op = Opcode::kAllocTensor, .device = dev, .dst = r, .a = st, .b = *t,
                            .c = static_cast<int32_t>(offset)},
             absl::StrCat(Comment(n), " : ", n.result()->type().ToString()));
        return absl::OkStatus();
      }
      case OpRole::kDeviceCopy: {
        ASSIGN_OR_RETURN(int32_t src, Reg(s, n.operand(0), n));
        const auto to = ParseDevice(n.attrs().GetString("dst"));
        if (!to) return absl::InvalidArgumentError(absl::StrCat(where, "unknown dst device"));
        const int32_t r = NewReg(s, n.result());
        // The ledger's rule for a copy's bytes (copy_ledger.cc): the type's size, `?` when
        // some dim is unknown until run time or, in a region, sized by a symbol the region
        // binds (RegionCopyBytesStated).
        const Type& t = n.result()->type();
        const bool runtime_sized = !t.is_tensor() || t.NumBytes().has_unknown() ||
                                   (s.in_region && !RegionCopyBytesStated(t.NumBytes(), function_level_));
        Push(s, Instruction{.op = Opcode::kDeviceCopy, .device = *to, .dst = r, .a = src,
                            .b = runtime_sized ? kCopyRuntimeSized : 0},
             Comment(n));
        return absl::OkStatus();
      }
      case OpRole::kShapeQuery: {
        ASSIGN_OR_RETURN(int32_t src, Reg(s, n.operand(0), n));
        const DType dt = n.attrs().Has("dtype") ? n.attrs().GetDType("dtype") : DType::kI64;
        const int32_t r = NewReg(s, n.result());
        Push(s, Instruction{.op = Opcode::kShapeOf, .device = DeviceKind::kCpu, .dst = r, .a = src,
                            .b = static_cast<int32_t>(dt)},
             Comment(n));
        return absl::OkStatus();
      }
      case OpRole::kKill: {
        ASSIGN_OR_RETURN(int32_t list, List(s, n.operands(), n));
        // Storage released at a kill point goes back to the pool for other allocations of
        // the same run: its alloc_storage must not keep it for the next call (c = 1).
        for (const Value* v : n.operands()) {
          auto it = s.storage_pc.find(v);
          if (it != s.storage_pc.end()) s.fn->code[it->second].c = 1;
        }
        Push(s, Instruction{.op = Opcode::kKill, .list = list, .count = n.num_operands()}, Comment(n));
        return absl::OkStatus();
      }
      case OpRole::kCompute:
        return absl::UnimplementedError(absl::StrCat(
            where, "a bare call of ", op.name(),
            " reached the VM: run fuse-ops and manifest-alloc first (kernels are invoked "
            "destination-passing)"));
    }
    return absl::InternalError(absl::StrCat(where, "unhandled op role"));
  }

  absl::Status CompileInvoke(Scope& s, const Node& n) {
    const std::string where = Where(n);
    const Function* callee = module_.FindFunction(n.callee());
    if (callee == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(where, "unknown function @", n.callee()));
    }
    if (IsKernelInvoke(n)) {
      KernelSite site;
      site.primitive = n.callee();
      site.device = n.device() == DeviceKind::kUnset ? DeviceKind::kCpu : n.device();
      const int nparams = callee->body().num_params();
      for (int i = 0; i < nparams && i < n.num_operands(); ++i) {
        auto it = s.constant_index.find(n.operand(i));
        site.constants.push_back(it == s.constant_index.end() ? -1 : it->second);
      }
      used_primitives_.insert(n.callee());
      exe_.kernels.push_back(std::move(site));
      ASSIGN_OR_RETURN(int32_t list, List(s, n.operands(), n));
      Push(s, Instruction{.op = Opcode::kInvokeKernel, .device = exe_.kernels.back().device,
                          .a = static_cast<int32_t>(exe_.kernels.size() - 1), .list = list,
                          .count = n.num_operands()},
           Comment(n));
      return absl::OkStatus();
    }
    if (IsShapeFunctionInvoke(n)) {
      ShapeFuncSite site;
      site.primitive = n.callee();
      site.mask = n.attrs().GetDepList(kShapeFuncMaskAttr);
      used_primitives_.insert(n.callee());
      exe_.shape_funcs.push_back(std::move(site));
      ASSIGN_OR_RETURN(int32_t list, List(s, n.operands(), n));
      for (const auto& r : n.results()) s.fn->operands.push_back(NewReg(s, r.get()));
      Push(s, Instruction{.op = Opcode::kShapeFunc, .device = DeviceKind::kCpu,
                          .a = static_cast<int32_t>(exe_.shape_funcs.size() - 1), .list = list,
                          .count = n.num_operands(), .count2 = n.num_results()},
           Comment(n));
      return absl::OkStatus();
    }
    if (IsPrimitive(*callee)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "primitive @", n.callee(), " invoked without outputs: run manifest-alloc first"));
    }
    // A plain call of another entry function (compiled on its own; patched in PatchCalls).
    ASSIGN_OR_RETURN(int32_t list, List(s, n.operands(), n));
    for (const auto& r : n.results()) s.fn->operands.push_back(NewReg(s, r.get()));
    Instruction in{.op = Opcode::kCall, .list = list, .count = n.num_operands(),
                   .count2 = n.num_results()};
    // The callee index is patched after all entries are compiled.
    pending_calls_.push_back({s.index,
                              static_cast<int32_t>(s.fn->code.size()), n.callee()});
    Push(s, in, Comment(n));
    return absl::OkStatus();
  }

 public:
  absl::Status PatchCalls() {
    for (const PendingCall& c : pending_calls_) {
      const int idx = exe_.FindFunction(c.callee);
      if (idx < 0) return absl::InternalError(absl::StrCat("unresolved call of @", c.callee));
      exe_.functions[c.function].code[c.pc].a = idx;
    }
    return absl::OkStatus();
  }

 private:
  struct PendingCall {
    int32_t function;
    int32_t pc;
    std::string callee;
  };
  const Module& module_;
  Executable exe_;
  absl::flat_hash_map<std::string, int32_t> symbol_slots_;
  absl::flat_hash_map<std::string, int32_t> dim_index_;
  std::set<std::string> used_primitives_;
  std::deque<VmFunction> building_;
  std::unique_ptr<ValueNames> names_;  // of the entry function being compiled
  std::vector<PendingCall> pending_calls_;
  // The function CompileEntry compiles (its assumptions), which of them have an entry in
  // exe_.assumptions, and which some path checks.
  const Function* entry_ = nullptr;
  std::set<std::string> function_level_;  // FunctionLevelSymbols(*entry_)
  absl::flat_hash_map<size_t, int32_t> assumption_index_;
  std::set<size_t> ever_checked_;
  // Names of the regions of the entry function being compiled (RegionNames: the copy ledger
  // uses the same names to bind its loop terms to the VM's execution counts).
  absl::flat_hash_map<const Block*, std::string> region_names_;

 public:
  absl::StatusOr<Executable> RunAll() {
    for (const auto& f : module_.functions()) {
      if (IsPrimitive(*f)) continue;
      RETURN_IF_ERROR(CompileEntry(*f));
    }
    if (building_.empty()) {
      return absl::InvalidArgumentError("module has no entry function (only primitive functions)");
    }
    exe_.functions.assign(std::make_move_iterator(building_.begin()),
                          std::make_move_iterator(building_.end()));
    RETURN_IF_ERROR(PatchCalls());
    std::string text;
    for (const auto& f : module_.functions()) {
      if (IsPrimitive(*f) && used_primitives_.contains(f->name())) {
        // With source locations: a shape function's error at run time then names the user's
        // file and line, not the re-parsed primitive's.
        PrintOptions po;
        po.source_locations = true;
        absl::StrAppend(&text, PrintFunction(*f, po), "\n");
      }
    }
    exe_.primitives = std::move(text);
    RETURN_IF_ERROR(exe_.Verify());
    return std::move(exe_);
  }
};

}  // namespace

absl::StatusOr<Executable> CompileModule(const Module& module) {
  ModuleCompiler c(module);
  return c.RunAll();
}

}  // namespace hetpass::vm
