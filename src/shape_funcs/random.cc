// Random draws: random.uniform_like and random.normal_like, a tensor of the shape of `data`
// (only its shape is read: mask `shape`) and of dtype `dtype`, filled with independent draws
// from U[low, high) or N(mean, scale^2). They are the ONNX RandomUniform(Like) and
// RandomNormal(Like) ops, and Bernoulli and training-mode Dropout are built on the uniform one.
//
// The ops are impure (OpDef::impure): fold-constants never turns a draw into a constant and CSE
// never merges two draws. `seed` >= 0 fixes the stream of every call (a seeded op draws the same
// numbers each time it runs, so its results are reproducible and the kernels comparable); -1
// draws a fresh seed from std::random_device per call. The reference kernel is the only one: a
// mt19937_64 stream in element order, converted through double.
#include "shape_funcs/random.h"

#include <random>

#include "absl/strings/str_format.h"
#include "passes/support/status_macros.h"
#include "shape_funcs/rule_helpers.h"

namespace hetpass {
namespace {

using Result = absl::StatusOr<std::vector<Type>>;
using KernelResult = absl::StatusOr<std::vector<Tensor>>;

Result RandomRule(ShapeContext& ctx) {
  const DType dt = ctx.attrs().GetDType("dtype");
  if (!IsFloat(dt)) {
    return ctx.Error(absl::StrFormat("dtype must be floating point, got %s", DTypeName(dt)));
  }
  ASSIGN_OR_RETURN(auto shape, ctx.Shape(0));
  return shape_rules::One(Type::Tensor(dt, {shape.begin(), shape.end()}));
}

std::mt19937_64 Stream(const Attrs& attrs) {
  const int64_t seed = attrs.GetInt("seed");
  return std::mt19937_64(seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}());
}

template <typename Distribution>
KernelResult Draw(Distribution dist, const Attrs& attrs, absl::Span<const Type> out_t) {
  Tensor out = shape_rules::ZerosOf(out_t[0]);
  std::mt19937_64 gen = Stream(attrs);
  for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, dist(gen));
  return std::vector<Tensor>{std::move(out)};
}

OpDefBuilder RandomOp(OpRegistry::Builder& b, std::string name, std::string doc) {
  OpDefBuilder op = b.Register(std::move(name));
  op.Input("data", InputDep::kShape)
      .Attr("dtype", AttrType::kDType, DType::kF32)
      .Attr("seed", AttrType::kInt, int64_t{-1})
      .Pattern(FusionPattern::kOpaque)
      .Impure()
      .Doc(std::move(doc))
      .Rule(RandomRule);
  return op;
}

}  // namespace

void RegisterRandomOps(OpRegistry::Builder& b) {
  RandomOp(b, "random.uniform_like", "draws from U[low, high) in the shape of data (seed -1: "
                                      "a fresh one per call)")
      .Attr("low", AttrType::kFloat, 0.0)
      .Attr("high", AttrType::kFloat, 1.0)
      .Reference([](absl::Span<const Tensor>, const Attrs& attrs,
                    absl::Span<const Type> out_t) -> KernelResult {
        const double low = attrs.GetFloat("low"), high = attrs.GetFloat("high");
        if (!(low <= high)) {
          return absl::InvalidArgumentError(
              absl::StrFormat("random.uniform_like: low %g is above high %g", low, high));
        }
        return Draw(std::uniform_real_distribution<double>(low, high), attrs, out_t);
      });
  RandomOp(b, "random.normal_like", "draws from N(mean, scale^2) in the shape of data (seed -1: "
                                     "a fresh one per call)")
      .Attr("mean", AttrType::kFloat, 0.0)
      .Attr("scale", AttrType::kFloat, 1.0)
      .Reference([](absl::Span<const Tensor>, const Attrs& attrs,
                    absl::Span<const Type> out_t) -> KernelResult {
        const double scale = attrs.GetFloat("scale");
        if (!(scale >= 0)) {
          return absl::InvalidArgumentError(
              absl::StrFormat("random.normal_like: scale %g is negative", scale));
        }
        return Draw(std::normal_distribution<double>(attrs.GetFloat("mean"), scale), attrs, out_t);
      });
}

}  // namespace hetpass
