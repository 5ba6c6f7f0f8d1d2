#include "compile_engine/image_kernel.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/compile_engine/compile_engine.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::hetpass::testing::Arg;
using ::hetpass::testing::Interpret;
using ::hetpass::testing::RandomF32;
using ::testing::HasSubstr;

std::unique_ptr<Module> Parse(const std::string& text) { return testing::Parse(text); }

std::string Shape(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

// Equal within `tol` relative, NaN matching NaN.
::testing::AssertionResult SameValues(const Tensor& got, const Tensor& want, double tol) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure()
           << "got " << got.type().ToString() << ", want " << want.type().ToString();
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    const bool ok = std::isnan(b) ? std::isnan(a) : std::abs(a - b) <= tol * (1.0 + std::abs(b));
    if (!ok) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

absl::StatusOr<Tensor> RunNative(const Function& f, const std::vector<Tensor>& params,
                                 const std::vector<int64_t>& out_shape,
                                 DType out_dtype = DType::kF32) {
  ASSIGN_OR_RETURN(auto kernel, CompileImageOrFillGroup(f));
  ASSIGN_OR_RETURN(auto instance,
                   kernel->Instantiate(std::vector<const Tensor*>(params.size(), nullptr)));
  Tensor out = Tensor::Zeros(out_dtype, out_shape);
  std::vector<TensorArg> args;
  for (const Tensor& p : params) args.push_back(Arg(p));
  args.push_back(TensorArg{out.mutable_data(), out.dtype(), absl::MakeConstSpan(out.shape())});
  RETURN_IF_ERROR(instance->Run(args));
  return out;
}

// Runs `f` natively and through the reference; both must succeed and agree.
void ExpectMatchesReference(const Function& f, const std::vector<Tensor>& params, double tol,
                            const std::string& what) {
  ASSERT_TRUE(IsImageOrFillGroup(f)) << what;
  auto want = Interpret(f, params);
  ASSERT_TRUE(want.ok()) << want.status() << " " << what;
  auto got = RunNative(f, params, want->shape());
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  EXPECT_TRUE(SameValues(*got, *want, tol)) << what;
}

Tensor Ints(DType dtype, const std::vector<int64_t>& v) {
  Tensor t = Tensor::Zeros(dtype, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.SetInt64(static_cast<int64_t>(i), v[i]);
  return t;
}

// Tests roi_align against the reference on random images (incl. empty planes, no rois, zero
// channels) and rois (inside, partly outside, degenerate), both modes, both coordinate
// transformations, sampling_ratio 0 (adaptive) and fixed, several scales.
TEST(ImageKernel, RoiAlignMatchesReference) {
  std::mt19937 rng(11);
  const std::vector<int64_t> dims = {0, 1, 2, 5, 9, 16};
  for (int trial = 0; trial < 120; ++trial) {
    const int64_t n = 1 + rng() % 2, c = rng() % 4, h = dims[rng() % dims.size()],
                  w = dims[rng() % dims.size()], r = rng() % 5;
    const std::string mode = rng() % 2 ? "avg" : "max";
    const std::string ctm = rng() % 2 ? "half_pixel" : "output_half_pixel";
    const int64_t oh = 1 + rng() % 4, ow = 1 + rng() % 4, sr = rng() % 3;
    const double scale = std::vector<double>{1.0, 0.5, 0.25}[rng() % 3];
    const std::string text = absl::StrCat(
        "def @f(%x: f32[n, c, h, w], %r: f32[k, 4], %b: i64[k]) attributes {primitive = true} "
        "{\n  %y = image.roi_align(%x, %r, %b) {mode = \"",
        mode, "\", output_height = ", oh, ", output_width = ", ow, ", sampling_ratio = ", sr,
        ", spatial_scale = ", scale, ", coordinate_transformation_mode = \"", ctm,
        "\"}\n  return %y\n}\n");
    auto m = Parse(text);
    ASSERT_NE(m, nullptr) << text;
    Tensor rois = RandomF32({r, 4}, trial + 100, 1.0);
    float* p = rois.mutable_data_as<float>();
    const double extent = 2.0 * static_cast<double>(std::max(h, w)) / scale;
    for (int64_t i = 0; i < r; ++i) {
      // x1, y1 in [-2, extent); x2, y2 after them (sometimes before: a degenerate roi).
      const float x1 = static_cast<float>((p[4 * i] + 1) * extent / 2 - 2);
      const float y1 = static_cast<float>((p[4 * i + 1] + 1) * extent / 2 - 2);
      p[4 * i] = x1;
      p[4 * i + 1] = y1;
      p[4 * i + 2] = x1 + static_cast<float>(p[4 * i + 2] * extent / 2 + extent / 4);
      p[4 * i + 3] = y1 + static_cast<float>(p[4 * i + 3] * extent / 2 + extent / 4);
    }
    std::vector<int64_t> batch;
    for (int64_t i = 0; i < r; ++i) batch.push_back(rng() % n);
    ExpectMatchesReference(
        *m->FindFunction("f"),
        {RandomF32({n, c, h, w}, trial + 1, 3.0), rois, Ints(DType::kI64, batch)}, 1e-6,
        absl::StrCat(text, Shape({n, c, h, w}), " rois ", r));
  }
}

// Tests roi_align on maskrcnn_tiny's shapes (box head: 100 rois over a [1, 32, 24, 16] map,
// the HWC path; mask head 14 x 14) and on a large map with few rois (the plane path).
TEST(ImageKernel, RoiAlignModelShapes) {
  struct Case {
    std::vector<int64_t> data;
    int64_t rois, out, ratio;
    double scale;
  };
  for (const Case& c :
       {Case{{1, 32, 24, 16}, 100, 7, 2, 0.0625}, Case{{1, 32, 24, 16}, 13, 14, 2, 0.0625},
        Case{{2, 8, 64, 80}, 3, 7, 0, 0.25}}) {
    for (const std::string mode : {"avg", "max"}) {
      const std::string text = absl::StrCat(
          "def @f(%x: f32[n, c, h, w], %r: f32[k, 4], %b: i32[k]) attributes {primitive = true} "
          "{\n  %y = image.roi_align(%x, %r, %b) {mode = \"",
          mode, "\", output_height = ", c.out, ", output_width = ", c.out,
          ", sampling_ratio = ", c.ratio, ", spatial_scale = ", c.scale, "}\n  return %y\n}\n");
      auto m = Parse(text);
      ASSERT_NE(m, nullptr) << text;
      Tensor rois = RandomF32({c.rois, 4}, 9, 1.0);
      float* p = rois.mutable_data_as<float>();
      const double h = c.data[2] / c.scale, w = c.data[3] / c.scale;
      for (int64_t i = 0; i < c.rois; ++i) {
        const float x1 = static_cast<float>((p[4 * i] + 1) * w / 2);
        const float y1 = static_cast<float>((p[4 * i + 1] + 1) * h / 2);
        p[4 * i] = x1;
        p[4 * i + 1] = y1;
        p[4 * i + 2] = x1 + static_cast<float>((p[4 * i + 2] + 1) * w / 4);
        p[4 * i + 3] = y1 + static_cast<float>((p[4 * i + 3] + 1) * h / 4);
      }
      std::vector<int64_t> batch;
      for (int64_t i = 0; i < c.rois; ++i) batch.push_back(i % c.data[0]);
      ExpectMatchesReference(*m->FindFunction("f"),
                             {RandomF32(c.data, 4, 2.0), rois, Ints(DType::kI32, batch)}, 1e-6,
                             absl::StrCat(text, Shape(c.data)));
    }
  }
}

// Tests resize2d and dyn.image.resize2d against the reference for every method the kernel
// takes, every coordinate transformation and rounding mode, both layouts, up- and
// down-sampling and sizes of 1.
TEST(ImageKernel, ResizeMatchesReference) {
  const std::vector<std::string> ctms = {"half_pixel", "align_corners", "asymmetric",
                                         "pytorch_half_pixel", "tf_half_pixel_for_nn"};
  const std::vector<std::string> roundings = {
      "", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"};
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const bool dyn = rng() % 2, nchw = rng() % 3 != 0;
    const std::string method = rng() % 2 ? "linear" : "nearest_neighbor";
    const std::string& ctm = ctms[rng() % ctms.size()];
    const std::string& rounding = roundings[rng() % roundings.size()];
    const int64_t n = rng() % 3, c = 1 + rng() % 3, h = 1 + rng() % 7, w = 1 + rng() % 7;
    const int64_t oh = 1 + rng() % 12, ow = 1 + rng() % 12;
    const std::string attrs = absl::StrCat("layout = \"", nchw ? "NCHW" : "NHWC", "\", method = \"",
                                           method, "\", coordinate_transformation_mode = \"", ctm,
                                           "\", rounding_method = \"", rounding, "\"");
    const std::string text =
        dyn ? absl::StrCat(
                  "def @f(%x: f32[a, b, c, d], %s: i64[2]) attributes {primitive = "
                  "true} {\n  %y = dyn.image.resize2d(%x, %s) {",
                  attrs, "}\n  return %y\n}\n")
            : absl::StrCat(
                  "def @f(%x: f32[a, b, c, d]) attributes {primitive = true} {\n"
                  "  %y = image.resize2d(%x) {size = [",
                  oh, ", ", ow, "], ", attrs, "}\n  return %y\n}\n");
    auto m = Parse(text);
    ASSERT_NE(m, nullptr) << text;
    const std::vector<int64_t> shape =
        nchw ? std::vector<int64_t>{n, c, h, w} : std::vector<int64_t>{n, h, w, c};
    std::vector<Tensor> params;
    params.reserve(2);
    params.push_back(RandomF32(shape, trial + 1, 2.0));
    if (dyn) params.push_back(Ints(DType::kI64, {oh, ow}));
    ExpectMatchesReference(*m->FindFunction("f"), params, 1e-6,
                           absl::StrCat(text, Shape(shape), " -> ", oh, "x", ow));
  }
}

// Tests constant nn.pad and dyn.nn.pad against the reference on random shapes (rank 0..4,
// empty dims, empty outputs) and pads (zero, positive, negative = cropping).
TEST(ImageKernel, PadMatchesReference) {
  std::mt19937 rng(3);
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int rank = static_cast<int>(rng() % 5);
    const bool dyn = rng() % 2;
    std::vector<int64_t> shape, pads;
    for (int a = 0; a < rank; ++a) {
      shape.push_back(std::vector<int64_t>{0, 1, 2, 3, 6}[rng() % 5]);
      for (int k = 0; k < 2; ++k) {
        pads.push_back(static_cast<int64_t>(rng() % 4) - 1);
      }
      if (shape.back() + pads[2 * a] + pads[2 * a + 1] < 0) pads[2 * a] = pads[2 * a + 1] = 0;
    }
    std::vector<std::string> dims;
    for (int a = 0; a < rank; ++a) dims.push_back(absl::StrCat("d", a));
    const std::string type = absl::StrCat("f32[", absl::StrJoin(dims, ", "), "]");
    const std::string text =
        dyn ? absl::StrCat("def @f(%x: ", type, ", %p: i64[", 2 * rank,
                           "], %v: f32[]) attributes {primitive = true} {\n"
                           "  %y = dyn.nn.pad(%x, %p, %v)\n  return %y\n}\n")
            : absl::StrCat("def @f(%x: ", type,
                           ") attributes {primitive = true} {\n  %y = nn.pad(%x) {pad_width = [",
                           absl::StrJoin(pads, ", "), "], pad_value = -1.5}\n  return %y\n}\n");
    auto m = Parse(text);
    ASSERT_NE(m, nullptr) << text;
    std::vector<Tensor> params;
    params.reserve(3);
    params.push_back(RandomF32(shape, trial + 1));
    if (dyn) {
      params.push_back(Ints(DType::kI64, pads));
      params.push_back(Tensor::Scalar(DType::kF32, 0.25));
    }
    ExpectMatchesReference(*m->FindFunction("f"), params, 0,
                           absl::StrCat(text, Shape(shape), " pads ", Shape(pads)));
    ++compared;
  }
  EXPECT_EQ(compared, 300);
}

// Tests dyn.zeros, dyn.ones and dyn.full against the reference, including empty shapes, rank
// 0 and an i32 shape operand.
TEST(ImageKernel, FillsMatchReference) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {0}, {3}, {2, 0, 4}, {2, 3, 5}};
  for (const auto& s : shapes) {
    const int64_t rank = static_cast<int64_t>(s.size());
    for (const std::string op : {"dyn.zeros", "dyn.ones"}) {
      auto m = Parse(absl::StrCat("def @f(%s: i32[", rank,
                                  "]) attributes {primitive = true} {\n  %y = ", op,
                                  "(%s)\n  return %y\n}\n"));
      ASSERT_NE(m, nullptr);
      ExpectMatchesReference(*m->FindFunction("f"), {Ints(DType::kI32, s)}, 0,
                             absl::StrCat(op, Shape(s)));
    }
    auto m = Parse(absl::StrCat("def @f(%v: f32[], %s: i64[", rank,
                                "]) attributes {primitive = true} {\n"
                                "  %y = dyn.full(%v, %s)\n  return %y\n}\n"));
    ASSERT_NE(m, nullptr);
    ExpectMatchesReference(*m->FindFunction("f"),
                           {Tensor::Scalar(DType::kF32, -2.5), Ints(DType::kI64, s)}, 0,
                           absl::StrCat("dyn.full", Shape(s)));
  }
}

// Tests that the compile engine picks these kernels, and only with the kernel library on.
TEST(ImageKernel, EnginePicksThem) {
  auto m = Parse(
      "def @f(%x: f32[n, c, h, w], %r: f32[k, 4], %b: i64[k]) attributes {primitive = true} {\n"
      "  %y = image.roi_align(%x, %r, %b) {output_height = 7, output_width = 7}\n"
      "  return %y\n}\n"
      "def @g(%x: f32[n, c, h, w], %s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.image.resize2d(%x, %s)\n  return %y\n}\n"
      "def @p(%x: f32[n, c]) attributes {primitive = true} {\n"
      "  %y = nn.pad(%x) {pad_width = [0, 0, 1, 2]}\n  return %y\n}\n"
      "def @z(%s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.zeros(%s)\n  return %y\n}\n");
  ASSERT_NE(m, nullptr);
  CompileEngine engine;
  const std::vector<std::pair<std::string, std::string>> want = {{"f", "native roi_align"},
                                                                 {"g", "native resize2d[linear]"},
                                                                 {"p", "native pad"},
                                                                 {"z", "native fill"}};
  for (const auto& [name, describe] : want) {
    auto k = engine.Lower(*m->FindFunction(name), DeviceKind::kCpu);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ((*k)->Describe(), describe);
  }
  CompileEngine reference_only(CompileEngineOptions{.use_kernel_library = false, .use_jit = false, .providers = {}});
  auto r = reference_only.Lower(*m->FindFunction("f"), DeviceKind::kCpu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)->Describe(), "reference[image.roi_align]");
}

// Tests what the matcher refuses (the reference runs them): two ops, cubic, edge / reflect
// padding, other dtypes, an operand that is not a parameter; compiling them is Unimplemented
// naming the function.
TEST(ImageKernel, MatchesOnlyItsGroups) {
  const std::vector<std::string> refused = {
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %y = nn.pad(%x) {pad_width = [1, 1, 1, 1]}\n  %z = expand_dims(%y) {axis = 0}\n"
      "  return %z\n}\n",
      "def @f(%x: f32[a, b, c, d]) attributes {primitive = true} {\n"
      "  %y = image.resize2d(%x) {size = [4, 4], method = \"cubic\"}\n  return %y\n}\n",
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %y = nn.pad(%x) {pad_width = [1, 1, 1, 1], pad_mode = \"edge\"}\n  return %y\n}\n",
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %y = nn.pad(%x) {pad_width = [1, 1, 1, 1], pad_mode = \"reflect\"}\n  return %y\n}\n",
      "def @f(%x: f64[a, b]) attributes {primitive = true} {\n"
      "  %y = nn.pad(%x) {pad_width = [1, 1, 1, 1]}\n  return %y\n}\n",
      "def @f(%s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.zeros(%s) {dtype = i64}\n  return %y\n}\n",
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %y = negative(%x)\n  return %y\n}\n",
      "def @f(%x: f32[a, b]) attributes {primitive = true} {\n"
      "  %n = negative(%x)\n  %y = nn.pad(%n) {pad_width = [1, 1, 1, 1]}\n  return %y\n}\n",
  };
  for (const std::string& text : refused) {
    auto m = Parse(text);
    ASSERT_NE(m, nullptr) << text;
    const Function& f = *m->FindFunction("f");
    EXPECT_FALSE(IsImageOrFillGroup(f)) << text;
    auto k = CompileImageOrFillGroup(f);
    ASSERT_FALSE(k.ok()) << text;
    EXPECT_TRUE(absl::IsUnimplemented(k.status())) << k.status();
    EXPECT_THAT(k.status().message(), HasSubstr("@f: not a single")) << text;
  }
}

// Tests that run-time arguments that do not fit are InvalidArgument naming the function and
// the argument.
TEST(ImageKernel, BadArgumentsAreErrors) {
  auto expect_error = [](const absl::StatusOr<Tensor>& r, const std::string& text) {
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(text));
  };
  auto m = Parse(
      "def @roi(%x: f32[n, c, h, w], %r: f32[k, 4], %b: i64[k]) attributes {primitive = true} {\n"
      "  %y = image.roi_align(%x, %r, %b) {output_height = 2, output_width = 2}\n"
      "  return %y\n}\n"
      "def @rs(%x: f32[n, c, h, w], %s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.image.resize2d(%x, %s)\n  return %y\n}\n"
      "def @pad(%x: f32[a, b], %p: i64[4], %v: f32[]) attributes {primitive = true} {\n"
      "  %y = dyn.nn.pad(%x, %p, %v)\n  return %y\n}\n"
      "def @z(%s: i64[2]) attributes {primitive = true} {\n"
      "  %y = dyn.zeros(%s)\n  return %y\n}\n");
  ASSERT_NE(m, nullptr);
  const Function& roi = *m->FindFunction("roi");
  const Tensor x = RandomF32({1, 2, 4, 4}, 1);
  const Tensor rois = RandomF32({1, 4}, 2);
  expect_error(RunNative(roi, {x, rois, Ints(DType::kI64, {1})}, {1, 2, 2, 2}),
               "@roi: batch index 1 of roi 0 is outside the batch of 1");
  expect_error(RunNative(roi, {x, rois, Ints(DType::kI64, {0})}, {1, 2, 3, 2}),
               "@roi: result must be f32[1, 2, 2, 2], got f32[1, 2, 3, 2]");
  expect_error(
      RunNative(roi, {RandomF32({2, 4, 4}, 1), rois, Ints(DType::kI64, {0})}, {1, 2, 2, 2}),
      "@roi: data (%x) must be an f32 tensor of rank 4, got f32[2, 4, 4]");
  expect_error(RunNative(roi, {x, RandomF32({1, 3}, 2), Ints(DType::kI64, {0})}, {1, 2, 2, 2}),
               "@roi: rois (%r) must be [R, 4], got [1, 3]");
  expect_error(RunNative(roi, {x, rois, Ints(DType::kI64, {0, 0})}, {1, 2, 2, 2}),
               "@roi: batch_indices (%b) must be 1 integers, got i64[2]");
  expect_error(RunNative(roi, {x, rois}, {1, 2, 2, 2}),
               "@roi: expected 4 arguments (3 parameters, 1 result), got 3");

  const Function& rs = *m->FindFunction("rs");
  expect_error(RunNative(rs, {x, Ints(DType::kI64, {3, 3})}, {1, 2, 3, 4}),
               "@rs: result must be f32[1, 2, 3, 3], got f32[1, 2, 3, 4]");
  expect_error(RunNative(rs, {x, Ints(DType::kI64, {0, 3})}, {1, 2, 0, 3}),
               "@rs: size must be positive, got [0, 3]");
  expect_error(RunNative(rs, {x, Ints(DType::kI64, {3})}, {1, 2, 3, 3}),
               "@rs: size (%s) must be 2 integers, got i64[1]");

  const Function& pad = *m->FindFunction("pad");
  const Tensor v = Tensor::Scalar(DType::kF32, 1);
  expect_error(RunNative(pad, {RandomF32({2, 3}, 1), Ints(DType::kI64, {1, 1, 0, 0}), v}, {3, 3}),
               "@pad: result must be f32[4, 3], got f32[3, 3]");
  expect_error(RunNative(pad, {RandomF32({2, 3}, 1), Ints(DType::kI64, {-3, 0, 0, 0}), v}, {0, 3}),
               "@pad: axis 0 would have negative size -1");
  expect_error(RunNative(pad, {RandomF32({2, 3}, 1), Ints(DType::kI64, {1, 1}), v}, {4, 3}),
               "@pad: pad_width (%p) must be 4 integers, got i64[2]");
  expect_error(
      RunNative(pad, {RandomF32({2, 3}, 1), Ints(DType::kI64, {0, 0, 0, 0}), RandomF32({1}, 1)},
                {2, 3}),
      "@pad: pad_value (%v) must be a scalar, got f32[1]");

  const Function& z = *m->FindFunction("z");
  expect_error(RunNative(z, {Ints(DType::kI64, {2, -1})}, {2, 0}),
               "@z: shape value -1 is negative");
  expect_error(RunNative(z, {Ints(DType::kI64, {2, 3})}, {3, 2}),
               "@z: result must be f32[2, 3], got f32[3, 2]");
  expect_error(RunNative(z, {Ints(DType::kI64, {2, 3})}, {2, 3}, DType::kI64),
               "@z: result must be f32[2, 3], got i64[2, 3]");
}

}  // namespace
}  // namespace hetpass
