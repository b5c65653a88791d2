// What a program may make the compiler read (HACKS.md row 31, issue 15 item 5). A candidate that
// names a host file in a directive (`#include "/etc/passwd"`) gets that file's first lines quoted
// back in the compiler's diagnostics, which reach verify.json, feedback.json and the Coder's LLM.
// These checks run before nvcc and refuse, as `reads_answer` findings naming the directive and its
// line (never anything of the file it names):
//   - #include / #include_next / #import with an absolute path, or with a `..` path that leaves
//     the allowed folders from any directory the compiler searches;
//   - #include MACRO (the file it names cannot be known without preprocessing: refused outright);
//   - a header that resolves, inside the program's or the project's folders, to a file outside
//     the allowed folders (a symbolic link);
//   - __has_include / __has_include_next (a file-existence oracle) by the same path rules;
//   - #embed and __has_embed (C23 / C++26 file inclusion), #pragma GCC dependency and its
//     _Pragma form, assembler .incbin / .include (in asm strings, split strings or code tokens
//     a stringifying macro turns into one).
// Allowed folders: the program's own (the directories of its sources and the include directories
// given with it), the project's headers (include/, kernels/), the CUDA toolkit's include folders
// and the system's standard header folders. Quoted includes found inside the program's folders are
// followed and checked in turn; the project's and the system's headers are trusted.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "verify/verdict.h"

namespace stitch {

struct IncludeRoots {
  // The compiler's -I folders in the order it searches them (after a quoted include's own folder):
  // a file found there must lie inside the allowed folders below. They may be wider than those
  // (the checkout root, searched for "kernels/x.cuh", also holds run directories).
  std::vector<std::filesystem::path> search;
  std::vector<std::filesystem::path> program;  // the program's own folders
  std::vector<std::filesystem::path> project;  // include/, kernels/
  std::vector<std::filesystem::path> system;   // CUDA toolkit and standard header folders
};

// The toolkit's and the system's header folders on this machine: $CUDA_HOME/include, the include
// folders of /usr/local/cuda (targets/*/include too), /usr/include, /usr/local/include and
// /usr/lib/gcc; `nvcc` (when given) adds its own toolkit's include folders.
std::vector<std::filesystem::path> system_include_dirs(const std::filesystem::path& nvcc = {});

// Findings for the program files at `files` (directives are resolved against where they are).
// Quoted includes resolved inside roots.program are checked too. `display` names a file in
// findings (default: the path as given). Never fails: a file that cannot be read is skipped.
std::vector<HackFinding> check_include_directives(
    const std::vector<std::filesystem::path>& files, const IncludeRoots& roots,
    const std::function<std::string(const std::filesystem::path&)>& display = {});

// Whether `path` (made canonical, symbolic links resolved) lies inside one of `dirs` (canonical).
bool path_inside(const std::filesystem::path& path, const std::vector<std::filesystem::path>& dirs);

}  // namespace stitch
