// Reading and writing safetensors files (weights.safetensors, reference inputs/outputs): an 8-byte
// little-endian header length N, N bytes of JSON header, then the raw tensor data.
//
// Reading validates the whole header before any tensor is touched (length sane against the file
// size, JSON object, known dtypes, non-negative shapes, offsets in range and non-overlapping, byte
// size == numel * dtype size, all arithmetic overflow-checked), so a corrupt file is an error,
// never a crash. Files can be gigabytes: SafetensorsFile maps the file and hands out views; the
// header alone can be read without touching the data.
//
// Writing follows the reference implementation: compact JSON header padded with spaces to a
// multiple of 8 bytes, data packed in the order given. Files are written atomically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "util/result.h"

namespace stitch::io {

// "F32" F64 F16 BF16 I64 I32 I16 I8 U8 BOOL <-> ir::DType.
std::string_view safetensors_dtype_name(ir::DType dtype);
std::optional<ir::DType> dtype_from_safetensors_name(std::string_view name);

// The reference implementation refuses headers above 100 MB; so do we.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

using Metadata = std::vector<std::pair<std::string, std::string>>;  // __metadata__, in file order

struct TensorInfo {
  std::string name;
  ir::DType dtype = ir::DType::float32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // byte offsets into the data section (which starts after the header)
  uint64_t end = 0;

  uint64_t byte_size() const { return end - begin; }
  int64_t numel() const;  // validated to fit when the header was parsed
  bool operator==(const TensorInfo&) const = default;
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // in header order
  Metadata metadata;
  uint64_t header_bytes = 0;  // N
  uint64_t data_offset = 0;   // 8 + N: where the data section starts in the file
  uint64_t data_bytes = 0;    // file size - data_offset

  const TensorInfo* find(std::string_view name) const;  // nullptr when absent
};

// Parses and validates the header of a file of `file_size` bytes whose first bytes are `prefix`;
// `prefix` must hold at least the 8-byte length and the header (all of it is fine).
Result<SafetensorsHeader> parse_safetensors_header(std::string_view prefix, uint64_t file_size);

// Reads and validates only the header of the file at `path` (no tensor data is read).
Result<SafetensorsHeader> read_safetensors_header(const std::string& path);

// A safetensors file mapped read-only into memory. Move-only; views die with it. The file must not
// be truncated while mapped (reading a vanished page raises SIGBUS); files are replaced, not
// rewritten in place, by every writer in this project (atomic rename).
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);

  SafetensorsFile(SafetensorsFile&& other) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<TensorInfo>& tensors() const { return header_.tensors; }

  // The bytes of one tensor, in place (no copy). Not necessarily aligned to the dtype: the format
  // packs tensors back to back. `info` must come from this file's header.
  std::span<const std::byte> tensor_bytes(const TensorInfo& info) const;
  Result<std::span<const std::byte>> tensor_bytes(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  void release();

  std::string path_;
  SafetensorsHeader header_;
  const std::byte* mapping_ = nullptr;
  size_t mapping_size_ = 0;
};

// Reads one tensor's bytes into memory with plain reads (for a few small tensors of a big file).
Result<std::vector<std::byte>> read_tensor_bytes(const std::string& path,
                                                 const SafetensorsHeader& header,
                                                 const TensorInfo& info);

// A tensor to write: name, type and the bytes (numel * dtype size, row-major) it points to.
struct TensorView {
  std::string name;
  ir::DType dtype = ir::DType::float32;
  std::vector<int64_t> shape;
  std::span<const std::byte> data;
};

// The 8-byte length plus padded JSON header for `tensors` laid out in the order given. Errors on
// duplicate names, the name "__metadata__", negative dims, or data of the wrong size.
Result<std::string> serialize_safetensors_header(std::span<const TensorView> tensors,
                                                 const Metadata& metadata = {});

// The whole file in memory (tests and small files).
Result<std::string> serialize_safetensors(std::span<const TensorView> tensors,
                                          const Metadata& metadata = {});

// Writes a file atomically (temporary file in the same directory, fsync, rename), streaming the
// tensors' bytes without building the file in memory.
Status write_safetensors(const std::string& path, std::span<const TensorView> tensors,
                         const Metadata& metadata = {});

}  // namespace stitch::io
