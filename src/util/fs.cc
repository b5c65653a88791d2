#include "util/fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace stitch {

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("{}: cannot open: {}", path.string(), std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return make_error("{}: read failed", path.string());
  return buffer.str();
}

Result<nlohmann::json> read_json_file(const fs::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return make_error("{}: not valid JSON", path.string());
  return doc;
}

Status write_json_file(const fs::path& path, const nlohmann::json& value) {
  return write_file_atomic(path, value.dump(2) + "\n");
}

Status write_file_atomic(const fs::path& path, std::string_view contents) {
  if (path.has_parent_path()) STITCH_TRY(make_dirs(path.parent_path()));
  // A unique temporary beside the target (same file system, so rename is atomic); unique also
  // between threads of one process.
  std::string temp_name = path.string() + ".tmp.XXXXXX";
  int fd = ::mkostemp(temp_name.data(), O_CLOEXEC);
  if (fd < 0) return make_error("{}: cannot create: {}", temp_name, std::strerror(errno));
  ::fchmod(fd, 0644);
  const fs::path temp = temp_name;
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return make_error("{}: write failed: {}", temp.string(), std::strerror(saved));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    return make_error("{}: fsync/close failed: {}", temp.string(), std::strerror(errno));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    return make_error("{}: rename failed: {}", path.string(), std::strerror(saved));
  }
  return {};
}

Status make_dirs(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return make_error("{}: cannot create directory: {}", path.string(), ec.message());
  return {};
}

fs::path executable_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return fs::current_path();
  return exe.parent_path();
}

}  // namespace stitch
