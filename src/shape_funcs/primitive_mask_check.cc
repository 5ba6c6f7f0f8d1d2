// The mask check of primitive functions (phases in the header): one base run of the composed
// shape function with everything visible and its reads recorded, the reads compared with the
// mask, then one rerun per perturbation of what the mask leaves out, each compared with the
// base run (result types and reads).
#include "passes/shape_funcs/primitive_mask_check.h"

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "passes/support/status_macros.h"
#include "passes/shape_funcs/primitive_function.h"

namespace hetpass {
namespace {

// One run: what it returned and what it read.
struct Run {
  absl::StatusOr<std::vector<Type>> types;
  std::vector<InputDep> reads;
};

Run RunShapeFunction(const Function& f, absl::Span<const Tensor> args) {
  std::vector<ShapeInput> inputs;
  for (const Tensor& t : args) inputs.push_back(ShapeInput{t.type(), &t});
  PrimitiveShapeRunOptions options;
  options.apply_derived_mask = false;
  Run run{std::vector<Type>{}, {}};
  options.reads = &run.reads;
  run.types = InferPrimitiveTypes(f, std::move(inputs), options);
  return run;
}

std::string Describe(const Run& run) {
  if (!run.types.ok()) return absl::StrCat("error: ", run.types.status().message());
  std::vector<std::string> parts;
  for (const Type& t : *run.types) parts.push_back(t.ToString());
  return absl::StrJoin(parts, ", ");
}

std::string DescribeReads(const std::vector<InputDep>& reads) {
  std::vector<std::string> parts;
  for (InputDep d : reads) parts.push_back(std::string(InputDepName(d)));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

bool SameRun(const Run& a, const Run& b) {
  if (a.types.ok() != b.types.ok() || a.reads != b.reads) return false;
  return !a.types.ok() || *a.types == *b.types;
}

class Checker {
 public:
  Checker(const Function& f, absl::Span<const InputDep> mask, absl::Span<const Tensor> args,
          const PrimitiveMaskCheckOptions& options)
      : f_(f), mask_(mask), args_(args), options_(options), rng_(options.seed) {}

  absl::Status Check() {
    const Block& body = f_.body();
    if (static_cast<int>(mask_.size()) != body.num_params() ||
        static_cast<int>(args_.size()) != body.num_params()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("mask check of @%s: %d parameters, but %d mask entries and %d arguments",
                          f_.name(), body.num_params(), mask_.size(), args_.size()));
    }
    // Phase 1: the base run, and its reads against the mask.
    base_ = RunShapeFunction(f_, args_);
    if (!base_.types.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("mask check of @", f_.name(),
                                                     ": the shape function fails on the "
                                                     "arguments: ",
                                                     base_.types.status().message()));
    }
    for (int p = 0; p < body.num_params(); ++p) {
      const InputDep read = base_.reads[p];
      if (NeedsShape(read) && !NeedsShape(mask_[p])) return ReadError(p, "shape");
      if (NeedsValue(read) && !NeedsValue(mask_[p])) return ReadError(p, "values");
    }
    // Phase 2: perturb what the mask leaves out.
    for (int p = 0; p < body.num_params(); ++p) {
      if (!NeedsValue(mask_[p])) {
        for (int k = 0; k < options_.perturbations; ++k) {
          if (std::optional<Tensor> t = PerturbValues(args_[p])) {
            RETURN_IF_ERROR(CompareWith(p, *std::move(t), "values"));
          }
        }
      }
      if (!NeedsShape(mask_[p]) && !NeedsValue(mask_[p])) {
        if (std::optional<Tensor> t = PerturbShape(p)) {
          RETURN_IF_ERROR(CompareWith(p, *std::move(t), "shape"));
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string ParamText(int p) const {
    const Value* v = f_.body().param(p);
    return v->name().empty() ? absl::StrCat("parameter ", p)
                             : absl::StrCat("parameter ", p, " %", v->name());
  }

  absl::Status ReadError(int p, absl::string_view what) const {
    return absl::FailedPreconditionError(absl::StrFormat(
        "mask of @%s is under-declared: %s is read for its %s, but its mask "
        "is '%s' (reads: %s)",
        f_.name(), ParamText(p), what, InputDepName(mask_[p]), DescribeReads(base_.reads)));
  }

  // Reruns with argument p replaced by `t`; any difference from the base run is an error.
  absl::Status CompareWith(int p, Tensor t, absl::string_view what) const {
    std::vector<Tensor> args(args_.begin(), args_.end());
    args[p] = std::move(t);
    const Run run = RunShapeFunction(f_, args);
    if (SameRun(run, base_)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrFormat(
        "mask of @%s is under-declared: changing the %s of %s (mask '%s') changed the shape "
        "function: %s reading %s, then %s reading %s",
        f_.name(), what, ParamText(p), InputDepName(mask_[p]), Describe(base_),
        DescribeReads(base_.reads), Describe(run), DescribeReads(run.reads)));
  }

  int64_t Int(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // Same shape, other contents; nullopt when there is nothing to change.
  std::optional<Tensor> PerturbValues(const Tensor& t) {
    const int64_t n = t.num_elements();
    if (n == 0) return std::nullopt;
    Tensor out = t;
    const int64_t i = Int(0, n - 1);
    if (t.dtype() == DType::kBool) {
      out.SetInt64(i, 1 - t.GetInt64(i));
      return out;
    }
    const int64_t j = Int(0, n - 1);
    switch (Int(0, 2)) {
      case 0:  // swapped: keeps a product or a set of values, changes their order
        if (t.GetDouble(i) != t.GetDouble(j)) {
          out.SetDouble(i, t.GetDouble(j));
          out.SetDouble(j, t.GetDouble(i));
          return out;
        }
        break;
      case 1:  // negated: an axis counted from the other end
        if (t.GetDouble(i) != 0) {
          out.SetDouble(i, -t.GetDouble(i));
          return out;
        }
        break;
      default:
        break;
    }
    const int64_t step = Int(1, 3);
    out.SetDouble(i, t.GetDouble(i) + (Int(0, 1) == 0 ? step : -step));
    return out;
  }

  // Argument p with every dim its declared type leaves open changed by one; nullopt when the
  // type fixes every dim.
  std::optional<Tensor> PerturbShape(int p) {
    const Type& declared = f_.body().param(p)->type();
    const Tensor& t = args_[p];
    if (!declared.is_tensor() || declared.rank() != t.rank()) return std::nullopt;
    std::vector<int64_t> shape = t.shape();
    bool changed = false;
    for (int j = 0; j < t.rank(); ++j) {
      if (declared.shape()[j].is_constant()) continue;
      shape[j] = shape[j] > 1 && Int(0, 1) == 0 ? shape[j] - 1 : shape[j] + 1;
      changed = true;
    }
    if (!changed) return std::nullopt;
    Tensor out = Tensor::Zeros(t.dtype(), shape);
    for (int64_t i = 0; i < out.num_elements() && t.num_elements() > 0; ++i) {
      out.SetDouble(i, t.GetDouble(i % t.num_elements()));
    }
    return out;
  }

  const Function& f_;
  absl::Span<const InputDep> mask_;
  absl::Span<const Tensor> args_;
  const PrimitiveMaskCheckOptions& options_;
  std::mt19937_64 rng_;
  Run base_{std::vector<Type>{}, {}};
};

}  // namespace

absl::Status CheckPrimitiveMask(const Function& primitive, absl::Span<const InputDep> mask,
                                absl::Span<const Tensor> args,
                                const PrimitiveMaskCheckOptions& options) {
  return Checker(primitive, mask, args, options).Check();
}

}  // namespace hetpass
