// `stitchcuda serve ARGS...` runs `stitchcuda-serve ARGS...` (the binary beside this one) in this
// process (execv). The service lives in its own binary so that `stitchcuda` itself links neither
// cpp-httplib nor SQLite: machines that only run the rest (the GPU machine's carried build) need
// neither library.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/commands.h"
#include "util/fs.h"

namespace stitch::cli {

CommandAction setup_serve(CLI::App& app) {
  app.prefix_command();  // every argument, --help included, is stitchcuda-serve's
  app.set_help_flag();
  return [&app]() -> Result<CommandEnd> {
    const std::string binary = (executable_dir() / "stitchcuda-serve").string();
    std::vector<std::string> args = {binary};
    for (const std::string& arg : app.remaining())
      args.push_back(arg);
    std::vector<char*> argv;
    for (std::string& arg : args)
      argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    return make_error(ErrorKind::machine, "cannot run {}: {}", binary, std::strerror(errno));
  };
}

}  // namespace stitch::cli
