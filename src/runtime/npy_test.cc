#include "passes/runtime/npy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hetpass::runtime {
namespace {

using ::testing::HasSubstr;

TEST(Npy, RoundTripEveryDtypeAndRank) {
  for (DType dt : {DType::kF32, DType::kF64, DType::kI64, DType::kI32, DType::kI8, DType::kU8, DType::kBool}) {
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{}, {5}, {2, 3}, {2, 0, 4}}) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<double> v;
      for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i % 2));
      const Tensor t = Tensor::FromDoubles(dt, shape, v);
      const std::string bytes = SerializeNpy(t);
      EXPECT_EQ(bytes.size() % 64, t.nbytes() % 64) << "header is padded to 64 bytes";
      auto back = ParseNpy(bytes);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, t) << DTypeName(dt) << " rank " << shape.size();
    }
  }
}

// A header as numpy itself writes it (format 1.0, Python dict, padded).
TEST(Npy, ReadsNumpyWrittenHeader) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  const float data[4] = {1, 2, 3, 4};
  bytes.append(reinterpret_cast<const char*>(data), sizeof(data));
  auto t = ParseNpy(bytes);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t->GetDouble(3), 4.0);
}

TEST(Npy, BadFilesAreErrors) {
  const std::string good = SerializeNpy(Tensor::FromDoubles(DType::kF32, {3}, {1, 2, 3}));
  for (size_t len = 0; len < good.size(); ++len) {
    EXPECT_FALSE(ParseNpy(good.substr(0, len)).ok()) << len;
  }
  std::string big_endian = good;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  EXPECT_THAT(ParseNpy(big_endian, "x.npy").status().message(), HasSubstr("x.npy: npy dtype '>f4'"));
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THAT(ParseNpy(fortran).status().message(), HasSubstr("Fortran"));
  EXPECT_THAT(ParseNpy("hello").status().message(), HasSubstr("bad magic"));
  EXPECT_FALSE(ReadNpy("/nonexistent/file.npy").ok());
}

}  // namespace
}  // namespace hetpass::runtime
