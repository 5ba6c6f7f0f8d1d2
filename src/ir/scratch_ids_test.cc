#include "passes/ir/scratch_ids.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/ir/ir.h"

namespace hetpass {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Tests that ids are dense in numbering order, that an object no numbering gave an id (or one
// that a later numbering renumbered) answers -1 rather than another object's id.
TEST(ScratchIds, DenseIdsAndStaleNumbersAnswerMinusOne) {
  Block block;
  Value* a = block.AddParam(Type(), "a");
  Value* b = block.AddParam(Type(), "b");
  Value* c = block.AddParam(Type(), "c");
  ScratchIds<Value> ids;
  EXPECT_EQ(ids.Number(a), 0);
  EXPECT_EQ(ids.Number(b), 1);
  EXPECT_EQ(ids.Id(a), 0);
  EXPECT_EQ(ids.Id(b), 1);
  EXPECT_EQ(ids[1], b);
  EXPECT_EQ(ids.Id(c), -1);  // c's scratch is 0 (a's id), but it is not a
  EXPECT_FALSE(ids.Contains(c));
  ScratchIds<Value> other;
  other.Number(c);
  other.Number(a);  // a's scratch is now 1: b's id in `ids`
  EXPECT_EQ(ids.Id(a), -1);
  EXPECT_EQ(ids.Id(b), 1);
  ids.Clear();
  EXPECT_EQ(ids.Id(b), -1);
  EXPECT_EQ(ids.size(), 0);
}

// Tests that buckets give each id's items in the order they were added, none for an id
// without items or out of range, and that an item of id -1 (an object the numbering does not
// know) is dropped.
TEST(IdBuckets, ItemsPerIdInTheOrderAdded) {
  IdBuckets<int> buckets;
  buckets.Add(2, 20);
  buckets.Add(0, 1);
  buckets.Add(2, 21);
  buckets.Add(0, 2);
  buckets.Add(2, 22);
  buckets.Add(-1, 99);
  buckets.Build(4);
  EXPECT_THAT(buckets.Of(0), ElementsAre(1, 2));
  EXPECT_THAT(buckets.Of(1), IsEmpty());
  EXPECT_THAT(buckets.Of(2), ElementsAre(20, 21, 22));
  EXPECT_THAT(buckets.Of(3), IsEmpty());
  EXPECT_THAT(buckets.Of(4), IsEmpty());
  EXPECT_THAT(buckets.Of(-1), IsEmpty());
}

}  // namespace
}  // namespace hetpass
