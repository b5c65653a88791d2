// --build-cache DIR / --no-build-cache, as `generate`, `verify` and `run` take them.
#pragma once

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

#include "verify/build/build_cache.h"

namespace stitch::cli {

struct BuildCacheOption {
  std::string dir;
  bool none = false;

  // The cache directory to use; empty: none.
  std::filesystem::path resolved() const {
    if (none) return {};
    return dir.empty() ? default_build_cache_dir() : std::filesystem::path(dir);
  }
  void add_to(CLI::App& app, const std::string& dir_help, const std::string& none_help) {
    app.add_option("--build-cache", dir, dir_help);
    app.add_flag("--no-build-cache", none, none_help);
  }
};

}  // namespace stitch::cli
