// Tests of the cuda device's NVRTC kernels for count_nonzero / argwhere, non_max_suppression
// (+ its counter) and topk (nvrtc_algorithm.h): the groups taken, PTX that ptxas accepts for
// sm_80 and sm_90 for every element type (no GPU needed), and on a GPU the results against the
// registry's reference kernels, including ties, NaN, f16 zeros, several argwhere chunks, both
// NMS box encodings, and the errors that reach the device's error word.
#include "compile_engine/cuda/nvrtc_algorithm.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/cuda_test_util.h"
#include "support/ir_test_util.h"
#include "support/kernel_test_util.h"
#include "support/runtime_test_util.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;

std::string CountText(const std::string& type) {
  return absl::StrReplaceAll(R"(
def @f(%x: T) -> i64[] attributes {primitive = true} {
  %0 = count_nonzero(%x) : i64[]
  return %0
}
)",
                             {{"T", type}});
}

std::string ArgwhereText(const std::string& type, int rank) {
  return absl::StrCat("def @f(%x: ", type, ") -> i64[?, ", rank,
                      "] attributes {primitive = true} {\n  %0 = argwhere(%x) : i64[?, ", rank,
                      "]\n  return %0\n}\n");
}

std::string NmsText(bool count, int center, bool threshold) {
  const std::string attrs =
      absl::StrCat("{center_point_box = ", center, ", has_score_threshold = ", threshold ? "true" : "false", "}");
  const std::string out = count ? "i64[]" : "i64[?, 3]";
  return absl::StrCat("def @f(%b: f32[n, m, 4], %s: f32[n, c, m], %k: i64[1], %i: f32[], %t: f32[1]) -> ", out,
                      " attributes {primitive = true} {\n  %0 = ", count ? "non_max_suppression_count" : "non_max_suppression",
                      "(%b, %s, %k, %i, %t) ", attrs, " : ", out, "\n  return %0\n}\n");
}

constexpr char kTopk[] = R"(
def @f(%x: f32[3, n, 4]) attributes {primitive = true} {
  %v, %i = topk(%x) {k = 5, axis = 1} : f32[3, ?, 4], i64[3, ?, 4]
  return %v, %i
}
)";

constexpr char kDynTopkAscend[] = R"(
def @f(%x: i32[n, 30], %k: i64[]) attributes {primitive = true} {
  %v, %i = dyn.topk(%x, %k) {is_ascend = true, dtype = i32} : i32[n, ?], i32[n, ?]
  return %v, %i
}
)";

constexpr char kDynTopkLong[] = R"(
def @f(%x: f32[n, m], %k: i64[]) attributes {primitive = true} {
  %v, %i = dyn.topk(%x, %k) {dtype = i64} : f32[n, ?], i64[n, ?]
  return %v, %i
}
)";

// Tests that every op and element type compiles through NVRTC into PTX ptxas accepts, and
// that other groups are Unimplemented.
TEST(NvrtcAlgorithm, EveryKernelAssembles) {
  std::vector<std::string> texts = {ArgwhereText("bool[n, 3]", 2), ArgwhereText("f32[n]", 1),
                                    NmsText(false, 0, true),          NmsText(true, 1, false),
                                    kTopk,                            kDynTopkAscend,
                                    kDynTopkLong};
  for (const char* t : {"f32[n, 3]", "f64[n]", "i32[n]", "i64[n]", "i8[n]", "u8[n]", "bool[n]", "f16[n]", "bf16[n]"}) {
    texts.push_back(CountText(t));
  }
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    auto m = testing::Parse(text);
    ASSERT_NE(m, nullptr);
    absl::StatusOr<std::string> ptx = cuda::NvrtcAlgorithmPtx(*m->functions().front());
#ifndef HETPASS_HAS_CUDA
    EXPECT_EQ(ptx.status().code(), absl::StatusCode::kUnimplemented);
    continue;
#endif
    ASSERT_TRUE(ptx.ok()) << ptx.status();
    const absl::Status ok = testing::PtxasAccepts(*ptx, "nvrtc.algorithm");
    EXPECT_TRUE(ok.ok()) << ok;
  }
  auto other = testing::Parse(R"(
def @f(%x: f32[n]) -> f32[n] attributes {primitive = true} {
  %0 = exp(%x) : f32[n]
  return %0
}
)");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(cuda::CompileNvrtcAlgorithm(*other->functions().front()).status().code(),
            absl::StatusCode::kUnimplemented);
}

// Runs `text`'s kernel on the GPU and compares every result with the reference.
void ExpectMatchesReference(const std::string& text, const std::vector<Tensor>& in) {
  SCOPED_TRACE(text);
  auto m = testing::Parse(text);
  ASSERT_NE(m, nullptr);
  const Function& f = *m->functions().front();
  auto k = cuda::CompileNvrtcAlgorithm(f);
  ASSERT_TRUE(k.ok()) << k.status();
  absl::StatusOr<std::vector<Tensor>> want = testing::InterpretAll(f, in);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<Tensor> got;
  for (const Tensor& w : *want) got.push_back(Tensor::Zeros(w.dtype(), w.shape()));
  std::vector<Tensor*> outs;
  for (Tensor& g : got) outs.push_back(&g);
  const absl::Status run = testing::RunOnCuda(**k, in, outs);
  ASSERT_TRUE(run.ok()) << run;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(testing::TensorsNear(got[i], (*want)[i], 0.0)) << "result " << i;
}

// A tensor with about a third of its values zero (including -0 for floats).
Tensor Sparse(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = testing::RandomTensor(DType::kF32, shape, seed, -1, 1);
  Tensor out = Tensor::Zeros(dtype, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double v = t.GetDouble(i);
    out.SetDouble(i, std::fabs(v) < 0.33 ? (v < 0 ? -0.0 : 0.0) : v * 10);
  }
  return out;
}

TEST(NvrtcAlgorithm, CountAndArgwhereMatchTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  for (DType t : {DType::kF32, DType::kF16, DType::kI64, DType::kBool}) {
    const std::string name(DTypeName(t));
    ExpectMatchesReference(CountText(name + "[n, 7]"), {Sparse(t, {300, 7}, 1)});
    ExpectMatchesReference(ArgwhereText(name + "[n, 7]", 2), {Sparse(t, {300, 7}, 2)});  // 3 chunks of 1024
  }
  ExpectMatchesReference(ArgwhereText("f32[2, n, 3]", 3), {Sparse(DType::kF32, {2, 5, 3}, 3)});
  ExpectMatchesReference(CountText("f32[n]"), {Tensor::Zeros(DType::kF32, {0})});
  ExpectMatchesReference(ArgwhereText("f32[n]", 1), {Tensor::Zeros(DType::kF32, {5})});  // no rows
}

TEST(NvrtcAlgorithm, NonMaxSuppressionMatchesTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  auto scalar_i64 = [](int64_t v) { return Tensor::FromInt64s(DType::kI64, {1}, {v}); };
  auto scalar_f32 = [](std::vector<int64_t> shape, float v) {
    Tensor t = Tensor::Zeros(DType::kF32, shape);
    *t.mutable_data_as<float>() = v;
    return t;
  };
  for (int center : {0, 1}) {
    for (bool threshold : {false, true}) {
      for (int64_t max_out : {int64_t{0}, int64_t{3}, std::numeric_limits<int64_t>::max()}) {
        // Boxes clustered so that many overlap; scores with ties.
        Tensor boxes = testing::RandomTensor(DType::kF32, {2, 40, 4}, 7, 0, 4);
        Tensor scores = testing::RandomTensor(DType::kF32, {2, 3, 40}, 8, 0, 1);
        for (int64_t i = 0; i < scores.num_elements(); i += 5) scores.mutable_data_as<float>()[i] = 0.5f;
        scores.mutable_data_as<float>()[3] = std::numeric_limits<float>::quiet_NaN();
        std::vector<Tensor> in = {boxes, scores, scalar_i64(max_out), scalar_f32({}, 0.3f), scalar_f32({1}, 0.2f)};
        ExpectMatchesReference(NmsText(true, center, threshold), in);
        ExpectMatchesReference(NmsText(false, center, threshold), in);
      }
    }
  }
}

// Tests, on a GPU, that an iou_threshold outside [0, 1] and rows that disagree with the count
// are errors at the next synchronisation, named.
TEST(NvrtcAlgorithm, ErrorsReachTheErrorWordOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  auto m = testing::Parse(NmsText(true, 0, true));
  ASSERT_NE(m, nullptr);
  auto k = cuda::CompileNvrtcAlgorithm(*m->functions().front());
  ASSERT_TRUE(k.ok());
  Tensor iou = Tensor::Zeros(DType::kF32, {});
  *iou.mutable_data_as<float>() = 1.5f;
  Tensor out = Tensor::Zeros(DType::kI64, {});
  absl::Status s = testing::RunOnCuda(
      **k,
      {testing::RandomTensor(DType::kF32, {1, 4, 4}, 1), testing::RandomTensor(DType::kF32, {1, 1, 4}, 2),
       Tensor::FromInt64s(DType::kI64, {1}, {2}), iou, Tensor::Zeros(DType::kF32, {1})},
      out);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("iou_threshold outside [0, 1]"));

  auto a = testing::Parse(ArgwhereText("f32[n]", 1));
  ASSERT_NE(a, nullptr);
  auto ka = cuda::CompileNvrtcAlgorithm(*a->functions().front());
  ASSERT_TRUE(ka.ok());
  Tensor rows = Tensor::Zeros(DType::kI64, {2, 1});  // the data has 3 non-zeros
  s = testing::RunOnCuda(**ka, {Tensor::FromDoubles(DType::kF32, {4}, {1, 0, 2, 3})}, rows);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("differ from the shape counter"));
}

TEST(NvrtcAlgorithm, TopkMatchesTheReferenceOnGpu) {
  HETPASS_SKIP_WITHOUT_GPU();
  Tensor x = testing::RandomTensor(DType::kF32, {3, 9, 4}, 4);
  for (int64_t i = 0; i < x.num_elements(); i += 7) x.mutable_data_as<float>()[i] = 0.25f;  // ties
  ExpectMatchesReference(kTopk, {x});
  Tensor xi = testing::RandomTensor(DType::kI32, {5, 30}, 5, -10, 10);
  for (int64_t k : {0, 4, 30, 45}) ExpectMatchesReference(kDynTopkAscend, {xi, Tensor::FromInt64s(DType::kI64, {}, {k})});
  // Lines longer than a block (split over several, each walking the line in shared-memory
  // tiles): an RPN-sized line, ties across tile boundaries, and k past the first tile.
  Tensor big = testing::RandomTensor(DType::kF32, {2, 3000}, 6, -40, 40);
  for (int64_t i = 0; i < big.num_elements(); ++i) big.mutable_data_as<float>()[i] = std::round(big.data_as<float>()[i]);
  for (int64_t k : {1, 300, 1000, 3000}) ExpectMatchesReference(kDynTopkLong, {big, Tensor::FromInt64s(DType::kI64, {}, {k})});
}

}  // namespace
}  // namespace hetpass
