// BuildCache with FakeCompiler: what the key depends on (and what it must not), hits, which
// results are stored, atomic entries under crashes and races, and the per-worker layout.
#include "verify/build/build_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "util/fs.h"

namespace stitch {
namespace {

const std::filesystem::path kData = std::filesystem::path(STITCH_TEST_DATA_DIR) / "verify" / "data";

class BuildCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stitch_build_cache_XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
    write("src/program.cu", "#include \"helper.h\"\n__global__ void k() {}\n");
    write("src/helper.h", "#pragma once\n#include \"nested/inner.h\"\n#include <vector>\n");
    write("src/nested/inner.h", "inline int inner() { return 1; }\n");
    write("src/unrelated.h", "int unrelated;\n");
    request_.sources = {dir_ / "src" / "program.cu"};
    request_.libraries = {"cublasLt"};
    request_.extra_flags = {"-DTILE=64"};
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void write(const std::string& relative, const std::string& text) {
    std::filesystem::create_directories((dir_ / relative).parent_path());
    std::ofstream(dir_ / relative) << text;
  }

  BuildCache open_cache(FakeCompiler& compiler, const std::string& worker = "worker0") {
    auto cache = BuildCache::open(dir_ / "cache", worker, compiler);
    EXPECT_TRUE(cache.ok()) << (cache.ok() ? "" : cache.error().message);
    return std::move(cache).value();
  }

  std::string key(BuildCache& cache, const BuildRequest& request) {
    auto k = cache.key_for(request);
    EXPECT_TRUE(k.ok()) << (k.ok() ? "" : k.error().message);
    return k.ok() ? *k : "";
  }

  size_t entry_count() const {
    size_t count = 0;
    for (auto& e : std::filesystem::directory_iterator(dir_ / "cache" / "entries")) {
      (void)e;
      ++count;
    }
    return count;
  }

  std::filesystem::path dir_;
  BuildRequest request_;
};

TEST(Sha256, KnownVector) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_F(BuildCacheTest, LocalIncludesAreFollowedTransitively) {
  auto headers = local_includes(request_.sources[0], {});
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0].filename(), "helper.h");
  EXPECT_EQ(headers[1].filename(), "inner.h");
}

// A host file named by a program is the include check's to refuse, never a header to read (its
// text would reach the static checks' findings): absolute paths, paths that climb out of the
// source's folder and links out of it are not followed; climbing inside the folder is.
TEST_F(BuildCacheTest, LocalIncludesStayInsideTheSourcesFolders) {
  write("secret.h", "int secret;\n");
  write("src/nested/up.h", "#include \"../unrelated.h\"\n");
  std::filesystem::create_symlink(dir_ / "secret.h", dir_ / "src" / "link.h");
  write("src/program.cu", "#include \"" + (dir_ / "secret.h").string() +
                              "\"\n#include \"../secret.h\"\n#include \"link.h\"\n"
                              "#include \"nested/up.h\"\n");
  auto headers = local_includes(request_.sources[0], {});
  ASSERT_EQ(headers.size(), 2u);
  EXPECT_EQ(headers[0].filename(), "up.h");
  EXPECT_EQ(headers[1].filename(), "unrelated.h");
}

TEST_F(BuildCacheTest, KeyDependsOnEveryInput) {
  FakeCompiler compiler;
  BuildCache cache = open_cache(compiler);
  const std::string base = key(cache, request_);
  EXPECT_EQ(base.size(), 64u);
  EXPECT_EQ(key(cache, request_), base);

  BuildRequest other = request_;
  other.arch = "sm_90a";
  EXPECT_NE(key(cache, other), base) << "arch";
  other = request_;
  other.extra_flags = {"-DTILE=128"};
  EXPECT_NE(key(cache, other), base) << "flags";
  other = request_;
  other.libraries = {"cublasLt", "cudnn"};
  EXPECT_NE(key(cache, other), base) << "libraries";
  other = request_;
  other.output_kind = OutputKind::executable;
  EXPECT_NE(key(cache, other), base) << "output kind";

  compiler.identity_text = "fake-compiler 1.1";  // a new nvcc version
  EXPECT_NE(key(cache, request_), base) << "compiler identity";
  compiler.identity_text = "fake-compiler 1.0";
  EXPECT_EQ(key(cache, request_), base);

  write("src/program.cu", "#include \"helper.h\"\n__global__ void k() { }\n");
  const std::string edited_source = key(cache, request_);
  EXPECT_NE(edited_source, base) << "source contents";
  write("src/nested/inner.h", "inline int inner() { return 2; }\n");
  EXPECT_NE(key(cache, request_), edited_source) << "included header contents";
}

TEST_F(BuildCacheTest, KeyIgnoresWhatDoesNotChangeTheOutput) {
  FakeCompiler compiler;
  BuildCache cache = open_cache(compiler);
  const std::string base = key(cache, request_);
  BuildRequest other = request_;
  other.timeout_s = 5;
  other.output_path = dir_ / "elsewhere.so";
  EXPECT_EQ(key(cache, other), base);
  write("src/unrelated.h", "int unrelated = 2;\n");
  EXPECT_EQ(key(cache, request_), base) << "a header nobody includes";
  // The same program in another attempt directory is the same build.
  write("attempt2/program.cu", *read_file(dir_ / "src" / "program.cu"));
  write("attempt2/helper.h", *read_file(dir_ / "src" / "helper.h"));
  write("attempt2/nested/inner.h", *read_file(dir_ / "src" / "nested" / "inner.h"));
  other = request_;
  other.sources = {dir_ / "attempt2" / "program.cu"};
  EXPECT_EQ(key(cache, other), base);
}

TEST_F(BuildCacheTest, SecondBuildIsAHit) {
  FakeCompiler compiler;
  compiler.script.log = *read_file(kData / "spilling_kernel.log");
  BuildCache cache = open_cache(compiler);
  auto first = cache.build(request_);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(first->ok);
  EXPECT_FALSE(first->cache_hit);
  const std::string k = key(cache, request_);
  EXPECT_EQ(first->library_path, cache.entry_dir(k) / "program.so");
  EXPECT_EQ(*read_file(first->library_path), "fake shared library");
  // The compiler built in this worker's directory, never in the entry itself.
  ASSERT_EQ(compiler.requests.size(), 1u);
  EXPECT_EQ(compiler.requests[0].output_path.parent_path().parent_path(), cache.worker_dir());

  auto second = cache.build(request_);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(compiler.requests.size(), 1u) << "a hit must not compile";
  EXPECT_TRUE(second->cache_hit);
  EXPECT_TRUE(second->ok);
  EXPECT_EQ(second->library_path, first->library_path);
  ASSERT_EQ(second->kernels.size(), 4u);
  EXPECT_EQ(second->kernels[0].name, first->kernels[0].name);
  EXPECT_DOUBLE_EQ(second->seconds, first->seconds);

  // Another worker (its own build directory) finds the same entry.
  FakeCompiler other_compiler;
  BuildCache other = open_cache(other_compiler, "worker1");
  auto third = other.build(request_);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->cache_hit);
  EXPECT_TRUE(other_compiler.requests.empty());
}

TEST_F(BuildCacheTest, CompileErrorsAreCachedWithTodaysFileNames) {
  write("a/broken_program.cu", *read_file(kData / "broken_program.cu"));
  write("b/broken_program.cu", *read_file(kData / "broken_program.cu"));
  std::string log = *read_file(kData / "broken_program.log");
  // As nvcc would print it for an absolute source path.
  std::string absolute_log;
  for (size_t at = 0, next; at < log.size(); at = next) {
    next = log.find("broken_program.cu(", at);
    if (next == std::string::npos) next = log.size();
    absolute_log += log.substr(at, next - at);
    if (next < log.size()) absolute_log += (dir_ / "a").string() + "/";
    if (next < log.size()) {
      absolute_log += "broken_program.cu(";
      next += std::string("broken_program.cu(").size();
    }
  }
  FakeCompiler compiler;
  compiler.script.ok = false;
  compiler.script.log = absolute_log;
  BuildCache cache = open_cache(compiler);
  BuildRequest request;
  request.sources = {dir_ / "a" / "broken_program.cu"};
  auto first = cache.build(request);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->ok);
  ASSERT_EQ(first->diagnostics.size(), 2u);
  EXPECT_EQ(first->diagnostics[0].file, (dir_ / "a" / "broken_program.cu").string());

  request.sources = {dir_ / "b" / "broken_program.cu"};
  auto second = cache.build(request);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(compiler.requests.size(), 1u);
  EXPECT_TRUE(second->cache_hit);
  EXPECT_FALSE(second->ok);
  EXPECT_TRUE(second->library_path.empty());
  ASSERT_EQ(second->diagnostics.size(), 2u);
  EXPECT_EQ(second->diagnostics[0].file, (dir_ / "b" / "broken_program.cu").string());
  EXPECT_NE(second->diagnostics[0].snippet.find("undefined_scale"), std::string::npos);
}

TEST_F(BuildCacheTest, TimeoutsAreNotCached) {
  FakeCompiler compiler;
  compiler.script.timed_out = true;
  BuildCache cache = open_cache(compiler);
  auto first = cache.build(request_);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->ok);
  EXPECT_TRUE(first->timed_out);
  EXPECT_EQ(entry_count(), 0u);
  compiler.script.timed_out = false;
  auto second = cache.build(request_);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->ok);
  EXPECT_FALSE(second->cache_hit);
  EXPECT_EQ(compiler.requests.size(), 2u);
}

TEST_F(BuildCacheTest, CompilerThatCannotStartLeavesNothing) {
  FakeCompiler compiler;
  compiler.script.cannot_start = true;
  BuildCache cache = open_cache(compiler);
  EXPECT_FALSE(cache.build(request_).ok());
  EXPECT_EQ(entry_count(), 0u);
  EXPECT_TRUE(std::filesystem::is_empty(cache.worker_dir()));
}

TEST_F(BuildCacheTest, CrashMidBuildLeavesNoEntry) {
  // "fast" (fork without exec): the child must use this test's cache directory.
  GTEST_FLAG_SET(death_test_style, "fast");
  std::string k;
  {
    FakeCompiler compiler;
    BuildCache cache = open_cache(compiler);
    k = key(cache, request_);
    compiler.script.during_build = [](const BuildRequest&) { _exit(3); };
    // The child process dies inside the compiler, with a half-written library on disk.
    EXPECT_EXIT((void)cache.build(request_), ::testing::ExitedWithCode(3), "");
    EXPECT_FALSE(cache.lookup(k).has_value());
    EXPECT_EQ(entry_count(), 0u);
    // Its build directory is still there: the process that owned it is gone.
    EXPECT_FALSE(std::filesystem::is_empty(cache.worker_dir()));
  }
  FakeCompiler compiler;
  BuildCache reopened = open_cache(compiler);
  EXPECT_TRUE(std::filesystem::is_empty(reopened.worker_dir())) << "abandoned build not removed";
  auto result = reopened.build(request_);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ok);
  EXPECT_FALSE(result->cache_hit);
  EXPECT_EQ(*read_file(result->library_path), "fake shared library");
}

TEST_F(BuildCacheTest, RaceBetweenWorkersKeepsTheFirstEntry) {
  FakeCompiler first_compiler;
  first_compiler.script.library_contents = "first";
  BuildCache first = open_cache(first_compiler, "worker0");
  FakeCompiler second_compiler;
  second_compiler.script.library_contents = "second";
  BuildCache second = open_cache(second_compiler, "worker1");
  // While worker1 compiles, worker0 finishes the same build and stores it.
  second_compiler.script.during_build = [&](const BuildRequest&) {
    auto stored = first.build(request_);
    ASSERT_TRUE(stored.ok());
  };
  auto result = second.build(request_);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(*read_file(result->library_path), "first");
  EXPECT_EQ(entry_count(), 1u);
  EXPECT_TRUE(std::filesystem::is_empty(second.worker_dir()));
}

TEST_F(BuildCacheTest, IncompleteEntryIsAMiss) {
  FakeCompiler compiler;
  BuildCache cache = open_cache(compiler);
  const std::string k = key(cache, request_);
  std::filesystem::create_directories(cache.entry_dir(k));
  std::ofstream(cache.entry_dir(k) / "build.json") << "{ truncated";
  EXPECT_FALSE(cache.lookup(k).has_value());
}

TEST_F(BuildCacheTest, WorkerIdsAreDirectoryNames) {
  FakeCompiler compiler;
  EXPECT_FALSE(BuildCache::open(dir_ / "cache", "", compiler).ok());
  EXPECT_FALSE(BuildCache::open(dir_ / "cache", "../escape", compiler).ok());
  EXPECT_FALSE(BuildCache::open(dir_ / "cache", "entries", compiler).ok());
  auto cache = BuildCache::open(dir_ / "cache", "gpu3", compiler);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(cache->worker_dir(), dir_ / "cache" / "gpu3");
}

}  // namespace
}  // namespace stitch
