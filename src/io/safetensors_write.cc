// Safetensors writing: header layout like the reference implementation (compact JSON, padded
// with spaces to a multiple of 8 bytes so the data section starts 8-byte aligned) and atomic,
// streaming file writes (safetensors.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "io/safetensors.h"

namespace stitch::io {

namespace {

using json = nlohmann::ordered_json;

Status write_all(int fd, const void* data, size_t size) {
  const auto* bytes = static_cast<const std::byte*>(data);
  size_t done = 0;
  while (done < size) {
    // Chunks of at most 1 GiB: some kernels cap a single write below 2 GiB.
    const size_t chunk = std::min<size_t>(size - done, size_t{1} << 30);
    ssize_t n = ::write(fd, bytes + done, chunk);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error("write failed: {}", std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

Result<std::string> serialize_safetensors_header(std::span<const TensorView> tensors,
                                                 const Metadata& metadata) {
  json header = json::object();
  if (!metadata.empty()) {
    json& entries = header["__metadata__"] = json::object();
    for (const auto& [key, value] : metadata) {
      if (entries.contains(key)) return make_error("metadata: duplicate key '{}'", key);
      entries[key] = value;
    }
  }
  std::unordered_set<std::string_view> names;
  uint64_t offset = 0;
  for (const TensorView& tensor : tensors) {
    if (tensor.name == "__metadata__") return make_error("a tensor may not be named __metadata__");
    if (!names.insert(tensor.name).second)
      return make_error("duplicate tensor name '{}'", tensor.name);
    if (static_cast<int>(tensor.dtype) >= ir::kDTypeCount)
      return make_error("tensor '{}': invalid dtype", tensor.name);
    std::optional<int64_t> numel = ir::checked_numel(tensor.shape);
    uint64_t expected = 0;
    if (!numel ||
        __builtin_mul_overflow(static_cast<uint64_t>(*numel),
                               static_cast<uint64_t>(ir::dtype_size(tensor.dtype)), &expected))
      return make_error("tensor '{}': shape [{}] has a negative dim or is too large", tensor.name,
                        fmt::join(tensor.shape, ", "));
    if (tensor.data.size() != expected)
      return make_error("tensor '{}': {} bytes of data, but shape [{}] {} needs {}", tensor.name,
                        tensor.data.size(), fmt::join(tensor.shape, ", "),
                        safetensors_dtype_name(tensor.dtype), expected);
    json entry = json::object();
    entry["dtype"] = safetensors_dtype_name(tensor.dtype);
    entry["shape"] = tensor.shape;
    entry["data_offsets"] = json::array({offset, offset + expected});
    header[tensor.name] = std::move(entry);
    offset += expected;
  }

  std::string text;
  try {
    text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const std::exception&) {
    return make_error("a tensor name or metadata entry is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string result(8, '\0');
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i)
    result[static_cast<size_t>(i)] = static_cast<char>((length >> (8 * i)) & 0xff);
  result += text;
  return result;
}

Result<std::string> serialize_safetensors(std::span<const TensorView> tensors,
                                          const Metadata& metadata) {
  STITCH_ASSIGN_OR_RETURN(std::string file, serialize_safetensors_header(tensors, metadata));
  for (const TensorView& tensor : tensors)
    file.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size());
  return file;
}

Status write_safetensors(const std::string& path, std::span<const TensorView> tensors,
                         const Metadata& metadata) {
  auto header = serialize_safetensors_header(tensors, metadata);
  if (!header.ok()) return header.error().with_context(path);

  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return make_error("{}: cannot create directory: {}", path, ec.message());
  }
  // mkstemp: a unique name, so concurrent writers of the same file do not trample each other.
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0)
    return make_error("{}: cannot create a temporary file: {}", path, std::strerror(errno));
  auto fail = [&](const Error& error) -> Status {
    ::close(fd);
    ::unlink(temp.c_str());
    return error.with_context(path);
  };
  if (::fchmod(fd, 0644) != 0) return fail(make_error("fchmod: {}", std::strerror(errno)));
  if (Status status = write_all(fd, header->data(), header->size()); !status.ok())
    return fail(status.error());
  for (const TensorView& tensor : tensors)
    if (Status status = write_all(fd, tensor.data.data(), tensor.data.size()); !status.ok())
      return fail(status.error());
  if (::fsync(fd) != 0) return fail(make_error("fsync: {}", std::strerror(errno)));
  if (::close(fd) != 0) {
    ::unlink(temp.c_str());
    return make_error("{}: close: {}", path, std::strerror(errno));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    return make_error("{}: rename: {}", path, std::strerror(saved));
  }
  return {};
}

}  // namespace stitch::io
