// Machine failures of a build are the machine's, never the program's compile_error: the messages
// nvcc, its stages and the host compiler print (a full disk, a quota, memory, the OOM killer, open
// files, a read-only file system), through the build cache (never cached), and a real nvcc whose
// writes fail (RLIMIT_FSIZE: "File too large", no privilege needed). A program quoting such a
// message in its own failing source line stays a compile_error.
#include "verify/build/build_failure.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/process.h"
#include "verify/build/build_cache.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

fs::path make_temp_dir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* made = ::mkdtemp(pattern.data());
  EXPECT_NE(made, nullptr);
  return made ? fs::path(made) : fs::path();
}

BuildResult failed_with(const std::string& log) {
  BuildResult result;
  result.ok = false;
  result.log = log;
  result.failure = "nvcc: exit code 1";
  return result;
}

TEST(BuildFailure, MachineMessagesAreTheMachines) {
  for (const std::string log : {
           "cc1plus: fatal error: error writing to /tmp/ccX.s: No space left on device\n",
           "nvcc fatal   : Could not write to file 'x.fatbin': No space left on device\n",
           "/usr/bin/ld: final link failed: No space left on device\n",
           "ptxas fatal   : Disk quota exceeded\n",
           "nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n",
           "g++: fatal error: Killed signal terminated program cc1plus\n",
           "virtual memory exhausted: Cannot allocate memory\n",
           "cc1plus: out of memory allocating 65536 bytes after a total of 1 bytes\n",
           "sh: 1: Cannot fork: Resource temporarily unavailable\n",
           "nvcc fatal   : Could not open output file 'a.o': Read-only file system\n",
           "<built-in>: fatal error: when writing output to x.ii: File too large\n",
           "ptxas fatal   : Too many open files\n",
       }) {
    Status status = check_machine_build_failure(failed_with("x.cu(3): warning: unused\n" + log));
    ASSERT_FALSE(status.ok()) << log;
    EXPECT_EQ(status.error().kind, ErrorKind::machine);
    EXPECT_NE(status.error().message.find(log.substr(0, 20)), std::string::npos)
        << status.error().message;
  }
}

TEST(BuildFailure, TheProgramsOwnErrorsAreNot) {
  EXPECT_TRUE(check_machine_build_failure(
                  failed_with("x.cu(3): error: identifier \"undefined_scale\" is undefined\n"))
                  .ok());
  // The message quoted from the program's own failing line (the caret under it) does not count.
  EXPECT_TRUE(
      check_machine_build_failure(failed_with("x.cu(7): error: expected a \";\"\n"
                                              "  const char* s = \"No space left on device\" oops\n"
                                              "                                             ^\n"))
          .ok());
  BuildResult timed_out = failed_with("nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n");
  timed_out.timed_out = true;  // the build's own limit: the program's
  timed_out.reproducible = false;
  EXPECT_TRUE(check_machine_build_failure(timed_out).ok());
  BuildResult built = failed_with("No space left on device (a warning of a build that worked)\n");
  built.ok = true;
  EXPECT_TRUE(check_machine_build_failure(built).ok());
}

TEST(BuildFailure, ACompilerKilledBySignalIsTheMachines) {
  BuildResult killed = failed_with("");
  killed.reproducible = false;  // ended by a signal, not by the timeout
  killed.failure = "nvcc: killed by signal 9";
  Status status = check_machine_build_failure(killed);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("killed by signal 9"), std::string::npos);
}

TEST(BuildFailure, TheCacheNeitherKeepsNorReturnsAMachineFailure) {
  const fs::path dir = make_temp_dir("build-failure-cache");
  ASSERT_TRUE(write_file_atomic(dir / "p.cu", "int x;\n").ok());
  FakeCompiler compiler;
  compiler.script.ok = false;
  compiler.script.log = "nvcc fatal   : Could not write to file 'p.o': No space left on device\n";
  BuildRequest request;
  request.sources = {dir / "p.cu"};
  request.output_path = dir / "out" / "program.so";
  for (const fs::path& cache : {fs::path(), dir / "cache"}) {
    auto built = build_maybe_cached(compiler, request, cache, "w0");
    ASSERT_FALSE(built.ok()) << cache;
    EXPECT_EQ(built.error().kind, ErrorKind::machine);
  }
  // The disk freed: the same program builds, from the compiler again (nothing was cached).
  compiler.script.ok = true;
  compiler.script.log = "";
  auto built = build_maybe_cached(compiler, request, dir / "cache", "w0");
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_TRUE(built->ok);
  EXPECT_FALSE(built->cache_hit);
  EXPECT_EQ(compiler.requests.size(), 3u);
  fs::remove_all(dir);
}

// The real nvcc, its writes failing: RLIMIT_FSIZE (inherited by nvcc and its stages, SIGXFSZ
// ignored so writes fail with EFBIG rather than kill) in a child process, so this process keeps
// its limits. Needs nvcc, no privilege, no GPU.
TEST(BuildFailureNvcc, AWriteFailureOfTheRealCompilerIsTheMachines) {
  auto nvcc = locate_nvcc();
  if (!nvcc.ok()) GTEST_SKIP() << "no nvcc";
  const fs::path dir = make_temp_dir("build-failure-nvcc");
  ASSERT_TRUE(write_file_atomic(dir / "p.cu",
                                "__global__ void twice(float* x) { x[threadIdx.x] *= 2; }\n"
                                "extern \"C\" void run(float* x) { twice<<<1, 32>>>(x); }\n")
                  .ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{16 << 10, 16 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(3);
    SystemProcessRunner runner;
    NvccCompiler compiler(runner, {*nvcc, {}});
    BuildRequest request;
    request.sources = {dir / "p.cu"};
    request.output_path = dir / "out" / "program.so";
    auto built = build_maybe_cached(compiler, request, {}, "w0");
    ::_exit(!built.ok() && built.error().kind == ErrorKind::machine &&
                    built.error().message.find("File too large") != std::string::npos
                ? 0
            : built.ok() && !built->ok ? 1  // classified as the program's compile error
                                       : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a compile_error; 2: built, or another error";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch
