// Safetensors reading and writing: round trips through memory and files, the header layout, and
// rejection of corrupt or truncated files with clear errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "io/safetensors.h"
#include "util/fs.h"

namespace stitch::io {
namespace {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& values) {
  return std::as_bytes(std::span<const T>(values));
}

std::string temp_path(const std::string& name) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "safetensors_test";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// Builds a file from a header text: 8-byte little-endian length, header, data.
std::string raw_file(std::string_view header, std::string_view data) {
  std::string file(8, '\0');
  uint64_t length = header.size();
  std::memcpy(file.data(), &length, 8);  // little-endian hosts only, like the format
  file += header;
  file += data;
  return file;
}

std::string header_error(const std::string& file) {
  auto header = parse_safetensors_header(file, file.size());
  EXPECT_FALSE(header.ok()) << "accepted: " << file.substr(8);
  return header.ok() ? "" : header.error().message;
}

struct Sample {
  std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -0.0f};
  std::vector<int64_t> i64 = {1, -2, INT64_MAX};
  std::vector<uint8_t> u8 = {0, 255, 7};
  std::vector<TensorView> views() const {
    return {{"weight", ir::DType::float32, {2, 3}, bytes_of(f32)},
            {"index", ir::DType::int64, {3}, bytes_of(i64)},
            {"mask", ir::DType::uint8, {3}, bytes_of(u8)},
            {"empty", ir::DType::float16, {0, 4}, {}}};
  }
};

TEST(Safetensors, DtypeNames) {
  for (int i = 0; i < ir::kDTypeCount; ++i) {
    const auto dtype = static_cast<ir::DType>(i);
    EXPECT_EQ(dtype_from_safetensors_name(safetensors_dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(safetensors_dtype_name(ir::DType::bfloat16), "BF16");
  EXPECT_EQ(safetensors_dtype_name(ir::DType::boolean), "BOOL");
  EXPECT_FALSE(dtype_from_safetensors_name("F8_E4M3").has_value());
}

TEST(Safetensors, HeaderLayoutMatchesTheReference) {
  Sample sample;
  auto file = serialize_safetensors(sample.views(), {{"format", "pt"}});
  ASSERT_TRUE(file.ok()) << file.error().message;
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, file->data(), 8);
  EXPECT_EQ(header_bytes % 8, 0u);  // padded so the data section is 8-byte aligned
  const std::string header = file->substr(8, header_bytes);
  EXPECT_TRUE(header.starts_with(
      R"({"__metadata__":{"format":"pt"},"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"))
      << header;
  // Padding is spaces after the closing brace, fewer than 8 of them.
  const size_t json_end = header.rfind('}') + 1;
  EXPECT_LT(header.size() - json_end, 8u);
  EXPECT_EQ(header.find_first_not_of(' ', json_end), std::string::npos);
  EXPECT_EQ(file->size(), 8 + header_bytes + 24 + 24 + 3);
}

TEST(Safetensors, MemoryRoundTrip) {
  Sample sample;
  auto file = serialize_safetensors(sample.views(), {{"format", "pt"}, {"note", "x"}});
  ASSERT_TRUE(file.ok());
  auto header = parse_safetensors_header(*file, file->size());
  ASSERT_TRUE(header.ok()) << header.error().message;
  ASSERT_EQ(header->tensors.size(), 4u);
  EXPECT_EQ(header->tensors[0].name, "weight");  // order as written
  EXPECT_EQ(header->tensors[3].name, "empty");
  EXPECT_EQ(header->metadata, (Metadata{{"format", "pt"}, {"note", "x"}}));
  const TensorInfo* index = header->find("index");
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->dtype, ir::DType::int64);
  EXPECT_EQ(index->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(index->numel(), 3);
  EXPECT_EQ(index->byte_size(), 24u);
  EXPECT_EQ(std::memcmp(file->data() + header->data_offset + index->begin, sample.i64.data(), 24),
            0);
  EXPECT_EQ(header->find("nope"), nullptr);
}

TEST(Safetensors, FileRoundTripMappedAndRead) {
  Sample sample;
  const std::string path = temp_path("round_trip.safetensors");
  ASSERT_TRUE(write_safetensors(path, sample.views()).ok());

  auto file = SafetensorsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  ASSERT_EQ(file->tensors().size(), 4u);
  for (const TensorView& view : sample.views()) {
    auto bytes = file->tensor_bytes(view.name);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    ASSERT_EQ(bytes->size(), view.data.size()) << view.name;
    EXPECT_TRUE(std::equal(bytes->begin(), bytes->end(), view.data.begin())) << view.name;
  }
  EXPECT_FALSE(file->tensor_bytes("missing").ok());

  auto header = read_safetensors_header(path);
  ASSERT_TRUE(header.ok()) << header.error().message;
  EXPECT_EQ(header->tensors, file->header().tensors);
  auto weight = read_tensor_bytes(path, *header, *header->find("weight"));
  ASSERT_TRUE(weight.ok()) << weight.error().message;
  EXPECT_EQ(std::memcmp(weight->data(), sample.f32.data(), 24), 0);

  // Moving keeps the mapping valid.
  SafetensorsFile moved = std::move(*file);
  auto bytes = moved.tensor_bytes("mask");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(static_cast<uint8_t>((*bytes)[1]), 255);

  // No temporary files are left behind.
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
}

TEST(Safetensors, EmptyFileOfTensors) {
  auto file = serialize_safetensors({});
  ASSERT_TRUE(file.ok());
  auto header = parse_safetensors_header(*file, file->size());
  ASSERT_TRUE(header.ok()) << header.error().message;
  EXPECT_TRUE(header->tensors.empty());
}

TEST(Safetensors, WriteRejectsBadTensors) {
  std::vector<float> data(6);
  std::vector<TensorView> wrong_size = {{"a", ir::DType::float32, {2, 2}, bytes_of(data)}};
  EXPECT_CONTAINS(serialize_safetensors(wrong_size).error().message,
                  "24 bytes of data, but shape [2, 2] F32 needs 16");
  std::vector<TensorView> duplicate = {{"a", ir::DType::float32, {6}, bytes_of(data)},
                                       {"a", ir::DType::float32, {6}, bytes_of(data)}};
  EXPECT_CONTAINS(serialize_safetensors(duplicate).error().message, "duplicate tensor name 'a'");
  std::vector<TensorView> reserved = {{"__metadata__", ir::DType::float32, {6}, bytes_of(data)}};
  EXPECT_FALSE(serialize_safetensors(reserved).ok());
  std::vector<TensorView> negative = {{"a", ir::DType::float32, {-1}, {}}};
  EXPECT_CONTAINS(serialize_safetensors(negative).error().message, "negative dim");
  std::vector<TensorView> bad_utf8 = {{"\xff\xfe", ir::DType::float32, {6}, bytes_of(data)}};
  EXPECT_CONTAINS(serialize_safetensors(bad_utf8).error().message, "UTF-8");
  EXPECT_FALSE(write_safetensors(temp_path("bad.safetensors"), wrong_size).ok());
  EXPECT_FALSE(std::filesystem::exists(temp_path("bad.safetensors")));
}

TEST(Safetensors, RejectsCorruptHeaders) {
  const std::string data(16, '\0');
  EXPECT_CONTAINS(header_error("abc"), "too small");
  EXPECT_CONTAINS(header_error(std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}"),
                  "exceeds the 2 bytes after the length field");
  EXPECT_CONTAINS(header_error(raw_file("[1]", "")), "does not start with '{'");
  EXPECT_CONTAINS(header_error(raw_file(R"({"a": )", "")), "invalid JSON");
  EXPECT_CONTAINS(header_error(raw_file(R"({"a": 1})", "")), "tensor 'a': expected an object");
  EXPECT_CONTAINS(header_error(raw_file(
                      R"({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}})", data)),
                  "unsupported dtype 'C64'");
  EXPECT_CONTAINS(header_error(raw_file(
                      R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", data)),
                  "shape[0]: expected a non-negative integer");
  EXPECT_CONTAINS(header_error(raw_file(
                      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", data)),
                  "data_offsets span 4 bytes, but shape [2] F32 needs 8");
  EXPECT_CONTAINS(header_error(raw_file(
                      R"({"a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})", data)),
                  "beyond the data section (16 bytes)");
  EXPECT_CONTAINS(header_error(raw_file(
                      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", data)),
                  "end before begin");
  EXPECT_CONTAINS(
      header_error(raw_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                            "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                            data)),
      "overlap");
  EXPECT_CONTAINS(
      header_error(raw_file(
          R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 4], "data_offsets": [0, 8]}})",
          data)),
      "overflows 64 bits");
  EXPECT_CONTAINS(header_error(raw_file(R"({"a": {"dtype": "F32", "shape": [1]}})", data)),
                  "missing 'data_offsets'");
  EXPECT_CONTAINS(header_error(raw_file(R"({"__metadata__": {"k": 1}})", data)),
                  "__metadata__['k']: expected a string");
  EXPECT_CONTAINS(header_error(raw_file(R"({"a": {}, "a": {}})", data)), "duplicate key 'a'");
}

TEST(Safetensors, RejectsTruncatedFiles) {
  Sample sample;
  auto file = serialize_safetensors(sample.views());
  ASSERT_TRUE(file.ok());
  const std::string path = temp_path("truncated.safetensors");
  for (size_t cut : {size_t{0}, size_t{5}, size_t{12}, file->size() / 2, file->size() - 1}) {
    ASSERT_TRUE(write_file_atomic(path, std::string_view(*file).substr(0, cut)).ok());
    auto opened = SafetensorsFile::open(path);
    ASSERT_FALSE(opened.ok()) << "cut at " << cut;
    EXPECT_CONTAINS(opened.error().message, path);
    auto header = read_safetensors_header(path);
    ASSERT_FALSE(header.ok()) << "cut at " << cut;
  }
  EXPECT_CONTAINS(SafetensorsFile::open(temp_path("does_not_exist")).error().message,
                  "cannot open");
}

}  // namespace
}  // namespace stitch::io
