// Matching of single-op image / pad / fill groups, their argument checks and the run-time
// values read on the host (see image_match.h): shared by the host's native kernels and the cuda
// device's NVRTC kernels, so that both take exactly the same groups with the same semantics.
//
// Phases: MatchImageGroup takes one call node whose operands are all parameters and whose
// result is returned, the op one of kOps with dtypes, ranks and attributes (with the
// registry's defaults, via CheckAttrs) in the supported set; Check* run each op's argument
// checks at run time and return the shapes the kernels loop over. Op identity is this file's
// business, as reduce_match.cc binds reductions.
#include "compile_engine/image_match.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/shape_funcs/op_ids.h"
#include "passes/shape_funcs/op_registry.h"
#include "passes/support/status_macros.h"

namespace hetpass::image_match {
namespace {

// ---- ops this file binds --------------------------------------------------------------------

struct OpEntry {
  OpId id;
  OpKind kind;
  int arity;
};
constexpr OpEntry kOps[] = {
    {OpId::kImageRoiAlign, OpKind::kRoiAlign, 3},
    {OpId::kImageResize2d, OpKind::kResize, 1},
    {OpId::kDynImageResize2d, OpKind::kDynResize, 2},
    {OpId::kNnPad, OpKind::kPad, 1},
    {OpId::kDynNnPad, OpKind::kDynPad, 3},
    {OpId::kDynZeros, OpKind::kZeros, 1},
    {OpId::kDynOnes, OpKind::kOnes, 1},
    {OpId::kDynFull, OpKind::kFull, 2},
};

// ---- match ----------------------------------------------------------------------------------

bool IsF32(const Type& t) { return t.is_tensor() && t.dtype() == DType::kF32; }
bool IsIntTensor(const Type& t) { return t.is_tensor() && IsInteger(t.dtype()); }
// A dtype whose scalar ScalarAt reads.
bool IsReadableScalar(const Type& t) {
  return t.is_tensor() && t.rank() == 0 &&
         (IsInteger(t.dtype()) || t.dtype() == DType::kF32 || t.dtype() == DType::kF64);
}

bool AttrsSupported(const ImageGroup& g, bool any_fill_dtype) {
  const Attrs& a = g.attrs;
  switch (g.kind) {
    case OpKind::kRoiAlign: {
      const std::string& mode = a.GetString("mode");
      const std::string& ctm = a.GetString("coordinate_transformation_mode");
      return (mode == "avg" || mode == "max") &&
             (ctm == "half_pixel" || ctm == "output_half_pixel") && a.GetInt("output_height") > 0 &&
             a.GetInt("output_width") > 0 && a.GetInt("sampling_ratio") >= 0;
    }
    case OpKind::kResize:
    case OpKind::kDynResize: {
      const std::string& layout = a.GetString("layout");
      const std::string& method = a.GetString("method");
      const std::string& ctm = a.GetString("coordinate_transformation_mode");
      const std::string& r = a.GetString("rounding_method");
      return (layout == "NCHW" || layout == "NHWC") &&
             (method == "linear" || method == "nearest_neighbor") &&
             (ctm == "half_pixel" || ctm == "align_corners" || ctm == "asymmetric" ||
              ctm == "pytorch_half_pixel" || ctm == "tf_half_pixel_for_nn") &&
             (r.empty() || r == "round" || r == "floor" || r == "ceil" ||
              r == "round_prefer_floor" || r == "round_prefer_ceil") &&
             (g.kind == OpKind::kDynResize || a.GetIntList("size").size() == 2);
    }
    case OpKind::kPad:
      return a.GetString("pad_mode") == "constant" &&
             static_cast<int>(a.GetIntList("pad_width").size()) == 2 * g.rank;
    case OpKind::kDynPad:
      return a.GetString("pad_mode") == "constant";
    case OpKind::kZeros:
    case OpKind::kOnes:
    case OpKind::kFull:
      return any_fill_dtype || a.GetDType("dtype") == DType::kF32;
  }
  return false;
}

// Operand roles for messages and the types each op takes.
bool OperandsSupported(ImageGroup& g, const Node& n) {
  auto type = [&](int i) -> const Type& { return n.operand(i)->type(); };
  std::vector<std::string> roles;
  bool ok = false;
  switch (g.kind) {
    case OpKind::kRoiAlign:
      roles = {"data", "rois", "batch_indices"};
      ok = IsF32(type(0)) && type(0).rank() == 4 && IsF32(type(1)) && type(1).rank() == 2 &&
           IsIntTensor(type(2)) && type(2).rank() == 1;
      break;
    case OpKind::kResize:
      roles = {"data"};
      ok = IsF32(type(0)) && type(0).rank() == 4;
      break;
    case OpKind::kDynResize:
      roles = {"data", "size"};
      ok = IsF32(type(0)) && type(0).rank() == 4 && IsIntTensor(type(1)) && type(1).rank() == 1;
      break;
    case OpKind::kPad:
      roles = {"data"};
      ok = IsF32(type(0));
      g.rank = ok ? type(0).rank() : 0;
      break;
    case OpKind::kDynPad:
      roles = {"data", "pad_width", "pad_value"};
      ok = IsF32(type(0)) && IsIntTensor(type(1)) && type(1).rank() == 1 &&
           IsReadableScalar(type(2));
      g.rank = ok ? type(0).rank() : 0;
      break;
    case OpKind::kZeros:
    case OpKind::kOnes:
      roles = {"shape"};
      ok = IsIntTensor(type(0)) && type(0).rank() == 1;
      break;
    case OpKind::kFull:
      roles = {"fill_value", "shape"};
      ok = IsReadableScalar(type(0)) && IsIntTensor(type(1)) && type(1).rank() == 1;
      break;
  }
  for (size_t i = 0; i < roles.size(); ++i) {
    g.operand_names.push_back(absl::StrFormat(
        "%s (%%%s)", roles[i], n.operand(i)->param_block()->param(g.param[i])->name()));
  }
  return ok;
}

}  // namespace

std::optional<ImageGroup> MatchImageGroup(const Function& f, bool any_fill_dtype) {
  if (!IsPrimitive(f)) return std::nullopt;
  const Block& body = f.body();
  if (body.nodes().size() != 1 || body.results().size() != 1) return std::nullopt;
  const Node& n = *body.nodes()[0];
  if (n.kind() != NodeKind::kCall || n.num_results() != 1 || n.op() == nullptr ||
      body.results()[0] != n.result()) {
    return std::nullopt;
  }
  const OpDef* op = n.op();
  const auto* e = std::find_if(std::begin(kOps), std::end(kOps),
                               [&](const OpEntry& o) { return o.id == OpIdOf(*op); });
  if (e == std::end(kOps) || n.num_operands() != e->arity) return std::nullopt;
  ImageGroup g;
  g.function = "@" + f.name();
  g.num_params = body.num_params();
  g.kind = e->kind;
  for (const Value* v : n.operands()) {
    if (!v->is_param() || v->param_block() != &body) return std::nullopt;
    g.param.push_back(v->index());
  }
  // The result's dtype is the data's (fills: the dtype attribute), checked below; the
  // result type itself may not be inferred yet.
  if (!OperandsSupported(g, n)) return std::nullopt;
  absl::StatusOr<Attrs> attrs = op->CheckAttrs(n.attrs());
  if (!attrs.ok()) return std::nullopt;
  g.attrs = *std::move(attrs);
  if (!AttrsSupported(g, any_fill_dtype)) return std::nullopt;
  if (g.kind == OpKind::kZeros || g.kind == OpKind::kOnes || g.kind == OpKind::kFull) {
    g.result_dtype = g.attrs.GetDType("dtype");
  }
  return g;
}

std::string OpLabel(const ImageGroup& g) {
  switch (g.kind) {
    case OpKind::kRoiAlign:
      return "roi_align";
    case OpKind::kResize:
    case OpKind::kDynResize:
      return absl::StrFormat("resize2d[%s]", g.attrs.GetString("method"));
    case OpKind::kPad:
    case OpKind::kDynPad:
      return "pad";
    default:
      return "fill";
  }
}

bool ImageRuns(const OpDef& op) {
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const OpEntry& e) { return e.id == OpIdOf(op); });
}

std::vector<int> HostValueParams(const ImageGroup& g) {
  switch (g.kind) {
    case OpKind::kDynResize:
    case OpKind::kDynPad:
    case OpKind::kFull:
      return {g.param[1]};  // size, pad_width, shape
    case OpKind::kZeros:
    case OpKind::kOnes:
      return {g.param[0]};  // shape
    default:
      return {};
  }
}

int FillParam(const ImageGroup& g) {
  if (g.kind == OpKind::kDynPad) return g.param[2];
  if (g.kind == OpKind::kFull) return g.param[0];
  return -1;
}

// ---- argument checks and host reads ---------------------------------------------------------

std::string ShapeStr(absl::Span<const int64_t> shape) {
  return absl::StrFormat("[%s]", absl::StrJoin(shape, ", "));
}

absl::Status Invalid(const ImageGroup& g, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", g.function, what));
}

absl::Status CheckCount(const ImageGroup& g, absl::Span<const TensorArg> args) {
  if (static_cast<int>(args.size()) == g.num_params + 1) return absl::OkStatus();
  return Invalid(g, absl::StrFormat("expected %d arguments (%d parameters, 1 result), got %d",
                                    g.num_params + 1, g.num_params, args.size()));
}

namespace {

absl::Status CheckData(const ImageGroup& g, const TensorArg& t, const std::string& name) {
  for (int64_t d : t.shape) {
    if (d < 0)
      return Invalid(g, absl::StrFormat("%s has a negative dim: %s", name, ShapeStr(t.shape)));
  }
  if (t.data == nullptr && t.num_elements() > 0) {
    return Invalid(g, absl::StrFormat("%s has no data", name));
  }
  return absl::OkStatus();
}

// An f32 tensor of `rank` (rank < 0: any rank) with data.
absl::Status CheckF32(const ImageGroup& g, const TensorArg& t, const std::string& name, int rank) {
  if (t.dtype != DType::kF32 || (rank >= 0 && static_cast<int>(t.shape.size()) != rank)) {
    return Invalid(g, absl::StrFormat("%s must be an f32 tensor of rank %d, got %s%s", name, rank,
                                      DTypeName(t.dtype), ShapeStr(t.shape)));
  }
  return CheckData(g, t, name);
}

// A 1-D integer tensor of `len` values (len < 0: any).
absl::Status CheckInts(const ImageGroup& g, const TensorArg& t, const std::string& name, int64_t len) {
  if (!IsInteger(t.dtype) || t.shape.size() != 1 || (len >= 0 && t.shape[0] != len)) {
    const std::string want =
        len >= 0 ? absl::StrFormat("%d integers", len) : std::string("a 1-D integer tensor");
    return Invalid(g, absl::StrFormat("%s must be %s, got %s%s", name, want, DTypeName(t.dtype),
                                      ShapeStr(t.shape)));
  }
  return CheckData(g, t, name);
}

absl::Status CheckScalar(const ImageGroup& g, const TensorArg& t, const std::string& name) {
  if (!t.shape.empty() || t.data == nullptr ||
      !(IsInteger(t.dtype) || t.dtype == DType::kF32 || t.dtype == DType::kF64)) {
    return Invalid(g, absl::StrFormat("%s must be a scalar, got %s%s", name, DTypeName(t.dtype),
                                      ShapeStr(t.shape)));
  }
  return absl::OkStatus();
}

absl::Status CheckResult(const ImageGroup& g, const TensorArg& out, absl::Span<const int64_t> want) {
  if (out.dtype == g.result_dtype &&
      std::equal(want.begin(), want.end(), out.shape.begin(), out.shape.end()) &&
      (out.data != nullptr || out.num_elements() == 0)) {
    return absl::OkStatus();
  }
  return Invalid(g, absl::StrFormat("result must be %s%s, got %s%s", DTypeName(g.result_dtype), ShapeStr(want),
                                    DTypeName(out.dtype), ShapeStr(out.shape)));
}

}  // namespace

// Element i of an integer tensor (dtype checked by the caller).
int64_t IntAt(const TensorArg& t, int64_t i) {
  const void* p = static_cast<const char*>(t.data) + i * DTypeSize(t.dtype);
  return LoadInteger(t.dtype, p).value_or(0);
}

std::vector<int64_t> Ints(const TensorArg& t) {
  std::vector<int64_t> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = IntAt(t, static_cast<int64_t>(i));
  return v;
}

// A scalar read as double, as Tensor::GetDouble (dtype checked by CheckScalar).
double ScalarAt(const TensorArg& t) {
  switch (t.dtype) {
    case DType::kF32:
      return *t.as<const float>();
    case DType::kF64:
      return *t.as<const double>();
    default:
      return static_cast<double>(IntAt(t, 0));
  }
}

// ---- per-op checks --------------------------------------------------------------------------

absl::StatusOr<RoiAlignShape> CheckRoiAlign(const ImageGroup& g, absl::Span<const TensorArg> args) {
  const TensorArg& data = args[g.param[0]];
  const TensorArg& rois = args[g.param[1]];
  const TensorArg& batch = args[g.param[2]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckF32(g, data, g.operand_names[0], 4));
  RETURN_IF_ERROR(CheckF32(g, rois, g.operand_names[1], 2));
  if (rois.shape[1] != 4) {
    return Invalid(
        g, absl::StrFormat("%s must be [R, 4], got %s", g.operand_names[1], ShapeStr(rois.shape)));
  }
  RoiAlignShape s;
  s.num_rois = rois.shape[0];
  RETURN_IF_ERROR(CheckInts(g, batch, g.operand_names[2], s.num_rois));
  s.out_h = g.attrs.GetInt("output_height"), s.out_w = g.attrs.GetInt("output_width");
  s.n = data.shape[0], s.channels = data.shape[1];
  s.height = data.shape[2], s.width = data.shape[3];
  const int64_t want[4] = {s.num_rois, s.channels, s.out_h, s.out_w};
  RETURN_IF_ERROR(CheckResult(g, out, want));
  return s;
}

absl::StatusOr<ResizeShape> CheckResize(const ImageGroup& g, absl::Span<const TensorArg> args) {
  const TensorArg& data = args[g.param[0]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckF32(g, data, g.operand_names[0], 4));
  int64_t size[2];
  if (g.kind == OpKind::kDynResize) {
    const TensorArg& s = args[g.param[1]];
    RETURN_IF_ERROR(CheckInts(g, s, g.operand_names[1], 2));
    size[0] = IntAt(s, 0), size[1] = IntAt(s, 1);
  } else {
    size[0] = g.attrs.GetIntList("size")[0], size[1] = g.attrs.GetIntList("size")[1];
  }
  if (size[0] <= 0 || size[1] <= 0) {
    return Invalid(g, absl::StrFormat("size must be positive, got [%d, %d]", size[0], size[1]));
  }
  ResizeShape r;
  r.nchw = g.attrs.GetString("layout") == "NCHW";
  const auto& xs = data.shape;
  r.n = xs[0], r.channels = r.nchw ? xs[1] : xs[3];
  r.in_h = r.nchw ? xs[2] : xs[1], r.in_w = r.nchw ? xs[3] : xs[2];
  r.out_h = size[0], r.out_w = size[1];
  const std::vector<int64_t> want =
      r.nchw ? std::vector<int64_t>{r.n, r.channels, r.out_h, r.out_w}
             : std::vector<int64_t>{r.n, r.out_h, r.out_w, r.channels};
  RETURN_IF_ERROR(CheckResult(g, out, want));
  if (out.num_elements() > 0 && (r.in_h == 0 || r.in_w == 0)) {
    return Invalid(
        g, absl::StrFormat("%s has an empty image %s to resize", g.operand_names[0], ShapeStr(xs)));
  }
  return r;
}

absl::StatusOr<PadShape> CheckPad(const ImageGroup& g, absl::Span<const TensorArg> args) {
  const TensorArg& data = args[g.param[0]];
  const TensorArg& out = args[g.num_params];
  RETURN_IF_ERROR(CheckF32(g, data, g.operand_names[0], g.rank));
  PadShape p;
  if (g.kind == OpKind::kDynPad) {
    RETURN_IF_ERROR(CheckInts(g, args[g.param[1]], g.operand_names[1], 2 * g.rank));
    RETURN_IF_ERROR(CheckScalar(g, args[g.param[2]], g.operand_names[2]));
    p.pads = Ints(args[g.param[1]]);
  } else {
    p.pads = g.attrs.GetIntList("pad_width");
  }
  for (int a = 0; a < g.rank; ++a) {
    p.out_shape.push_back(data.shape[a] + p.pads[2 * a] + p.pads[2 * a + 1]);
    if (p.out_shape.back() < 0) {
      return Invalid(g,
                     absl::StrFormat("axis %d would have negative size %d", a, p.out_shape.back()));
    }
  }
  RETURN_IF_ERROR(CheckResult(g, out, p.out_shape));
  return p;
}

absl::StatusOr<std::vector<int64_t>> CheckFill(const ImageGroup& g,
                                               absl::Span<const TensorArg> args) {
  const int shape_operand = g.kind == OpKind::kFull ? 1 : 0;
  const TensorArg& s = args[g.param[shape_operand]];
  RETURN_IF_ERROR(CheckInts(g, s, g.operand_names[shape_operand], -1));
  if (g.kind == OpKind::kFull) RETURN_IF_ERROR(CheckScalar(g, args[g.param[0]], g.operand_names[0]));
  std::vector<int64_t> want = Ints(s);
  for (int64_t d : want) {
    if (d < 0) return Invalid(g, absl::StrFormat("shape value %d is negative", d));
  }
  RETURN_IF_ERROR(CheckResult(g, args[g.num_params], want));
  return want;
}

}  // namespace hetpass::image_match
