// Safetensors reading: header validation, header-only reads, memory mapping and single-tensor
// reads (safetensors.h).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "io/safetensors.h"
#include "ir/json_reader.h"

namespace stitch::io {

namespace {

using json = nlohmann::ordered_json;

struct DTypeName {
  std::string_view name;
  ir::DType dtype;
};

constexpr DTypeName kDTypeNames[] = {
    {"F32", ir::DType::float32},   {"F64", ir::DType::float64}, {"F16", ir::DType::float16},
    {"BF16", ir::DType::bfloat16}, {"I64", ir::DType::int64},   {"I32", ir::DType::int32},
    {"I16", ir::DType::int16},     {"I8", ir::DType::int8},     {"U8", ir::DType::uint8},
    {"BOOL", ir::DType::boolean},
};

// A JSON integer that is a valid non-negative 64-bit value.
std::optional<uint64_t> as_uint(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

Result<TensorInfo> parse_tensor_entry(const std::string& name, const json& entry,
                                      uint64_t data_bytes) {
  if (!entry.is_object())
    return make_error("tensor '{}': expected an object, got {}", name, ir::json_type_name(entry));
  TensorInfo info;
  info.name = name;

  auto dtype = entry.find("dtype");
  if (dtype == entry.end()) return make_error("tensor '{}': missing 'dtype'", name);
  if (!dtype->is_string())
    return make_error("tensor '{}': dtype: expected a string, got {}", name,
                      ir::json_type_name(*dtype));
  auto known = dtype_from_safetensors_name(dtype->get_ref<const std::string&>());
  if (!known)
    return make_error(
        "tensor '{}': unsupported dtype '{}' (supported: F32 F64 F16 BF16 I64 I32 "
        "I16 I8 U8 BOOL)",
        name, dtype->get_ref<const std::string&>());
  info.dtype = *known;

  auto shape = entry.find("shape");
  if (shape == entry.end()) return make_error("tensor '{}': missing 'shape'", name);
  if (!shape->is_array())
    return make_error("tensor '{}': shape: expected an array, got {}", name,
                      ir::json_type_name(*shape));
  uint64_t numel = 1;
  for (size_t d = 0; d < shape->size(); ++d) {
    std::optional<uint64_t> dim = as_uint((*shape)[d]);
    if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return make_error("tensor '{}': shape[{}]: expected a non-negative integer", name, d);
    if (__builtin_mul_overflow(numel, *dim, &numel))
      return make_error("tensor '{}': shape overflows 64 bits", name);
    info.shape.push_back(static_cast<int64_t>(*dim));
  }

  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end()) return make_error("tensor '{}': missing 'data_offsets'", name);
  if (!offsets->is_array() || offsets->size() != 2)
    return make_error("tensor '{}': data_offsets: expected [begin, end]", name);
  std::optional<uint64_t> begin = as_uint((*offsets)[0]);
  std::optional<uint64_t> end = as_uint((*offsets)[1]);
  if (!begin || !end)
    return make_error("tensor '{}': data_offsets: expected non-negative integers", name);
  if (*begin > *end)
    return make_error("tensor '{}': data_offsets [{}, {}] end before begin", name, *begin, *end);
  if (*end > data_bytes)
    return make_error(
        "tensor '{}': data_offsets [{}, {}] beyond the data section ({} bytes); "
        "the file is truncated or corrupt",
        name, *begin, *end, data_bytes);
  uint64_t expected = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(ir::dtype_size(info.dtype)), &expected) ||
      expected > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return make_error("tensor '{}': byte size overflows 64 bits", name);
  if (*end - *begin != expected)
    return make_error("tensor '{}': data_offsets span {} bytes, but shape [{}] {} needs {}", name,
                      *end - *begin, fmt::join(info.shape, ", "), dtype->get<std::string>(),
                      expected);
  info.begin = *begin;
  info.end = *end;
  return info;
}

Status parse_metadata(const json& value, Metadata& metadata) {
  if (!value.is_object())
    return make_error("__metadata__: expected an object, got {}", ir::json_type_name(value));
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!it.value().is_string())
      return make_error("__metadata__['{}']: expected a string, got {}", it.key(),
                        ir::json_type_name(it.value()));
    metadata.emplace_back(it.key(), it.value().get<std::string>());
  }
  return {};
}

// Tensors may come in any order in the header but their byte ranges must not overlap.
Status check_no_overlap(const std::vector<TensorInfo>& tensors) {
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& info : tensors)
    if (info.byte_size() > 0) by_offset.push_back(&info);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      return make_error("tensors '{}' [{}, {}] and '{}' [{}, {}] overlap", by_offset[i - 1]->name,
                        by_offset[i - 1]->begin, by_offset[i - 1]->end, by_offset[i]->name,
                        by_offset[i]->begin, by_offset[i]->end);
  return {};
}

Error errno_error(const std::string& path, std::string_view what) {
  return make_error("{}: {}: {}", path, what, std::strerror(errno));
}

// Reads exactly `size` bytes at `offset`.
Status pread_all(int fd, std::byte* buffer, size_t size, uint64_t offset, const std::string& path) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, buffer + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_error(path, "read failed");
    }
    if (n == 0) return make_error("{}: unexpected end of file", path);
    done += static_cast<size_t>(n);
  }
  return {};
}

// An fd closed on scope exit.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

Result<uint64_t> open_and_size(const std::string& path, FileDescriptor& file) {
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) return errno_error(path, "cannot open");
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return errno_error(path, "cannot stat");
  if (!S_ISREG(st.st_mode)) return make_error("{}: not a regular file", path);
  return static_cast<uint64_t>(st.st_size);
}

}  // namespace

std::string_view safetensors_dtype_name(ir::DType dtype) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.dtype == dtype) return entry.name;
  return "UNKNOWN";
}

std::optional<ir::DType> dtype_from_safetensors_name(std::string_view name) {
  for (const DTypeName& entry : kDTypeNames)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

int64_t TensorInfo::numel() const {
  return ir::checked_numel(shape).value_or(std::numeric_limits<int64_t>::max());
}

const TensorInfo* SafetensorsHeader::find(std::string_view name) const {
  for (const TensorInfo& info : tensors)
    if (info.name == name) return &info;
  return nullptr;
}

Result<SafetensorsHeader> parse_safetensors_header(std::string_view prefix, uint64_t file_size) {
  if (file_size < 8 || prefix.size() < 8)
    return make_error("file too small ({} bytes) to hold the 8-byte header length", file_size);
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i)
    header_bytes = (header_bytes << 8) | static_cast<uint8_t>(prefix[static_cast<size_t>(i)]);
  if (header_bytes > file_size - 8)
    return make_error(
        "header length {} exceeds the {} bytes after the length field; not a "
        "safetensors file, or truncated",
        header_bytes, file_size - 8);
  if (header_bytes > kMaxHeaderBytes)
    return make_error("header length {} exceeds the limit of {} bytes", header_bytes,
                      kMaxHeaderBytes);
  if (prefix.size() - 8 < header_bytes)
    return make_error("header truncated: need {} bytes, have {}", header_bytes, prefix.size() - 8);

  SafetensorsHeader header;
  header.header_bytes = header_bytes;
  header.data_offset = 8 + header_bytes;
  header.data_bytes = file_size - header.data_offset;

  const std::string_view text = prefix.substr(8, header_bytes);
  if (text.empty() || text[0] != '{')
    return make_error("header does not start with '{{'; not a safetensors file");
  auto root = ir::read_json_strict(text, /*max_depth=*/8);
  if (!root.ok()) return root.error().with_context("header");
  if (!root->is_object())
    return make_error("header: expected a JSON object, got {}", ir::json_type_name(*root));

  for (auto it = root->begin(); it != root->end(); ++it) {
    if (it.key() == "__metadata__") {
      STITCH_TRY(parse_metadata(it.value(), header.metadata));
      continue;
    }
    STITCH_ASSIGN_OR_RETURN(TensorInfo info,
                            parse_tensor_entry(it.key(), it.value(), header.data_bytes));
    header.tensors.push_back(std::move(info));
  }
  STITCH_TRY(check_no_overlap(header.tensors));
  return header;
}

Result<SafetensorsHeader> read_safetensors_header(const std::string& path) {
  FileDescriptor file;
  STITCH_ASSIGN_OR_RETURN(uint64_t file_size, open_and_size(path, file));
  if (file_size < 8)
    return make_error("{}: file too small ({} bytes) to hold the 8-byte header length", path,
                      file_size);
  std::string prefix(8, '\0');
  STITCH_TRY(pread_all(file.fd, reinterpret_cast<std::byte*>(prefix.data()), 8, 0, path));
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i)
    header_bytes = (header_bytes << 8) | static_cast<uint8_t>(prefix[static_cast<size_t>(i)]);
  // Read at most what the file and the limit allow; parse_safetensors_header reports the problem.
  const uint64_t available = std::min({header_bytes, file_size - 8, kMaxHeaderBytes});
  prefix.resize(8 + available);
  STITCH_TRY(
      pread_all(file.fd, reinterpret_cast<std::byte*>(prefix.data()) + 8, available, 8, path));
  auto header = parse_safetensors_header(prefix, file_size);
  if (!header.ok()) return header.error().with_context(path);
  return header;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  FileDescriptor file;
  STITCH_ASSIGN_OR_RETURN(uint64_t file_size, open_and_size(path, file));
  if (file_size < 8)
    return make_error("{}: file too small ({} bytes) to hold the 8-byte header length", path,
                      file_size);
  if (file_size > std::numeric_limits<size_t>::max())
    return make_error("{}: file too large to map", path);
  void* mapping =
      ::mmap(nullptr, static_cast<size_t>(file_size), PROT_READ, MAP_PRIVATE, file.fd, 0);
  if (mapping == MAP_FAILED) return errno_error(path, "mmap failed");

  SafetensorsFile result;
  result.path_ = path;
  result.mapping_ = static_cast<const std::byte*>(mapping);
  result.mapping_size_ = static_cast<size_t>(file_size);
  auto header = parse_safetensors_header(
      std::string_view(reinterpret_cast<const char*>(mapping), result.mapping_size_), file_size);
  if (!header.ok()) return header.error().with_context(path);  // result unmaps
  result.header_ = std::move(*header);
  return result;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept {
  *this = std::move(other);
}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    header_ = std::move(other.header_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_size_ = std::exchange(other.mapping_size_, 0);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  release();
}

void SafetensorsFile::release() {
  if (mapping_ != nullptr) ::munmap(const_cast<std::byte*>(mapping_), mapping_size_);
  mapping_ = nullptr;
  mapping_size_ = 0;
}

std::span<const std::byte> SafetensorsFile::tensor_bytes(const TensorInfo& info) const {
  // Offsets were validated against the file size when the header was parsed.
  return {mapping_ + header_.data_offset + info.begin, info.byte_size()};
}

Result<std::span<const std::byte>> SafetensorsFile::tensor_bytes(std::string_view name) const {
  const TensorInfo* info = header_.find(name);
  if (info == nullptr) return make_error("{}: no tensor named '{}'", path_, name);
  return tensor_bytes(*info);
}

Result<std::vector<std::byte>> read_tensor_bytes(const std::string& path,
                                                 const SafetensorsHeader& header,
                                                 const TensorInfo& info) {
  FileDescriptor file;
  STITCH_ASSIGN_OR_RETURN(uint64_t file_size, open_and_size(path, file));
  if (header.data_offset + header.data_bytes != file_size)
    return make_error("{}: file size changed since its header was read", path);
  if (info.end > header.data_bytes || info.begin > info.end)
    return make_error("{}: tensor '{}' is not in this file", path, info.name);
  std::vector<std::byte> bytes(info.byte_size());
  STITCH_TRY(pread_all(file.fd, bytes.data(), bytes.size(), header.data_offset + info.begin, path));
  return bytes;
}

}  // namespace stitch::io
