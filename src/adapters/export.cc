// export_best: stage best/ beside its final place, fill it, build main, swap it in.
#include "adapters/export.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "adapters/header_closure.h"
#include "adapters/manifest.h"
#include "adapters/templates.h"
#include "io/safetensors.h"
#include "ir/ir.h"
#include "util/fs.h"
#include "verify/build/compiler.h"

#ifndef STITCH_JSON_INCLUDE_DIRS
#define STITCH_JSON_INCLUDE_DIRS ""
#endif

namespace stitch::adapters {

namespace {

namespace fs = std::filesystem;

// Files export_best writes itself: no program source may take these names.
const std::set<std::string> kReservedNames = {"program.so",
                                              "graph.json",
                                              "manifest.json",
                                              "README.md",
                                              "main.cc",
                                              "main",
                                              "stitch_extension.cpp",
                                              "model_new.py",
                                              "task_source.py",
                                              "constants.safetensors"};

// Removes the staging folder unless the export got as far as swapping it in.
class StagingDir {
 public:
  static Result<StagingDir> create(const fs::path& out_dir) {
    STITCH_TRY(make_dirs(out_dir.parent_path()));
    std::string pattern =
        (out_dir.parent_path() / ("." + out_dir.filename().string() + ".staging-XXXXXX")).string();
    if (!mkdtemp(pattern.data()))
      return make_error("{}: cannot create a staging folder", out_dir.parent_path().string());
    return StagingDir(pattern);
  }
  StagingDir(StagingDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  StagingDir(const StagingDir&) = delete;
  ~StagingDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  void release() { path_.clear(); }

 private:
  explicit StagingDir(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

Status copy_into(const fs::path& from, const fs::path& to) {
  STITCH_TRY(make_dirs(to.parent_path()));
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return make_error("copying {} to {}: {}", from.string(), to.string(), ec.message());
  return {};
}

Status write_text(const fs::path& path, std::string_view text) {
  return write_file_atomic(path, text);
}

Result<std::string_view> template_text(std::string_view name) {
  std::optional<std::string_view> text = embedded_file(name);
  if (!text) return make_error("adapter template '{}' is not embedded in this build", name);
  return *text;
}

// Replaces every "@KEY@" of `values` in `text`; an error if one does not occur (template drift).
Result<std::string> fill(std::string text, std::string_view template_name,
                         const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values) {
    const std::string token = "@" + key + "@";
    size_t at = text.find(token);
    if (at == std::string::npos)
      return make_error("adapter template '{}' has no {} to fill in", template_name, token);
    for (; at != std::string::npos; at = text.find(token, at + value.size()))
      text.replace(at, token.size(), value);
  }
  return text;
}

// Program sources' names in best/: the first is program.cu, the others keep their file names.
Result<std::vector<std::string>> source_names(const std::vector<fs::path>& sources) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (size_t i = 0; i < sources.size(); ++i) {
    std::string name = i == 0 ? "program.cu" : sources[i].filename().string();
    if (kReservedNames.count(name) || !taken.insert(name).second)
      return make_error("program source {} would be best/{}, which is taken", sources[i].string(),
                        name);
    names.push_back(std::move(name));
  }
  return names;
}

// The specialized (baked-in) forward arguments capture.json lists, or [] when there is none.
nlohmann::json specialized_inputs(const fs::path& capture_dir) {
  auto text = read_file(capture_dir / "capture.json");
  if (!text) return nlohmann::json::array();
  nlohmann::json capture = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!capture.is_object() || !capture.contains("specialized_inputs") ||
      !capture["specialized_inputs"].is_array())
    return nlohmann::json::array();
  return capture["specialized_inputs"];
}

// Lifted tensor constants (ParamKind::constant) have no home in the module ModelNew rebuilds:
// their values travel in constants.safetensors. Returns whether the file was written.
Result<bool> write_constants(const ir::Graph& graph, const fs::path& weights, const fs::path& to) {
  std::vector<std::string> names;
  for (const ir::Param& param : graph.params)
    if (param.kind == ir::ParamKind::constant) names.push_back(param.name);
  if (names.empty()) return false;
  STITCH_ASSIGN_OR_RETURN(io::SafetensorsFile file, io::SafetensorsFile::open(weights.string()));
  std::vector<io::TensorView> views;
  for (const std::string& name : names) {
    const io::TensorInfo* info = file.header().find(name);
    if (!info) return make_error("{}: no tensor for constant '{}'", weights.string(), name);
    views.push_back({name, info->dtype, info->shape, file.tensor_bytes(*info)});
  }
  STITCH_TRY(io::write_safetensors(to.string(), views));
  return true;
}

// nlohmann/ for main.cc, so best/ builds main without a JSON package installed.
Status copy_json_headers(const fs::path& requested, const fs::path& include_dir) {
  std::vector<fs::path> candidates;
  if (!requested.empty()) {
    candidates.push_back(requested);
  } else {
    std::string dirs = STITCH_JSON_INCLUDE_DIRS;
    for (size_t begin = 0; begin <= dirs.size();) {
      size_t end = std::min(dirs.find(':', begin), dirs.size());
      if (end > begin) candidates.emplace_back(dirs.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (!fs::is_regular_file(dir / "nlohmann" / "json.hpp", ec)) continue;
    for (auto it = fs::recursive_directory_iterator(dir / "nlohmann", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      STITCH_TRY(copy_into(it->path(), include_dir / fs::relative(it->path(), dir)));
    }
    if (ec) return make_error("{}: {}", (dir / "nlohmann").string(), ec.message());
    return {};
  }
  // Not fatal: main.cc then needs nlohmann/json.hpp from the system, as README says.
  return {};
}

std::string signature_text(const nlohmann::json& manifest) {
  auto shape_text = [](const nlohmann::json& entry) {
    std::vector<int64_t> shape = entry["shape"].get<std::vector<int64_t>>();
    return fmt::format("[{}] {}", fmt::join(shape, ", "), entry["dtype"].get<std::string>());
  };
  std::string text;
  for (const char* key : {"inputs", "outputs"}) {
    for (const auto& entry : manifest[key]) {
      std::string kind = entry.contains("kind") && entry["kind"] != "user"
                             ? fmt::format(" ({} input)", entry["kind"].get<std::string>())
                             : "";
      text += fmt::format("- {} `{}`: {}{}\n", key == std::string("inputs") ? "input" : "output",
                          entry["name"].get<std::string>(), shape_text(entry), kind);
    }
  }
  text += fmt::format("- {} params (`stitch_init` order = `manifest.json` \"params\")",
                      manifest["params"].size());
  return text;
}

// How README's example reaches a capture file from best/ (relative when best/ is inside the run
// directory, as the loop places it); the bare file name when the capture has none.
std::string capture_file_arg(const fs::path& capture_dir, const std::string& name,
                             const fs::path& out_dir) {
  std::error_code ec;
  const fs::path file = fs::absolute(capture_dir / name, ec);
  if (ec || !fs::is_regular_file(file, ec)) return fs::path(name).filename().string();
  fs::path relative = file.lexically_relative(out_dir);
  return shell_join({relative.empty() ? file.string() : relative.string()});
}

// How to get the inputs `main` reads when the capture holds none (a run's capture has no
// reference/ unless a CPU reference was computed): draw them from the exported task.
std::string inputs_note(const fs::path& capture_dir) {
  std::error_code ec;
  if (fs::is_regular_file(capture_dir / "reference" / "inputs.safetensors", ec)) return "";
  return "\nThis run holds no `reference/inputs.safetensors`; draw inputs from the task first (from "
         "this folder, which has `task_source.py`; needs the `safetensors` package):\n\n```sh\n"
         "python -c \"import torch, task_source as t, safetensors.torch as s; "
         "xs = [x for x in t.get_inputs() if isinstance(x, torch.Tensor)]; "
         "s.save_file({f'input{i}': x.contiguous() for i, x in enumerate(xs)}, "
         "'inputs.safetensors')\"\n```\n";
}

struct MainBuild {
  bool built = false;
  std::string log;
};

MainBuild build_main(const ExportRequest& request, const fs::path& dir, ProcessRunner& runner) {
  fs::path nvcc = request.nvcc;
  if (nvcc.empty()) {
    auto located = locate_nvcc();
    if (!located) return {false, "not built: " + located.error().message};
    nvcc = *located;
  }
  ProcessSpec spec;
  spec.argv = main_build_command(nvcc.string());
  spec.cwd = dir;
  spec.timeout_s = request.main_timeout_s;
  auto result = runner.run(spec);
  if (!result) return {false, "not built: " + result.error().message};
  std::string log = result->stdout_text + result->stderr_text;
  std::error_code ec;
  bool built = result->succeeded() && fs::is_regular_file(dir / "main", ec);
  if (!built) log += fmt::format("\nnvcc: {}\n", result->describe());
  return {built, log};
}

// Puts `staging` at `out_dir`, replacing what is there.
Status swap_in(StagingDir& staging, const fs::path& out_dir) {
  std::error_code ec;
  fs::path old;
  if (fs::exists(out_dir, ec)) {
    std::string pattern =
        (out_dir.parent_path() / ("." + out_dir.filename().string() + ".old-XXXXXX")).string();
    if (!mkdtemp(pattern.data()))
      return make_error("{}: cannot make room for the new export", out_dir.string());
    old = pattern;
    fs::rename(out_dir, old, ec);  // onto the empty folder mkdtemp made
    if (ec) return make_error("moving the previous {} aside: {}", out_dir.string(), ec.message());
  }
  fs::rename(staging.path(), out_dir, ec);
  if (ec) {
    std::error_code restore;
    if (!old.empty()) fs::rename(old, out_dir, restore);
    return make_error("moving the export to {}: {}", out_dir.string(), ec.message());
  }
  staging.release();
  if (!old.empty()) fs::remove_all(old, ec);
  return {};
}

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file()) files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

Status check_request(const ExportRequest& request) {
  std::error_code ec;
  for (const char* name : {"graph.json", "weights.safetensors", "task.py"})
    if (!fs::is_regular_file(request.capture_dir / name, ec))
      return make_error("capture {} has no {}", request.capture_dir.string(), name);
  if (request.sources.empty()) return make_error("no program sources to export");
  if (!fs::is_regular_file(request.library, ec))
    return make_error("program library {} does not exist", request.library.string());
  if (request.out_dir.empty() || !request.out_dir.has_filename())
    return make_error("export folder '{}' is not a folder name", request.out_dir.string());
  return {};
}

// Copies the program (its sources, their local headers, program.so) and the capture's graph and
// task into the staging folder `dir`; notes the sources' and headers' names in `facts`.
Status copy_program(const ExportRequest& request, const std::vector<std::string>& names,
                    const std::vector<LocalHeader>& headers, const fs::path& dir,
                    ManifestFacts& facts) {
  const fs::path include_dir = dir / "include";
  for (size_t i = 0; i < request.sources.size(); ++i)
    STITCH_TRY(copy_into(request.sources[i], dir / names[i]));
  facts.sources = names;
  bool has_program_h = false;
  for (const LocalHeader& header : headers) {
    STITCH_TRY(copy_into(header.file, include_dir / header.relative));
    facts.headers.push_back(header.relative.generic_string());
    has_program_h = has_program_h || header.relative == fs::path("stitch/program.h");
  }
  if (!has_program_h) {  // the adapters include it even when the sources name it differently
    STITCH_ASSIGN_OR_RETURN(std::string_view program_h, template_text("stitch/program.h"));
    STITCH_TRY(write_text(include_dir / "stitch" / "program.h", program_h));
  }
  STITCH_TRY(copy_json_headers(request.json_include_dir, include_dir));
  STITCH_TRY(copy_into(request.library, dir / "program.so"));
  STITCH_TRY(copy_into(request.capture_dir / "graph.json", dir / "graph.json"));
  STITCH_TRY(copy_into(request.capture_dir / "task.py", dir / "task_source.py"));
  return {};
}

// The PyTorch extension, the standalone main and ModelNew (which falls back to `out_dir`).
Status write_adapters(const fs::path& dir, const fs::path& out_dir) {
  STITCH_ASSIGN_OR_RETURN(std::string_view extension, template_text("stitch_extension.cpp"));
  STITCH_TRY(write_text(dir / "stitch_extension.cpp", extension));
  STITCH_ASSIGN_OR_RETURN(std::string_view main_source, template_text("main.cc"));
  STITCH_TRY(write_text(dir / "main.cc", main_source));
  STITCH_ASSIGN_OR_RETURN(std::string_view model_new_template, template_text("model_new.py"));
  // The placeholder sits inside a Python string literal; a JSON string's escapes are valid there.
  const std::string quoted_dir = nlohmann::json(out_dir.string()).dump();
  STITCH_ASSIGN_OR_RETURN(
      std::string model_new,
      fill(std::string(model_new_template), "model_new.py",
           {{"STITCH_EXPORT_DIR", quoted_dir.substr(1, quoted_dir.size() - 2)}}));
  return write_text(dir / "model_new.py", model_new);
}

// How best/ is rebuilt and where it came from, for the manifest.
Status describe_build(const ExportRequest& request, const std::vector<std::string>& names,
                      const fs::path& out_dir, ManifestFacts& facts) {
  facts.libraries = request.libraries;
  if (request.build_command.empty()) {
    STITCH_ASSIGN_OR_RETURN(facts.build_command,
                            default_build_command(request.arch, names, request.libraries));
  } else {
    facts.build_command = relocate_build_command(request.build_command, request.sources, names);
  }
  facts.main_command = main_build_command("nvcc");
  facts.specialized_inputs = specialized_inputs(request.capture_dir);
  facts.export_dir = out_dir;
  facts.provenance = request.provenance.is_null() ? nlohmann::json::object() : request.provenance;
  return {};
}

// README.md, filled in from the manifest and the facts behind it.
Status write_readme(const ExportRequest& request, const ir::Graph& graph,
                    const nlohmann::json& manifest, const ManifestFacts& facts,
                    const fs::path& out_dir, const fs::path& dir) {
  STITCH_ASSIGN_OR_RETURN(std::string_view readme_template, template_text("README.md"));
  STITCH_ASSIGN_OR_RETURN(
      std::string readme,
      fill(std::string(readme_template), "README.md",
           {{"TASK_NAME", graph.task.name.empty() ? "program" : graph.task.name},
            {"SIGNATURE", signature_text(manifest)},
            {"MODE", graph.training ? "training" : "inference (eval)"},
            {"EXPORT_DIR", "`" + out_dir.string() + "`"},
            {"MAIN_BUILD_COMMAND", shell_join(facts.main_command)},
            {"MAIN_STATUS", facts.main_built
                                ? "`main` was built when this folder was exported."
                                : "`main` was not built when this folder was exported (see "
                                  "manifest.json \"main\"); build it with the first line."},
            {"LIBRARIES", facts.libraries.empty()
                              ? std::string("CUDA runtime only")
                              : fmt::format("{}", fmt::join(facts.libraries, ", "))},
            {"BUILD_COMMAND", shell_join(facts.build_command)},
            {"WEIGHTS", capture_file_arg(request.capture_dir, "weights.safetensors", out_dir)},
            {"INPUTS",
             capture_file_arg(request.capture_dir, "reference/inputs.safetensors", out_dir)},
            {"INPUTS_NOTE", inputs_note(request.capture_dir)}}));
  return write_text(dir / "README.md", readme);
}

}  // namespace

Result<ExportReport> export_best(const ExportRequest& request, ProcessRunner& runner) {
  STITCH_TRY(check_request(request));
  const fs::path out_dir = fs::absolute(request.out_dir).lexically_normal();
  STITCH_ASSIGN_OR_RETURN(ir::Graph graph,
                          ir::load_graph((request.capture_dir / "graph.json").string()));
  STITCH_ASSIGN_OR_RETURN(std::vector<std::string> names, source_names(request.sources));
  STITCH_ASSIGN_OR_RETURN(std::vector<LocalHeader> headers,
                          local_header_closure(request.sources, request.include_dirs));

  STITCH_ASSIGN_OR_RETURN(StagingDir staging, StagingDir::create(out_dir));
  const fs::path dir = staging.path();
  ManifestFacts facts;
  STITCH_TRY(copy_program(request, names, headers, dir, facts));
  STITCH_ASSIGN_OR_RETURN(facts.has_constants_file,
                          write_constants(graph, request.capture_dir / "weights.safetensors",
                                          dir / "constants.safetensors"));
  STITCH_TRY(write_adapters(dir, out_dir));
  STITCH_TRY(describe_build(request, names, out_dir, facts));

  ExportReport report;
  if (request.build_main) {
    MainBuild main = build_main(request, dir, runner);
    report.main_built = main.built;
    report.main_build_log = std::move(main.log);
  } else {
    report.main_build_log = "not built: build_main was off";
  }
  facts.main_built = report.main_built;

  const nlohmann::json manifest = make_manifest(graph, facts);
  STITCH_TRY(write_text(dir / "manifest.json", manifest.dump(2) + "\n"));
  STITCH_TRY(write_readme(request, graph, manifest, facts, out_dir, dir));
  STITCH_TRY(swap_in(staging, out_dir));
  report.files = files_under(out_dir);
  return report;
}

}  // namespace stitch::adapters
