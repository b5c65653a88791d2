// NvccCompiler, FakeCompiler and the JSON form of BuildResult and its ptxas kernel reports (stored
// beside cached builds and in attempt directories; verify.json keeps part of each kernel report).
#include "verify/build/compiler.h"

#include <array>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "util/enum_names.h"
#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/build/compiler_sandbox.h"
#include "verify/verdict_json.h"

#ifndef STITCH_INCLUDE_DIR
#define STITCH_INCLUDE_DIR ""
#endif

namespace stitch {

std::string_view output_kind_name(OutputKind kind) {
  static constexpr std::array<std::string_view, 2> kNames = {"shared_library", "executable"};
  static_assert(kNames.size() == static_cast<size_t>(OutputKind::executable) + 1);
  return enum_name(kNames, kind);
}

namespace {

bool is_executable_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += ' ';
    out += part;
  }
  return out;
}

constexpr std::tuple kPtxasKernelFields = {
    JsonField{"name", &PtxasKernelReport::name},
    JsonField{"mangled_name", &PtxasKernelReport::mangled_name},
    JsonField{"arch", &PtxasKernelReport::arch},
    JsonField{"registers", &PtxasKernelReport::registers},
    JsonField{"barriers", &PtxasKernelReport::barriers},
    JsonField{"spill_store_bytes", &PtxasKernelReport::spill_store_bytes},
    JsonField{"spill_load_bytes", &PtxasKernelReport::spill_load_bytes},
    JsonField{"stack_frame_bytes", &PtxasKernelReport::stack_frame_bytes},
    JsonField{"shared_bytes", &PtxasKernelReport::shared_bytes},
    JsonField{"constant_bytes", &PtxasKernelReport::constant_bytes},
    JsonField{"ptxas_ms", &PtxasKernelReport::ptxas_ms}};

// Every field but the lists is required: the build cache wrote the file whole, so a missing field
// means a damaged entry.
constexpr std::tuple kBuildResultFields = {JsonField{"ok", &BuildResult::ok},
                                           JsonField{"library_path", &BuildResult::library_path},
                                           JsonField{"log", &BuildResult::log},
                                           JsonField{"seconds", &BuildResult::seconds},
                                           JsonField{"cache_hit", &BuildResult::cache_hit},
                                           JsonField{"timed_out", &BuildResult::timed_out},
                                           JsonField{"reproducible", &BuildResult::reproducible},
                                           JsonField{"failure", &BuildResult::failure},
                                           JsonField{"command", &BuildResult::command}};

}  // namespace

nlohmann::json ptxas_kernel_to_json(const PtxasKernelReport& kernel) {
  return fields_to_json(kernel, kPtxasKernelFields);
}

Result<PtxasKernelReport> ptxas_kernel_from_json(const nlohmann::json& doc) {
  return record_from_json<PtxasKernelReport>(doc, kPtxasKernelFields);
}

nlohmann::json build_result_to_json(const BuildResult& result) {
  nlohmann::json doc = fields_to_json(result, kBuildResultFields);
  doc["diagnostics"] = json_array(result.diagnostics, diagnostic_to_json);
  doc["kernels"] = json_array(result.kernels, ptxas_kernel_to_json);
  doc["sandbox"] = sandbox::layers_to_json(result.sandbox_layers);
  doc["refused"] = result.refused;  // optional on reading: cache entries from before it existed
  return doc;
}

Result<BuildResult> build_result_from_json(const nlohmann::json& json) {
  BuildResult result;
  Status fields = read_fields(json, result, kBuildResultFields, FieldPresence::required);
  if (!fields.ok()) return fields.error().with_context("build result JSON");
  if (const auto refused = json.find("refused"); refused != json.end()) {
    if (!refused->is_boolean()) return make_error("build result JSON: 'refused' is not a boolean");
    result.refused = refused->get<bool>();
  }
  STITCH_ASSIGN_OR_RETURN(result.diagnostics,
                          read_array<Diagnostic>(json, "diagnostics", diagnostic_from_json));
  STITCH_ASSIGN_OR_RETURN(result.kernels,
                          read_array<PtxasKernelReport>(json, "kernels", ptxas_kernel_from_json));
  result.sandbox_layers = sandbox::layers_from_json(json.value("sandbox", nlohmann::json::array()));
  return result;
}

Result<std::filesystem::path> locate_nvcc() {
  if (const char* nvcc = std::getenv("NVCC"); nvcc && *nvcc) {
    if (is_executable_file(nvcc)) return std::filesystem::path(nvcc);
    return make_error("$NVCC={} is not an executable file", nvcc);
  }
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) {
    std::filesystem::path candidate = std::filesystem::path(home) / "bin" / "nvcc";
    if (is_executable_file(candidate)) return candidate;
  }
  if (is_executable_file("/usr/local/cuda/bin/nvcc"))
    return std::filesystem::path("/usr/local/cuda/bin/nvcc");
  std::string found = find_in_path("nvcc");
  if (!found.empty()) return std::filesystem::path(found);
  return make_error(
      "nvcc not found (looked at $NVCC, $CUDA_HOME/bin, /usr/local/cuda/bin and PATH)");
}

std::filesystem::path default_stitch_include_dir() {
  if (const char* home = std::getenv("STITCH_HOME"); home && *home)
    return std::filesystem::path(home) / "include";
  return STITCH_INCLUDE_DIR;
}

Result<std::vector<std::string>> nvcc_arch_flags(const std::string& arch) {
  static const std::regex pattern(R"(sm_(\d+)([af]?))");
  std::smatch m;
  if (!std::regex_match(arch, m, pattern))
    return make_error("target architecture '{}' is not of the form sm_90 / sm_90a", arch);
  if (m[2].length() == 0) return std::vector<std::string>{"-arch=" + arch};
  return std::vector<std::string>{
      "-gencode", fmt::format("arch=compute_{}{},code=sm_{}{}", m[1].str(), m[2].str(), m[1].str(),
                              m[2].str())};
}

Result<std::string> nvcc_version(ProcessRunner& runner, const std::filesystem::path& nvcc) {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = versions.find(nvcc.string()); it != versions.end()) return it->second;
  ProcessSpec spec;
  spec.argv = {nvcc.string(), "--version"};
  spec.timeout_s = 60;
  STITCH_ASSIGN_OR_RETURN(ProcessResult result, runner.run(spec));
  if (!result.succeeded())
    return make_error("{} --version: {}: {}", nvcc.string(), result.describe(), result.stderr_text);
  versions[nvcc.string()] = result.stdout_text;
  return result.stdout_text;
}

NvccCompiler::NvccCompiler(ProcessRunner& runner, NvccOptions options)
    : runner_(runner), options_(std::move(options)) {
  if (options_.stitch_include_dir.empty())
    options_.stitch_include_dir = default_stitch_include_dir();
}

const std::vector<std::string>& NvccCompiler::standard_flags() {
  // -cudart shared: the program uses the same libcudart as stitch-runner, so one runtime holds the
  // error state the runner checks and the streams it passes in (a static copy would hide both).
  static const std::vector<std::string> flags = {
      "-Xcompiler", "-fPIC",   "-O3", "-std=c++17",
      "-lineinfo",  "-Xptxas", "-v",  "--expt-relaxed-constexpr",
      "-cudart",    "shared"};
  return flags;
}

Result<std::filesystem::path> NvccCompiler::nvcc_path() {
  if (options_.nvcc.empty()) {
    STITCH_ASSIGN_OR_RETURN(options_.nvcc, locate_nvcc());
  }
  return options_.nvcc;
}

// The directory holding stitch/program.h, and the checkout root above it (kernels/*.cuh, included
// as "kernels/<family>.cuh" by generated programs).
std::vector<std::filesystem::path> NvccCompiler::include_dirs() const {
  return {options_.stitch_include_dir, options_.stitch_include_dir.parent_path()};
}

// Not the whole checkout root: only include/ and kernels/ hold headers programs may use unchecked.
std::vector<std::filesystem::path> NvccCompiler::project_header_dirs() const {
  return {options_.stitch_include_dir, options_.stitch_include_dir.parent_path() / "kernels"};
}

Result<std::string> NvccCompiler::identity() {
  STITCH_ASSIGN_OR_RETURN(auto nvcc, nvcc_path());
  STITCH_ASSIGN_OR_RETURN(std::string version, nvcc_version(runner_, nvcc));
  return version + "flags: " + join(standard_flags()) + "\n";
}

Result<std::vector<std::string>> NvccCompiler::command_for(const BuildRequest& request) {
  if (request.sources.empty()) return make_error("build request has no sources");
  if (request.output_path.empty()) return make_error("build request has no output path");
  STITCH_ASSIGN_OR_RETURN(auto nvcc, nvcc_path());
  STITCH_ASSIGN_OR_RETURN(auto arch_flags, nvcc_arch_flags(request.arch));
  std::vector<std::string> argv = {nvcc.string()};
  if (request.output_kind == OutputKind::shared_library) argv.push_back("-shared");
  argv.insert(argv.end(), standard_flags().begin(), standard_flags().end());
  argv.insert(argv.end(), arch_flags.begin(), arch_flags.end());
  for (const auto& dir : include_dirs())
    argv.push_back("-I" + dir.string());
  for (const auto& dir : request.include_dirs)
    argv.push_back("-I" + std::filesystem::absolute(dir).string());
  argv.insert(argv.end(), request.extra_flags.begin(), request.extra_flags.end());
  for (const auto& source : request.sources)
    argv.push_back(std::filesystem::absolute(source).string());
  argv.push_back("-o");
  argv.push_back(std::filesystem::absolute(request.output_path).string());
  for (const auto& library : request.libraries)
    argv.push_back("-l" + library);
  return argv;
}

Result<ProcessResult> NvccCompiler::run_compile(const BuildRequest& request, ProcessSpec spec,
                                                std::vector<sandbox::LayerReport>& layers) {
  if (!options_.sandbox) return runner_.run(spec);
  CompilerSandboxPaths paths{spec.cwd, project_header_dirs()};
  for (const auto& source : request.sources)
    paths.read_only.push_back(std::filesystem::absolute(source).parent_path());
  for (const auto& dir : request.include_dirs)
    paths.read_only.push_back(dir);
  // Folders the orchestrator's own flags name (-I, -L: a library the program links, e.g. torch's).
  for (size_t i = 0; i < request.extra_flags.size(); ++i) {
    const std::string& flag = request.extra_flags[i];
    if (flag.size() < 2 || flag[0] != '-' || (flag[1] != 'I' && flag[1] != 'L')) continue;
    std::string dir = flag.size() > 2                      ? flag.substr(2)
                      : i + 1 < request.extra_flags.size() ? request.extra_flags[++i]
                                                           : "";
    if (!dir.empty()) paths.read_only.push_back(std::filesystem::absolute(dir));
  }
  STITCH_ASSIGN_OR_RETURN(auto nvcc, nvcc_path());
  std::error_code ec;
  std::filesystem::path toolkit = std::filesystem::canonical(nvcc, ec).parent_path().parent_path();
  if (!ec) paths.read_only.push_back(toolkit);
  CompilerSandbox sandbox(compiler_isolation(paths), request.allow_incomplete_sandbox);
  STITCH_TRY(sandbox.install(spec));
  Result<ProcessResult> process = runner_.run(spec);
  layers = sandbox.layers();
  sandbox::LayerGaps gaps = sandbox::find_layer_gaps(layers, sandbox::kRequiredCompilerLayers, {});
  if (!process.ok() && !gaps.missing.empty())  // the child refused to exec nvcc: fail closed
    return make_error(ErrorKind::machine, "{}",
                      sandbox::incomplete_reason(gaps, layers, "compiler"));
  return process;
}

IncludeRoots build_include_roots(const Compiler& compiler,
                                 const std::vector<std::filesystem::path>& sources,
                                 const std::vector<std::filesystem::path>& include_dirs) {
  IncludeRoots roots;
  roots.search = compiler.include_dirs();
  roots.search.insert(roots.search.end(), include_dirs.begin(), include_dirs.end());
  for (const auto& source : sources)
    roots.program.push_back(std::filesystem::absolute(source).parent_path());
  roots.program.insert(roots.program.end(), include_dirs.begin(), include_dirs.end());
  roots.project = compiler.project_header_dirs();
  auto nvcc = locate_nvcc();
  roots.system = system_include_dirs(nvcc.ok() ? *nvcc : std::filesystem::path());
  return roots;
}

std::vector<std::filesystem::path> quotable_dirs(const Compiler& compiler,
                                                 const BuildRequest& request) {
  std::vector<std::filesystem::path> dirs = compiler.project_header_dirs();
  for (const auto& source : request.sources)
    dirs.push_back(std::filesystem::absolute(source).parent_path());
  for (const auto& dir : request.include_dirs)
    dirs.push_back(std::filesystem::absolute(dir));
  return dirs;
}

namespace {

// What a build refused by the include policy reports: where and why, never the named file's text.
BuildResult refused_build(const std::vector<std::string>& argv,
                          const std::vector<HackFinding>& findings) {
  BuildResult result;
  result.command = argv;
  result.refused = true;
  result.failure = "refused before compiling: " + findings.front().detail;
  for (const HackFinding& finding : findings) {
    result.diagnostics.push_back(Diagnostic{"", 0, "error", finding.detail, ""});
    result.log += finding.detail + "\n";
  }
  return result;
}

}  // namespace

Result<BuildResult> NvccCompiler::build(const BuildRequest& request) {
  STITCH_ASSIGN_OR_RETURN(auto argv, command_for(request));
  const std::vector<HackFinding> refusals = check_include_directives(
      request.sources, build_include_roots(*this, request.sources, request.include_dirs));
  if (!refusals.empty()) return refused_build(argv, refusals);
  std::filesystem::path output = std::filesystem::absolute(request.output_path);
  STITCH_TRY(make_dirs(output.parent_path()));
  std::error_code ec;
  std::filesystem::remove(output, ec);  // a stale file must not pass for this build's output

  ProcessSpec spec;
  spec.argv = argv;
  // nvcc's intermediate files go beside the output, so a killed build leaves nothing in /tmp and
  // BuildCache removes them with its build directory.
  spec.cwd = output.parent_path();
  spec.env["TMPDIR"] = output.parent_path().string();
  spec.timeout_s = request.timeout_s;
  std::vector<sandbox::LayerReport> layers;
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, run_compile(request, std::move(spec), layers));

  BuildResult result;
  result.sandbox_layers = std::move(layers);
  result.command = argv;
  result.seconds = process.wall_s;
  result.log = process.stdout_text;
  if (!result.log.empty() && result.log.back() != '\n' && !process.stderr_text.empty())
    result.log += '\n';
  result.log += process.stderr_text;
  const auto source_dir = std::filesystem::absolute(request.sources.front()).parent_path();
  const auto quotable = quotable_dirs(*this, request);
  result.diagnostics = parse_diagnostics(result.log, source_dir);
  withhold_foreign_text(result.diagnostics, source_dir, quotable);
  result.kernels = parse_ptxas_report(result.log);
  result.log = withhold_foreign_log_text(result.log, source_dir, quotable);
  result.timed_out = process.timed_out;
  result.reproducible = !process.timed_out && process.term_signal == 0;
  result.ok = process.succeeded() && std::filesystem::exists(output, ec);
  if (result.ok) {
    result.library_path = output;
  } else {
    result.failure =
        process.succeeded() ? "nvcc: succeeded but wrote no output" : "nvcc: " + process.describe();
    bool has_error = false;
    for (const Diagnostic& d : result.diagnostics)
      has_error = has_error || d.severity == "error";
    // Feedback must always say why a build failed, also when the log held nothing we recognise.
    if (!has_error) result.diagnostics.push_back(Diagnostic{"", 0, "error", result.failure, ""});
  }
  return result;
}

Result<BuildResult> FakeCompiler::build(const BuildRequest& request) {
  requests.push_back(request);
  if (script.cannot_start) return make_error("fake compiler: cannot start");
  if (request.output_path.empty()) return make_error("build request has no output path");
  BuildResult result;
  result.command = {"fake-nvcc", "-o", request.output_path.string()};
  result.log = script.log;
  std::filesystem::path source_dir =
      request.sources.empty() ? std::filesystem::path() : request.sources.front().parent_path();
  result.diagnostics = parse_diagnostics(script.log, source_dir);
  withhold_foreign_text(result.diagnostics, source_dir, quotable_dirs(*this, request));
  result.kernels = parse_ptxas_report(script.log);
  result.seconds = script.seconds;
  result.timed_out = script.timed_out;
  result.reproducible = !script.timed_out;
  STITCH_TRY(make_dirs(request.output_path.parent_path()));
  if (script.ok || script.during_build) {
    // Half the contents first, so a crash in during_build leaves a truncated output behind.
    std::ofstream out(request.output_path, std::ios::binary);
    out << script.library_contents.substr(0, script.library_contents.size() / 2);
    out.flush();
    if (script.during_build) script.during_build(request);
    out << script.library_contents.substr(script.library_contents.size() / 2);
  }
  result.ok = script.ok && !script.timed_out;
  if (result.ok) {
    result.library_path = request.output_path;
  } else {
    result.failure = script.timed_out ? "fake-nvcc: timed out" : "fake-nvcc: exit code 1";
  }
  return result;
}

}  // namespace stitch
