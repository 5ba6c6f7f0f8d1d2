// The mapped import (onnx_mapped_model.h): a model file imports to the same module as its bytes
// parsed whole, with its large weights copied out of the mapping once; files that are not
// well-formed wire format fall back and fail as they always did.
#include "frontend/onnx_mapped_model.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/frontend/onnx_importer.h"
#include "passes/ir/structural.h"
#include "support/onnx_weights_model.h"

namespace hetpass {
namespace {

using ::testing::HasSubstr;
using onnx_frontend::MappedModel;

// y = (x + w) * c + b: w and the Constant's c are 128 KiB each (markers), b 2 KiB (stays).
onnx::ModelProto Model() { return testing::WeightsModel(64, 512); }

// A file of this test's own (tests of one binary may run in parallel processes).
std::string WriteTemp(const std::string& bytes) {
  const std::string path =
      (std::filesystem::temp_directory_path() /
       (std::string("hetpass_mapped_") + ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
        std::to_string(::getpid()) + ".onnx"))
          .string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(MappedModel, SkeletonMarksLargeRawDataOnly) {
  const std::string bytes = Model().SerializeAsString();
  const std::string path = WriteTemp(bytes);
  auto mapped = MappedModel::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  auto skeleton = (*mapped)->Skeleton();
  ASSERT_TRUE(skeleton.ok()) << skeleton.status();
  // w and the Constant's c (128 KiB each) are markers; b (2 KiB) stays.
  EXPECT_EQ((*mapped)->payloads(), 2);
  EXPECT_LT(skeleton->size(), size_t{4096});
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(*skeleton));
  EXPECT_EQ(parsed.graph().initializer(0).raw_data().size(), MappedModel::kMarkerSize);
  EXPECT_EQ(parsed.graph().initializer(1).raw_data().size(), 512 * sizeof(float));
  EXPECT_EQ(parsed.graph().node(0).attribute(0).t().raw_data().size(), MappedModel::kMarkerSize);
  // A marker resolves to the payload's bytes in the file, except for a tensor of 16 bytes.
  const std::string& marker = parsed.graph().initializer(0).raw_data();
  auto payload = (*mapped)->Resolve(marker, 64 * 512 * 4);
  ASSERT_TRUE(payload.has_value());
  EXPECT_EQ(*payload, Model().graph().initializer(0).raw_data());
  EXPECT_FALSE((*mapped)->Resolve(marker, 16).has_value());
  EXPECT_FALSE((*mapped)->Resolve(std::string(16, 'x'), 64 * 512 * 4).has_value());
  std::remove(path.c_str());
}

TEST(MappedModel, FileImportsAsTheBytesDo) {
  const std::string bytes = Model().SerializeAsString();
  const std::string path = WriteTemp(bytes);
  auto from_file = ImportOnnxFile(path, OnnxImportOptions());
  auto from_bytes = ImportOnnx(bytes, OnnxImportOptions(), path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  std::string why;
  EXPECT_TRUE(StructurallyEqual(**from_file, **from_bytes, &why)) << why;  // constant data included
  std::remove(path.c_str());
}

TEST(MappedModel, MalformedFilesFailAsBefore) {
  std::string bytes = Model().SerializeAsString();
  // Cut inside w's raw_data: a length past the end is not wire format, the whole-file parse
  // reports it.
  bytes.resize(bytes.size() / 2);
  const std::string path = WriteTemp(bytes);
  auto m = ImportOnnxFile(path, OnnxImportOptions());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("not a valid ONNX model"));
  std::remove(path.c_str());
}

TEST(MappedModel, WrongSizedPayloadIsNamed) {
  onnx::ModelProto model = Model();
  // w declares [64, 511] but holds 64 x 512 floats.
  model.mutable_graph()->mutable_initializer(0)->set_dims(1, 511);
  const std::string path = WriteTemp(model.SerializeAsString());
  auto m = ImportOnnxFile(path, OnnxImportOptions());
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("tensor 'w'"));
  EXPECT_THAT(m.status().message(), HasSubstr("131072"));  // the payload's real size
  std::remove(path.c_str());
}

// A file cannot forge a marker. Markers began with a fixed magic: a 16-byte raw_data spelling it
// and an index was read, in a file, as that payload's bytes, while the same bytes imported
// whole were an error. Markers now begin with 8 random bytes drawn per skeleton.
TEST(MappedModel, AFileCannotForgeAMarker) {
  onnx::ModelProto model = Model();
  onnx::TensorProto& forged = *model.mutable_graph()->add_initializer();
  forged.set_name("forged");
  forged.set_data_type(onnx::TensorProto::FLOAT);
  forged.add_dims(64);
  forged.add_dims(512);  // w's size: the old marker resolved to w's 128 KiB
  forged.set_raw_data(std::string("\xffhpmark\x01\0\0\0\0\0\0\0", 16));
  const std::string bytes = model.SerializeAsString();
  const std::string path = WriteTemp(bytes);
  auto from_file = ImportOnnxFile(path, OnnxImportOptions());
  auto from_bytes = ImportOnnx(bytes, OnnxImportOptions(), path);
  ASSERT_FALSE(from_bytes.ok());
  ASSERT_FALSE(from_file.ok());
  EXPECT_EQ(from_file.status(), from_bytes.status());
  EXPECT_THAT(from_file.status().message(), HasSubstr("tensor 'forged'"));
  // Two skeletons of one file draw different keys (so their markers differ).
  auto mapped = MappedModel::Open(path);
  ASSERT_TRUE(mapped.ok());
  auto first = (*mapped)->Skeleton();
  auto second = (*mapped)->Skeleton();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(*first, *second);
  std::remove(path.c_str());
}

// Every real model of ../shared/models and the zoo imports from its file (mapped, weights
// through markers) to the module its bytes import to, constant data included.
TEST(MappedModel, RealModelsImportAsTheirBytesDo) {
  std::vector<std::filesystem::path> models;
  for (const std::filesystem::path dir :
       {std::filesystem::path(HETPASS_SHARED_DIR) / "models", std::filesystem::path(HETPASS_TEST_DATA_DIR) / "zoo" / "models"}) {
    ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir << " is missing";
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (std::filesystem::exists(entry.path() / "model.onnx")) models.push_back(entry.path() / "model.onnx");
    }
  }
  ASSERT_GE(models.size(), size_t{20});
  int with_markers = 0;
  for (const auto& path : models) {
    SCOPED_TRACE(path.string());
    auto mapped = MappedModel::Open(path.string());
    ASSERT_TRUE(mapped.ok()) << mapped.status();
    ASSERT_TRUE((*mapped)->Skeleton().ok());
    with_markers += (*mapped)->payloads() > 0;
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    OnnxImportOptions options;
    options.infer_types = false;
    auto from_file = ImportOnnxFile(path.string(), options);
    auto from_bytes = ImportOnnx(bytes, options, path.string());
    ASSERT_EQ(from_file.ok(), from_bytes.ok()) << from_file.status() << " / " << from_bytes.status();
    if (!from_file.ok()) continue;
    std::string why;
    EXPECT_TRUE(StructurallyEqual(**from_file, **from_bytes, &why)) << why;
  }
  EXPECT_GT(with_markers, 5);  // the models with real weights go through markers
}

}  // namespace
}  // namespace hetpass
