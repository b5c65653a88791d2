// A cache of builds keyed by what determines the output: the sources' and their local headers'
// contents, the flags, the libraries, the target architecture and the compiler's identity (nvcc
// version). Entries are built in a per-worker directory and renamed into place whole, so a crash
// mid-build never leaves an entry behind; a hit returns the stored BuildResult.
//
// Layout under the cache root:
//   entries/<key>/program.so, build.json   shared by all workers (entries are immutable once
//   renamed) <worker-id>/build-<key>-<pid>-<n>/     one worker's builds in progress
// Sharing entries across workers is safe because rename(2) of a directory onto an existing
// non-empty one fails: the first finished build wins and later ones discard their copy.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"
#include "verify/build/compiler.h"

namespace stitch {

// Where builds are cached unless a command is told otherwise: $STITCH_BUILD_CACHE, else
// $XDG_CACHE_HOME/stitchcuda/builds, else ~/.cache/stitchcuda/builds, else a temp directory. One
// place, so `generate`, `verify` and `profile` share entries.
std::filesystem::path default_build_cache_dir();

// compiler.build(request), through the BuildCache at cache_dir (opened for worker_id) unless
// cache_dir is empty.
Result<BuildResult> build_maybe_cached(Compiler& compiler, const BuildRequest& request,
                                       const std::filesystem::path& cache_dir,
                                       const std::string& worker_id);

// Lower-case hex SHA-256 (OpenSSL EVP).
std::string sha256_hex(std::string_view data);

// The quoted (#include "...") headers a source pulls in, found next to the including file or in
// `include_dirs`, followed transitively; headers that are not found are skipped (they are system
// or generated headers, covered by the compiler identity or not at all).
std::vector<std::filesystem::path> local_includes(
    const std::filesystem::path& source, const std::vector<std::filesystem::path>& include_dirs);

class BuildCache {
 public:
  // Creates the directories and removes builds left behind by dead processes of this worker.
  static Result<BuildCache> open(const std::filesystem::path& root, const std::string& worker_id,
                                 Compiler& compiler);

  // The cached result for `request` when there is one, else a build stored for next time. The
  // request's output_path is ignored: the library lives in the entry (entry_dir(key)/program.so).
  // Builds that are not reproducible (timeout, killed) are returned but not stored.
  Result<BuildResult> build(const BuildRequest& request);

  // The SHA-256 key of a request: a hash of every input that changes the output.
  Result<std::string> key_for(const BuildRequest& request);

  // The stored result under `key`, if a complete entry exists.
  std::optional<BuildResult> lookup(const std::string& key) const;

  std::filesystem::path entry_dir(const std::string& key) const;
  const std::filesystem::path& worker_dir() const { return worker_dir_; }

 private:
  BuildCache(std::filesystem::path root, std::filesystem::path worker_dir, Compiler& compiler)
      : root_(std::move(root)), worker_dir_(std::move(worker_dir)), compiler_(&compiler) {}

  Status remove_abandoned_builds();

  std::filesystem::path root_;
  std::filesystem::path worker_dir_;
  Compiler* compiler_;
  int builds_started_ = 0;
};

}  // namespace stitch
