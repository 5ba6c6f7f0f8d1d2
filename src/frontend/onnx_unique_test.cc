// Tests of the Unique converter on one-node models built in code: one unique op for the four
// outputs (axis optional, sorted), symbolic dims kept where they are not counted, and attribute
// errors that name the node.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/onnx_one_node_model.h"

namespace hetpass {
namespace {

using ::hetpass::testing::OneNodeModel;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

OneNodeModel Unique() {
  OneNodeModel m(11, "Unique", {"x"}, {"y", "indices", "inverse", "counts"});
  m.Input("x", {"n", "3"});
  return m;
}

// Tests that the flattened form counts y, indices and counts, and inverse_indices keeps n * 3.
TEST(OnnxUnique, FlattenedByDefault) {
  const std::string r = Unique().Import();
  EXPECT_THAT(r, HasSubstr("= unique(%x) : f32[?], i64[?], i64[n*3], i64[?]"));
}

TEST(OnnxUnique, AxisAndSorted) {
  OneNodeModel m = Unique();
  m.Int("axis", -1).Int("sorted", 0);
  const std::string r = m.Import();
  EXPECT_THAT(r, HasSubstr("unique(%x) {axis = [-1], sorted = false}"));
  EXPECT_THAT(r, HasSubstr(": f32[n, ?], i64[?], i64[3], i64[?]"));
}

TEST(OnnxUnique, Errors) {
  OneNodeModel axis = Unique();
  axis.Int("axis", 2);
  EXPECT_THAT(axis.Import(), AllOf(StartsWith("error INVALID_ARGUMENT"),
                                   HasSubstr("axis 2 is out of range for X of rank 2")));
  OneNodeModel sorted = Unique();
  sorted.Int("sorted", 2);
  EXPECT_THAT(sorted.Import(), HasSubstr("sorted must be 0 or 1, got 2"));
}

}  // namespace
}  // namespace hetpass
