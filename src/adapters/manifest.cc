// make_manifest and the build commands best/ records.
#include "adapters/manifest.h"

#include <algorithm>
#include <cctype>

#include "verify/build/compiler.h"

namespace stitch::adapters {

namespace {

namespace fs = std::filesystem;

nlohmann::json tensor_fields(const ir::TensorType& type) {
  return {{"shape", type.shape}, {"dtype", std::string(ir::dtype_name(type.dtype))}};
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec_a, ec_b;
  fs::path ca = fs::weakly_canonical(a, ec_a), cb = fs::weakly_canonical(b, ec_b);
  return !ec_a && !ec_b && ca == cb;
}

}  // namespace

nlohmann::json make_manifest(const ir::Graph& graph, const ManifestFacts& facts) {
  nlohmann::json params = nlohmann::json::array();
  for (const ir::Param& param : graph.params) {
    nlohmann::json entry = {{"name", param.name}, {"kind", ir::param_kind_name(param.kind)}};
    entry.update(tensor_fields(param.type));
    params.push_back(std::move(entry));
  }
  nlohmann::json inputs = nlohmann::json::array();
  for (const ir::Input& input : graph.inputs) {
    nlohmann::json entry = {{"name", input.name},
                            {"kind", ir::input_kind_name(input.kind)},
                            {"distribution", input.distribution}};
    entry.update(tensor_fields(input.type));
    inputs.push_back(std::move(entry));
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    nlohmann::json entry = {{"name", "output" + std::to_string(i)}};
    entry.update(tensor_fields(graph.type_of(graph.outputs[i])));
    // A state output: the value of this buffer after the call (docs/verify-protocol.md).
    if (i >= graph.user_output_count())
      entry["state"] = graph.state_params[i - graph.user_output_count()];
    outputs.push_back(std::move(entry));
  }
  return {
      {"format", "stitchcuda.best"},
      {"version", 1},
      {"abi_version", 1},
      {"task",
       {{"name", graph.task.name}, {"file", graph.task.file}, {"sha256", graph.task.sha256}}},
      {"training", graph.training},
      {"program", "program.so"},
      {"sources", facts.sources},
      {"headers", facts.headers},
      {"params", params},
      {"inputs", inputs},
      {"outputs", outputs},
      {"specialized_inputs", facts.specialized_inputs},
      {"constants_file",
       facts.has_constants_file ? nlohmann::json("constants.safetensors") : nlohmann::json()},
      {"libraries", facts.libraries},
      {"build",
       {{"cwd", "."},
        {"command", facts.build_command},
        {"command_line", shell_join(facts.build_command)}}},
      {"main",
       {{"source", "main.cc"},
        {"command", facts.main_command},
        {"command_line", shell_join(facts.main_command)},
        {"built", facts.main_built}}},
      {"export_dir", facts.export_dir.string()},
      {"provenance", facts.provenance},
  };
}

std::vector<std::string> relocate_build_command(const std::vector<std::string>& original,
                                                const std::vector<fs::path>& sources,
                                                const std::vector<std::string>& best_names) {
  std::vector<std::string> argv;
  bool include_placed = false;
  auto place_include = [&] {
    if (!include_placed) argv.push_back("-Iinclude");
    include_placed = true;
  };
  for (size_t i = 0; i < original.size(); ++i) {
    const std::string& arg = original[i];
    if (i == 0) {
      argv.push_back("nvcc");
      continue;
    }
    if (arg == "-I" || arg == "--include-path") {
      ++i;  // its directory follows
      place_include();
      continue;
    }
    if (arg.rfind("-I", 0) == 0) {
      place_include();
      continue;
    }
    if (arg == "-o" && i + 1 < original.size()) {
      argv.push_back("-o");
      argv.push_back("program.so");
      ++i;
      continue;
    }
    bool replaced = false;
    for (size_t s = 0; s < sources.size() && !replaced; ++s) {
      if (!arg.empty() && arg[0] != '-' && same_file(arg, sources[s])) {
        place_include();  // headers must be findable even when the original had no -I
        argv.push_back(best_names[s]);
        replaced = true;
      }
    }
    if (!replaced) argv.push_back(arg);
  }
  if (argv.empty()) argv.push_back("nvcc");
  return argv;
}

Result<std::vector<std::string>> default_build_command(const std::string& arch,
                                                       const std::vector<std::string>& best_names,
                                                       const std::vector<std::string>& libraries) {
  STITCH_ASSIGN_OR_RETURN(auto arch_flags, nvcc_arch_flags(arch));
  std::vector<std::string> argv = {"nvcc", "-shared"};
  const auto& standard = NvccCompiler::standard_flags();
  argv.insert(argv.end(), standard.begin(), standard.end());
  argv.insert(argv.end(), arch_flags.begin(), arch_flags.end());
  argv.push_back("-Iinclude");
  argv.insert(argv.end(), best_names.begin(), best_names.end());
  argv.push_back("-o");
  argv.push_back("program.so");
  for (const std::string& library : libraries)
    argv.push_back("-l" + library);
  return argv;
}

std::vector<std::string> main_build_command(const std::string& nvcc) {
  return {nvcc, "-std=c++17", "-O2", "-Iinclude", "main.cc", "-o", "main", "-ldl"};
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& arg : argv) {
    if (!line.empty()) line += ' ';
    bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("_-./=,:+@%").find(c) != std::string_view::npos;
    });
    if (plain) {
      line += arg;
      continue;
    }
    line += '\'';
    for (char c : arg)
      line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

}  // namespace stitch::adapters
