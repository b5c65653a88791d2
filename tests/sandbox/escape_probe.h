// What the escape suite's child reports to the test: one line per check, "OK", "FAIL" or "NOTE"
// (a check the kernel here cannot run, said visibly), written to a pipe the isolation keeps open.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace stitch::sandbox::testing {

class Probe {
 public:
  explicit Probe(int fd) : fd_(fd) {}
  // `refused` true: the attempt failed, as it must.
  void refused(bool refused, const std::string& what) {
    line(refused ? "OK" : "FAIL", refused ? what : what + " SUCCEEDED");
  }
  void works(bool worked, const std::string& what) {
    line(worked ? "OK" : "FAIL",
         worked ? what : fmt::format("{} failed: {}", what, strerror(errno)));
  }
  void note(const std::string& what) { line("NOTE", what); }
  void line(const char* status, const std::string& text) {
    std::string out = fmt::format("{} {}\n", status, text);
    ssize_t ignored = ::write(fd_, out.data(), out.size());
    (void)ignored;
  }

 private:
  int fd_;
};

}  // namespace stitch::sandbox::testing
