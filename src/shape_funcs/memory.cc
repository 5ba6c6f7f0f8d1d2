// Data movement and memory. `device_copy` is inserted by plan-devices at every device
// boundary (and nowhere else); its role (kDeviceCopy) is how passes, the copy ledger and
// pass-viz recognise it. Its input is `shape`: the output type is the input type, and the copy
// itself is the only data access.
//
// The allocation ops are inserted by manifest-alloc and typed by their declaration: the size
// of `memory.alloc_storage() : storage[n*2048] @sim` and the shape of
// `memory.alloc_tensor(%st) : f32[n, 512] @sim` are expressions of the symbols, evaluated once
// per call after the symbols are bound from the parameters' shapes. Where only a shape function
// or a counter knows a dim, `memory.alloc_tensor_dyn` takes it as a host value.
#include "shape_funcs/memory.h"

#include "absl/strings/str_format.h"
#include "passes/ir/ir.h"
#include "passes/support/status_macros.h"

namespace hetpass {
namespace {

absl::Status CheckDevice(const ShapeContext& ctx, absl::string_view attr) {
  const std::string& name = ctx.attrs().GetString(attr);
  if (!ParseDevice(name)) {
    return ctx.Error(absl::StrFormat("%s device '%s' is not one of cpu, cuda, sim", attr, name));
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMemoryOps(OpRegistry::Builder& b) {
  b.Register("memory.alloc_storage")
      .Attr("alignment", AttrType::kInt, int64_t{64})
      .Pattern(FusionPattern::kOpaque)
      .Role(OpRole::kAllocStorage)
      .Placed(Placement::kAnywhere)
      .TypedByDeclaration()
      .Doc("allocates storage of the size in its type (storage[bytes]) on its device");
  b.Register("memory.alloc_tensor")
      .StorageInput("storage")
      .Attr("offset", AttrType::kInt, int64_t{0})
      .Pattern(FusionPattern::kOpaque)
      .Role(OpRole::kAllocTensor)
      .Placed(Placement::kAnywhere)
      .TypedByDeclaration()
      .Doc("a tensor of the type it is declared with, at `offset` bytes into storage");
  b.Register("memory.alloc_tensor_dyn")
      .Input("dims", InputDep::kValue)
      .Attr("alignment", AttrType::kInt, int64_t{64})
      .Pattern(FusionPattern::kOpaque)
      .Role(OpRole::kAllocTensorDyn)
      .Placed(Placement::kAnywhere)
      .TypedByDeclaration()
      .Doc("allocates a tensor of its declared type whose `?` dims are known only at run time: "
           "`dims` holds either the `?` dims in order or the whole shape (then every known dim is "
           "checked against it); memory comes from the pooling allocator");
  b.Register("memory.kill")
      .VariadicInput("values", InputDep::kNone)
      .Outputs(0)
      .Pattern(FusionPattern::kOpaque)
      .Role(OpRole::kKill)
      .Placed(Placement::kAnywhere)
      .TypedByDeclaration()
      .Doc("a kill point (plan-memory): no operand is used after it, so the run time may release "
           "the memory they hold now instead of at the end of the function; reads nothing");
  b.Register("device_copy")
      .Input("data", InputDep::kShape)
      .Attr("src", AttrType::kString)
      .Attr("dst", AttrType::kString)
      .Pattern(FusionPattern::kOpaque)
      .Role(OpRole::kDeviceCopy)
      .Placed(Placement::kAnywhere)
      .Doc("copies data from device `src` to device `dst` (a boundary chosen by plan-devices)")
      .Rule([](ShapeContext& ctx) -> absl::StatusOr<std::vector<Type>> {
        RETURN_IF_ERROR(CheckDevice(ctx, "src"));
        RETURN_IF_ERROR(CheckDevice(ctx, "dst"));
        if (ctx.attrs().GetString("src") == ctx.attrs().GetString("dst")) {
          return ctx.Error("src and dst are the same device");
        }
        ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
        return std::vector<Type>{Type::Tensor(ctx.dtype(0), {shape.begin(), shape.end()})};
      })
      .SymbolicValues([](ShapeContext& ctx) -> std::optional<std::vector<std::vector<DimExpr>>> {
        auto v = ctx.IntValues(0);
        if (!IsInteger(ctx.dtype(0)) || !v.ok() || !v->has_value()) return std::nullopt;
        return std::vector<std::vector<DimExpr>>{**v};
      })
      .Reference([](absl::Span<const Tensor> in, const Attrs&,
                    absl::Span<const Type>) -> absl::StatusOr<std::vector<Tensor>> {
        return std::vector<Tensor>{in[0]};
      });
}

}  // namespace hetpass
