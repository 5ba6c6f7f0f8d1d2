// Tests of the cuda device's NVRTC kernels for roi_align, resize2d, pad and the fills
// (nvrtc_image.h): the groups taken are exactly the host's (image_match), every op / mode
// variant compiles into PTX that ptxas accepts for sm_80 and sm_90 (no GPU needed), and on a GPU
// the results equal the registry's reference kernels bit for bit (NaN matching NaN) for every
// mode, with the value operands passed by value as plan-devices places them, the fill values in
// device and in host memory, and the argument errors (a value operand in device memory, a
// batch index outside the batch through the error word).
#include "compile_engine/cuda/nvrtc_image.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compile_engine/image_kernel.h"
#include "compile_engine/image_match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/input_dep.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

std::string RoiText(const std::string& mode, const std::string& ctm, int64_t out, int64_t ratio, double scale,
                    const std::string& index = "i64") {
  return absl::StrCat("def @f(%x: f32[n, c, h, w], %r: f32[k, 4], %b: ", index,
                      "[k]) attributes {primitive = true} {\n  %y = image.roi_align(%x, %r, %b) {mode = \"", mode,
                      "\", output_height = ", out, ", output_width = ", out + 1, ", sampling_ratio = ", ratio,
                      ", spatial_scale = ", scale, ", coordinate_transformation_mode = \"", ctm,
                      "\"}\n  return %y\n}\n");
}

std::string ResizeText(bool dyn, const std::string& layout, const std::string& method, const std::string& ctm,
                       const std::string& rounding, int64_t oh = 5, int64_t ow = 7) {
  const std::string attrs = absl::StrCat("layout = \"", layout, "\", method = \"", method,
                                         "\", coordinate_transformation_mode = \"", ctm, "\", rounding_method = \"",
                                         rounding, "\"");
  return dyn ? absl::StrCat("def @f(%x: f32[a, b, c, d], %s: i64[2]) attributes {primitive = true} {\n"
                            "  %y = dyn.image.resize2d(%x, %s) {",
                            attrs, "}\n  return %y\n}\n")
             : absl::StrCat("def @f(%x: f32[a, b, c, d]) attributes {primitive = true} {\n"
                            "  %y = image.resize2d(%x) {size = [",
                            oh, ", ", ow, "], ", attrs, "}\n  return %y\n}\n");
}

std::string PadText(bool dyn, int rank, const std::vector<int64_t>& pads, const std::string& value_type = "f32") {
  std::vector<std::string> dims;
  for (int a = 0; a < rank; ++a) dims.push_back(absl::StrCat("d", a));
  const std::string type = absl::StrCat("f32[", absl::StrJoin(dims, ", "), "]");
  return dyn ? absl::StrCat("def @f(%x: ", type, ", %p: i64[", 2 * rank, "], %v: ", value_type,
                            "[]) attributes {primitive = true} {\n  %y = dyn.nn.pad(%x, %p, %v)\n  return %y\n}\n")
             : absl::StrCat("def @f(%x: ", type, ") attributes {primitive = true} {\n  %y = nn.pad(%x) {pad_width = [",
                            absl::StrJoin(pads, ", "), "], pad_value = -1.5}\n  return %y\n}\n");
}

std::string FillText(const std::string& op, int64_t rank, const std::string& shape_type = "i64",
                     const std::string& value_type = "f32", const std::string& dtype = "f32") {
  const std::string attrs = absl::StrCat(" {dtype = ", dtype, "}");
  if (op == "dyn.full") {
    return absl::StrCat("def @f(%v: ", value_type, "[], %s: ", shape_type, "[", rank,
                        "]) attributes {primitive = true} {\n  %y = dyn.full(%v, %s)", attrs, "\n  return %y\n}\n");
  }
  return absl::StrCat("def @f(%s: ", shape_type, "[", rank, "]) attributes {primitive = true} {\n  %y = ", op,
                      "(%s)", attrs, "\n  return %y\n}\n");
}

// Every op and mode the provider takes.
std::vector<std::string> EveryVariant() {
  std::vector<std::string> texts;
  for (const char* mode : {"avg", "max"}) {
    for (const char* ctm : {"half_pixel", "output_half_pixel"}) texts.push_back(RoiText(mode, ctm, 3, 0, 0.5));
  }
  for (const char* index : {"i32", "i8", "u8"}) texts.push_back(RoiText("avg", "half_pixel", 2, 2, 1.0, index));
  for (bool dyn : {false, true}) {
    for (const char* layout : {"NCHW", "NHWC"}) {
      for (const char* method : {"linear", "nearest_neighbor"}) {
        texts.push_back(ResizeText(dyn, layout, method, "half_pixel", ""));
      }
    }
  }
  for (const char* ctm : {"align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"}) {
    for (const char* r : {"round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"}) {
      texts.push_back(ResizeText(false, "NCHW", "nearest_neighbor", ctm, r));
    }
  }
  texts.push_back(PadText(false, 4, {0, 0, 0, 0, 1, 1, -1, 2}));
  texts.push_back(PadText(false, 0, {}));
  texts.push_back(PadText(true, 3, {}));
  texts.push_back(PadText(true, 8, {}, "i32"));
  for (const char* op : {"dyn.zeros", "dyn.ones", "dyn.full"}) texts.push_back(FillText(op, 2));
  texts.push_back(FillText("dyn.full", 0, "i32", "f64"));
  texts.push_back(FillText("dyn.zeros", 1, "i64", "f32", "i64"));  // maskrcnn_tiny's
  return texts;
}

// Tests that every op / mode variant compiles through NVRTC into PTX that ptxas accepts, with
// the kernel named in its listing, and that groups the host does not take (cubic resize, edge
// pad, f64 data) are Unimplemented, as is a pad above rank 8.
TEST(NvrtcImage, EveryVariantAssembles) {
  std::set<std::string> assembled;
  for (const std::string& text : EveryVariant()) {
    SCOPED_TRACE(text);
    auto m = testing::Parse(text);
    ASSERT_NE(m, nullptr);
    const Function& f = *m->functions().front();
    // The host's group (its native kernels fill f32 only; other dtypes go to its reference).
    ASSERT_TRUE(IsImageOrFillGroup(f) || text.find("dtype = i64") != std::string::npos);
    absl::StatusOr<cuda::NvrtcImageProgram> program = cuda::NvrtcImageSource(f);
#ifndef HETPASS_HAS_CUDA
    EXPECT_EQ(program.status().code(), absl::StatusCode::kUnimplemented);
    continue;
#endif
    ASSERT_TRUE(program.ok()) << program.status();
    auto kernel = cuda::CompileNvrtcImage(f);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_THAT((*kernel)->Describe(), HasSubstr("nvrtc "));
    EXPECT_THAT((*kernel)->Listing(), HasSubstr(".entry "));
    if (!assembled.insert(program->ptx).second) continue;  // the same PTX: assembled already
    const absl::Status ok = testing::PtxasAccepts(program->ptx, "nvrtc.image");
    EXPECT_TRUE(ok.ok()) << ok;
  }
  // roi_align (4 index types), resize, pad, fill.
  EXPECT_EQ(assembled.size(), 7u);
  for (const std::string& text :
       {ResizeText(false, "NCHW", "cubic", "half_pixel", ""),
        std::string("def @f(%x: f32[n, 3]) attributes {primitive = true} {\n"
                    "  %y = nn.pad(%x) {pad_width = [1, 1, 0, 0], pad_mode = \"edge\"}\n  return %y\n}\n"),
        std::string("def @f(%x: f64[n]) attributes {primitive = true} {\n"
                    "  %y = nn.pad(%x) {pad_width = [1, 1]}\n  return %y\n}\n"),
        PadText(false, 9, std::vector<int64_t>(18, 1))}) {
    SCOPED_TRACE(text);
    auto m = testing::Parse(text);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(cuda::CompileNvrtcImage(*m->functions().front()).status().code(), absl::StatusCode::kUnimplemented);
  }
}

// The parameters plan-devices keeps on the host for a cuda kernel: the `value` inputs (host
// arguments: small 1-D integer tensors). With `fill_on_host`, the fill value too (a host
// tensor passed by value: the provider reads it on the host then).
std::vector<bool> HostValueParams(const Function& f, bool fill_on_host) {
  std::vector<bool> host(f.body().num_params(), false);
  const Node& n = *f.body().nodes()[0];
  for (int i = 0; i < n.num_operands(); ++i) {
    if (NeedsValue(n.op()->dep(i))) host[n.operand(i)->index()] = true;
  }
  const std::optional<image_match::ImageGroup> g = image_match::MatchImageGroup(f);
  if (fill_on_host && g && image_match::FillParam(*g) >= 0) host[image_match::FillParam(*g)] = true;
  return host;
}

// Equal bit for bit, NaN matching NaN.
::testing::AssertionResult SameValues(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "got " << got.type().ToString() << ", want " << want.type().ToString();
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.GetDouble(i), b = want.GetDouble(i);
    if (!(a == b || (std::isnan(a) && std::isnan(b)))) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", want " << b;
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs `text`'s kernel on the GPU and compares its result with the reference's.
void ExpectMatchesReference(const std::string& text, const std::vector<Tensor>& in, bool fill_on_host = false) {
  SCOPED_TRACE(text);
  auto m = testing::Parse(text);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  auto k = cuda::CompileNvrtcImage(f);
  ASSERT_TRUE(k.ok()) << k.status();
  absl::StatusOr<Tensor> want = testing::Interpret(f, in);
  ASSERT_TRUE(want.ok()) << want.status();
  Tensor got = Tensor::Zeros(want->dtype(), want->shape());
  const absl::Status run = testing::RunOnCuda(**k, in, got, HostValueParams(f, fill_on_host));
  ASSERT_TRUE(run.ok()) << run;
  EXPECT_TRUE(SameValues(got, *want));
}

Tensor Ints(DType dtype, const std::vector<int64_t>& v) {
  Tensor t = Tensor::Zeros(dtype, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.SetInt64(static_cast<int64_t>(i), v[i]);
  return t;
}

// Rois inside, partly outside and degenerate (x2 < x1) over an h x w image at `scale`.
Tensor Rois(int64_t count, int64_t h, int64_t w, double scale, uint64_t seed) {
  Tensor rois = testing::RandomF32({count, 4}, seed, 1.0);
  float* p = rois.mutable_data_as<float>();
  const double extent = 2.0 * static_cast<double>(std::max(h, w)) / scale;
  for (int64_t i = 0; i < count; ++i) {
    const float x1 = static_cast<float>((p[4 * i] + 1) * extent / 2 - 2);
    const float y1 = static_cast<float>((p[4 * i + 1] + 1) * extent / 2 - 2);
    p[4 * i] = x1;
    p[4 * i + 1] = y1;
    p[4 * i + 2] = x1 + static_cast<float>(p[4 * i + 2] * extent / 2 + extent / 4);
    p[4 * i + 3] = y1 + static_cast<float>(p[4 * i + 3] * extent / 2 + extent / 4);
  }
  return rois;
}

// Tests roi_align on the GPU: both modes, both coordinate transformations, adaptive and fixed
// sampling_ratio, several scales, index types, empty planes and no rois, and a NaN pixel.
TEST(NvrtcImage, RoiAlignMatchesTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  std::mt19937 rng(11);
  const std::vector<int64_t> dims = {0, 1, 2, 5, 9, 16};
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t n = 1 + rng() % 2, c = rng() % 4, h = dims[rng() % dims.size()], w = dims[rng() % dims.size()],
                  r = rng() % 5;
    const std::string mode = rng() % 2 ? "avg" : "max";
    const std::string ctm = rng() % 2 ? "half_pixel" : "output_half_pixel";
    const int64_t out = 1 + rng() % 4, ratio = rng() % 3;
    const double scale = std::vector<double>{1.0, 0.5, 0.25}[rng() % 3];
    std::vector<int64_t> batch;
    for (int64_t i = 0; i < r; ++i) batch.push_back(rng() % n);
    const std::string index = trial % 3 == 0 ? "i32" : "i64";
    Tensor x = testing::RandomF32({n, c, h, w}, trial + 1, 3.0);
    if (trial % 7 == 0 && x.num_elements() > 0) x.mutable_data_as<float>()[0] = std::nanf("");
    ExpectMatchesReference(RoiText(mode, ctm, out, ratio, scale, index),
                           {x, Rois(r, h, w, scale, trial + 100), Ints(*ParseDType(index), batch)});
  }
  // maskrcnn_tiny's box head.
  std::vector<int64_t> batch(100, 0);
  for (const char* mode : {"avg", "max"}) {
    ExpectMatchesReference(RoiText(mode, "half_pixel", 7, 2, 0.0625),
                           {testing::RandomF32({1, 32, 24, 16}, 4, 2.0), Rois(100, 24, 16, 0.0625, 9),
                            Ints(DType::kI64, batch)});
  }
}

// Tests resize2d and dyn.image.resize2d on the GPU: both methods, every coordinate
// transformation and rounding mode, both layouts, up- and down-sampling, sizes of 1, and an
// infinite pixel (nearest neighbour gives NaN next to it, as the reference).
TEST(NvrtcImage, ResizeMatchesTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  const std::vector<std::string> ctms = {"half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel",
                                         "tf_half_pixel_for_nn"};
  const std::vector<std::string> roundings = {"", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil"};
  int trial = 0;
  for (const std::string& ctm : ctms) {
    for (const std::string& rounding : roundings) {
      for (const char* method : {"linear", "nearest_neighbor"}) {
        ++trial;
        const bool dyn = trial % 2, nchw = trial % 3 != 0;
        const int64_t n = 1 + trial % 2, c = 1 + trial % 3, h = 1 + trial % 7, w = 1 + (trial * 5) % 7;
        const int64_t oh = 1 + (trial * 7) % 12, ow = 1 + (trial * 3) % 12;
        const std::vector<int64_t> shape = nchw ? std::vector<int64_t>{n, c, h, w} : std::vector<int64_t>{n, h, w, c};
        std::vector<Tensor> in = {testing::RandomF32(shape, trial, 2.0)};
        if (trial % 5 == 0) in[0].mutable_data_as<float>()[0] = INFINITY;
        if (dyn) in.push_back(Ints(DType::kI64, {oh, ow}));
        ExpectMatchesReference(ResizeText(dyn, nchw ? "NCHW" : "NHWC", method, ctm, rounding, oh, ow), in);
      }
    }
  }
}

// Tests constant nn.pad and dyn.nn.pad on the GPU: ranks 0..4, empty dims, positive and
// negative (cropping) pads; dyn.nn.pad's value in device memory (f32, i32) and in host memory.
TEST(NvrtcImage, PadMatchesTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  std::mt19937 rng(3);
  for (int trial = 0; trial < 80; ++trial) {
    const int rank = static_cast<int>(rng() % 5);
    const bool dyn = rng() % 2;
    std::vector<int64_t> shape, pads;
    for (int a = 0; a < rank; ++a) {
      shape.push_back(std::vector<int64_t>{0, 1, 2, 3, 6}[rng() % 5]);
      for (int k = 0; k < 2; ++k) pads.push_back(static_cast<int64_t>(rng() % 4) - 1);
      if (shape.back() + pads[2 * a] + pads[2 * a + 1] < 0) pads[2 * a] = pads[2 * a + 1] = 0;
    }
    std::vector<Tensor> in = {testing::RandomF32(shape, trial + 1)};
    if (!dyn) {
      ExpectMatchesReference(PadText(false, rank, pads), in);
      continue;
    }
    in.push_back(Ints(DType::kI64, pads));
    const bool int_value = trial % 3 == 0;
    in.push_back(int_value ? Tensor::Scalar(DType::kI32, -7) : Tensor::Scalar(DType::kF32, 0.1));
    ExpectMatchesReference(PadText(true, rank, pads, int_value ? "i32" : "f32"), in, /*fill_on_host=*/trial % 4 == 1);
  }
}

// Tests dyn.zeros, dyn.ones and dyn.full on the GPU, including empty shapes, rank 0, an i32
// shape, dyn.full's value as f64 (rounded to f32 once) and i8, in device and in host memory,
// and results of every other dtype (integers exactly, through double otherwise, saturated).
TEST(NvrtcImage, FillsMatchTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  for (const std::vector<int64_t>& s : std::vector<std::vector<int64_t>>{{}, {0}, {3}, {2, 0, 4}, {2, 3, 500}}) {
    const int64_t rank = static_cast<int64_t>(s.size());
    for (const char* op : {"dyn.zeros", "dyn.ones"}) ExpectMatchesReference(FillText(op, rank, "i32"), {Ints(DType::kI32, s)});
    for (bool on_host : {false, true}) {
      ExpectMatchesReference(FillText("dyn.full", rank, "i64", "f64"),
                             {Tensor::Scalar(DType::kF64, 0.1), Ints(DType::kI64, s)}, on_host);
      ExpectMatchesReference(FillText("dyn.full", rank, "i64", "i8"),
                             {Tensor::Scalar(DType::kI8, -3), Ints(DType::kI64, s)}, on_host);
    }
  }
  for (const char* dtype : {"f16", "bf16", "f64", "i8", "i32", "i64", "u8", "bool"}) {
    ExpectMatchesReference(FillText("dyn.ones", 2, "i64", "f32", dtype), {Ints(DType::kI64, {3, 5})});
    for (bool on_host : {false, true}) {
      for (double v : {-2.75, 0.1, 300.5, 1e30}) {
        ExpectMatchesReference(FillText("dyn.full", 2, "i64", "f64", dtype),
                               {Tensor::Scalar(DType::kF64, v), Ints(DType::kI64, {3, 5})}, on_host);
      }
      ExpectMatchesReference(FillText("dyn.full", 1, "i64", "i64", dtype),
                             {Tensor::Scalar(DType::kI64, -129), Ints(DType::kI64, {7})}, on_host);
    }
  }
}

// Tests, on a GPU, the argument errors: a value operand in device memory (named), a result of
// the wrong shape (named as on the host), and a batch index outside the batch (through the
// error word, at the synchronisation).
TEST(NvrtcImage, ArgumentErrorsOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  auto fill = testing::Parse(FillText("dyn.zeros", 2));
  ASSERT_NE(fill, nullptr);
  auto kf = cuda::CompileNvrtcImage(*fill->functions().front());
  ASSERT_TRUE(kf.ok()) << kf.status();
  Tensor out = Tensor::Zeros(DType::kF32, {2, 3});
  absl::Status s = testing::RunOnCuda(**kf, {Ints(DType::kI64, {2, 3})}, out, /*host=*/{false});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("shape (%s) is device memory"));
  Tensor wrong = Tensor::Zeros(DType::kF32, {3, 2});
  s = testing::RunOnCuda(**kf, {Ints(DType::kI64, {2, 3})}, wrong, /*host=*/{true});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("result must be f32[2, 3]"));

  auto roi = testing::Parse(RoiText("avg", "half_pixel", 2, 2, 1.0));
  ASSERT_NE(roi, nullptr);
  auto kr = cuda::CompileNvrtcImage(*roi->functions().front());
  ASSERT_TRUE(kr.ok()) << kr.status();
  Tensor pooled = Tensor::Zeros(DType::kF32, {2, 3, 2, 3});
  s = testing::RunOnCuda(**kr,
                         {testing::RandomF32({2, 3, 8, 8}, 1), Rois(2, 8, 8, 1.0, 2), Ints(DType::kI64, {1, 2})},
                         pooled);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("roi_align: a batch index is outside the batch"));
  // The device is usable afterwards (the error word was cleared).
  s = testing::RunOnCuda(**kr,
                         {testing::RandomF32({2, 3, 8, 8}, 1), Rois(2, 8, 8, 1.0, 2), Ints(DType::kI64, {1, 0})},
                         pooled);
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace hetpass
