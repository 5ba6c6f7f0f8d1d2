// Tests of the random family's converters (RandomUniform(Like), RandomNormal(Like), Bernoulli)
// and of Dropout's training mode built on random.uniform_like. The node tests pin the
// deterministic cases (a zero ratio); the draws themselves are tested in random_test.cc.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/onnx_one_node_model.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(OnnxRandom, ShapesDtypesAndSeeds) {
  OneNodeModel uniform(15, "RandomUniform", {});
  uniform.Ints("shape", {2, 3}).Float("seed", 1.0f).Float("low", -1.0f);
  const std::string u = uniform.Import();
  EXPECT_THAT(u, HasSubstr("random.uniform_like("));
  EXPECT_THAT(u, HasSubstr("seed = 1065353216"));  // the bits of 1.0f
  EXPECT_THAT(u, HasSubstr("-> f32[2, 3]"));
  OneNodeModel like(15, "RandomNormalLike", {"x"});
  like.Input("x", {"n", "4"}, onnx::TensorProto::DOUBLE);
  EXPECT_THAT(like.Import(), HasSubstr("random.normal_like(%x) {dtype = f64"));
  OneNodeModel negative(15, "RandomNormal", {});
  negative.Ints("shape", {2, -1});
  EXPECT_THAT(negative.Import(), HasSubstr("shape has a negative dim -1"));
  OneNodeModel int_dtype(15, "RandomUniformLike", {"x"});
  int_dtype.Input("x", {"2"}).Int("dtype", onnx::TensorProto::INT32);
  EXPECT_THAT(int_dtype.Import(), HasSubstr("dtype must be floating point, got i32"));
  OneNodeModel bernoulli(15, "Bernoulli", {"p"});
  bernoulli.Input("p", {"n"}).Int("dtype", onnx::TensorProto::INT64);
  const std::string b = bernoulli.Import();
  EXPECT_THAT(b, HasSubstr("less("));
  EXPECT_THAT(b, HasSubstr("-> i64[n]"));
}

// Dropout: inference is the identity with an all-true mask; a computed training_mode draws and
// selects per call; a constant false training_mode draws nothing.
TEST(OnnxRandom, DropoutTrainingMode) {
  OneNodeModel train(13, "Dropout", {"x", "r", "t"}, {"y", "z"});
  train.Input("x", {"n", "4"}).Input("r", {}).Input("t", {}, onnx::TensorProto::BOOL);
  const std::string ir = train.Import();
  EXPECT_THAT(ir, HasSubstr("random.uniform_like(%x)"));
  EXPECT_THAT(ir, HasSubstr("-> f32[n, 4], bool[n, 4]"));
  OneNodeModel infer(13, "Dropout", {"x"}, {"y", "z"});
  infer.Input("x", {"n", "4"});
  const std::string i = infer.Import();
  EXPECT_THAT(i, Not(HasSubstr("random")));
  EXPECT_THAT(i, HasSubstr("dyn.ones("));
}

}  // namespace
}  // namespace hetpass
