// Tests of ONNX external tensor data (onnx_external_data.h): a model whose weights live in a
// file beside it imports as the same model with the weights inline, and every hostile location
// or range is an InvalidArgument naming the tensor and the location, never a read outside the
// model's folder, past a file's end or into a buffer of the wrong size.
#include "frontend/onnx_external_data.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
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
namespace fs = std::filesystem;

// y = (x + w) * c + b, weights inline (w and c 32 KiB each, b 1 KiB).
onnx::ModelProto Model() { return testing::WeightsModel(32, 256); }

// Moves t's raw_data to `file` at its end (after `pad` bytes of padding) and points t there.
void Externalise(onnx::TensorProto& t, const fs::path& folder, const std::string& location, int pad = 0) {
  const fs::path file = folder / location;
  const int64_t offset = fs::exists(file) ? static_cast<int64_t>(fs::file_size(file)) + pad : pad;
  {
    std::ofstream f(file, std::ios::binary | std::ios::app);
    f << std::string(pad, '\x55') << t.raw_data();
  }
  const int64_t length = static_cast<int64_t>(t.raw_data().size());
  t.clear_raw_data();
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const std::string& k, const std::string& v) {
    auto* e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  entry("location", location);
  entry("offset", std::to_string(offset));
  entry("length", std::to_string(length));
}

// A folder of this test's own, emptied first (tests of one binary may run in parallel).
class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            (std::string("hetpass_external_") + ::testing::UnitTest::GetInstance()->current_test_info()->name() +
             "_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    folder_ = root_ / "model";
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Save(const onnx::ModelProto& m) {
    const fs::path path = folder_ / "model.onnx";
    std::ofstream(path, std::ios::binary) << m.SerializeAsString();
    return path.string();
  }

  // The import error of a model whose `w` has external data with these entries (location
  // first), or "ok".
  std::string ImportWithEntries(const std::vector<std::pair<std::string, std::string>>& entries) {
    onnx::ModelProto m = Model();
    onnx::TensorProto& w = *m.mutable_graph()->mutable_initializer(0);
    w.clear_raw_data();
    w.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : entries) {
      auto* e = w.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    auto r = ImportOnnxFile(Save(m), OnnxImportOptions());
    return r.ok() ? "ok" : std::string(r.status().ToString());
  }

  // A file of `bytes` bytes in the model's folder.
  void Data(const std::string& name, size_t bytes) {
    std::ofstream(folder_ / name, std::ios::binary) << std::string(bytes, '\x01');
  }

  fs::path root_, folder_;
};

constexpr size_t kW = 32 * 256 * 4;  // w's bytes

// Tests that weights in one shared file at several offsets, and in a sub-folder, import as the
// same module as the inline model: the same constants, byte for byte.
TEST_F(ExternalData, ImportsAsTheInlineModel) {
  const onnx::ModelProto inline_model = Model();
  onnx::ModelProto m = Model();
  fs::create_directories(folder_ / "weights");
  Externalise(*m.mutable_graph()->mutable_initializer(0), folder_, "weights.bin");
  Externalise(*m.mutable_graph()->mutable_initializer(1), folder_, "weights.bin", /*pad=*/7);
  Externalise(*m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_t(), folder_, "weights/c.bin");
  auto external = ImportOnnxFile(Save(m), OnnxImportOptions());
  ASSERT_TRUE(external.ok()) << external.status();
  auto expected = ImportOnnx(inline_model.SerializeAsString(), OnnxImportOptions(), "inline");
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::string why;
  EXPECT_TRUE(StructurallyEqual(**external, **expected, &why)) << why;
}

// Tests that a location without offset and length is the whole file, and that the length must
// be the tensor's size.
TEST_F(ExternalData, OffsetAndLengthDefaultToTheWholeFile) {
  Data("w.bin", kW);
  EXPECT_EQ(ImportWithEntries({{"location", "w.bin"}}), "ok");
  Data("big.bin", kW + 4);
  EXPECT_THAT(ImportWithEntries({{"location", "big.bin"}}),
              HasSubstr("tensor 'w': external data 'big.bin': 32772 bytes at offset 0, but the tensor's dtype and "
                        "dims take 32768 bytes"));
  EXPECT_EQ(ImportWithEntries({{"location", "big.bin"}, {"offset", "4"}}), "ok");
}

// Tests that a location can name no file outside the model's folder: a parent reference, an
// absolute path, a symbolic link that points out, and the folder itself.
TEST_F(ExternalData, LocationsAreConfinedToTheModelsFolder) {
  std::ofstream(root_ / "outside.bin", std::ios::binary) << std::string(kW, '\x02');
  EXPECT_THAT(ImportWithEntries({{"location", "../outside.bin"}}),
              HasSubstr("external data '../outside.bin': resolves to"));
  EXPECT_THAT(ImportWithEntries({{"location", "../outside.bin"}}), HasSubstr("outside the model's folder"));
  EXPECT_THAT(ImportWithEntries({{"location", (root_ / "outside.bin").string()}}),
              HasSubstr("an absolute location: a location is relative to the model's folder"));
  fs::create_symlink(root_ / "outside.bin", folder_ / "link.bin");
  EXPECT_THAT(ImportWithEntries({{"location", "link.bin"}}), HasSubstr("outside the model's folder"));
  EXPECT_THAT(ImportWithEntries({{"location", "sub/../../outside.bin"}}), HasSubstr("outside the model's folder"));
  EXPECT_THAT(ImportWithEntries({{"location", "."}}), HasSubstr("outside the model's folder"));
  // A link that stays inside the folder is fine.
  Data("real.bin", kW);
  fs::create_symlink(folder_ / "real.bin", folder_ / "inside.bin");
  EXPECT_EQ(ImportWithEntries({{"location", "inside.bin"}}), "ok");
}

// Tests the file and range errors: missing, a folder, short, an offset past the end, a range
// that runs past it, malformed numbers, no location.
TEST_F(ExternalData, MissingShortAndMalformedAreErrors) {
  EXPECT_THAT(ImportWithEntries({{"location", "nope.bin"}}),
              HasSubstr("tensor 'w': external data 'nope.bin': cannot be opened: No such file"));
  fs::create_directories(folder_ / "dir");
  EXPECT_THAT(ImportWithEntries({{"location", "dir"}}), HasSubstr("'dir': is not a regular file"));
  Data("short.bin", kW - 1);
  EXPECT_THAT(ImportWithEntries({{"location", "short.bin"}, {"length", std::to_string(kW)}}),
              HasSubstr("the file is 32767 bytes, too short for 32768 bytes at offset 0"));
  Data("w.bin", kW);
  EXPECT_THAT(ImportWithEntries({{"location", "w.bin"}, {"offset", "40000"}}),
              HasSubstr("offset 40000 is past the end of the file (32768 bytes)"));
  EXPECT_THAT(ImportWithEntries({{"location", "w.bin"}, {"offset", "8"}, {"length", std::to_string(kW)}}),
              HasSubstr("too short for 32768 bytes at offset 8"));
  EXPECT_THAT(ImportWithEntries({{"location", "w.bin"}, {"offset", "-8"}}),
              HasSubstr("offset '-8' is not a non-negative integer"));
  EXPECT_THAT(ImportWithEntries({{"location", "w.bin"}, {"length", "lots"}}),
              HasSubstr("length 'lots' is not a non-negative integer"));
  EXPECT_THAT(ImportWithEntries({{"location", "w.bin"}, {"length", "99999999999999999999999"}}),
              HasSubstr("is not a non-negative integer"));
  EXPECT_THAT(ImportWithEntries({{"offset", "0"}}), HasSubstr("tensor 'w' has external data without a 'location'"));
  for (const std::string& r : {ImportWithEntries({{"location", "nope.bin"}}), ImportWithEntries({{"offset", "0"}})}) {
    EXPECT_THAT(r, HasSubstr("INVALID_ARGUMENT"));
  }
}

// Tests that a model with external data imported from bytes (no folder) says how to import it.
TEST_F(ExternalData, FromBytesItNeedsTheModelsFile) {
  onnx::ModelProto m = Model();
  Externalise(*m.mutable_graph()->mutable_initializer(0), folder_, "w.bin");
  auto r = ImportOnnx(m.SerializeAsString(), OnnxImportOptions(), "bytes");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("must be imported from its file"));
}

}  // namespace
}  // namespace hetpass
