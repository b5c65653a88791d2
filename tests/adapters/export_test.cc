// export_best on a fake capture: the files of best/ (headers copied transitively, templates
// verbatim, values filled in), manifest.json, the build commands, main's build through the
// ProcessRunner (a failure is data), re-export, errors; then main.cc for real: built with nvcc
// (skips without nvcc) and, in host-memory mode, run against the fake program with its outputs
// checked number by number.
#include "adapters/export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <span>

#include "adapters/manifest.h"
#include "adapters/templates.h"
#include "fake_capture.h"
#include "io/safetensors.h"
#include "ir/ir.h"
#include "util/fs.h"
#include "verify/build/compiler.h"

namespace stitch::adapters {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Answers every run with `next` and records the specs (nothing is executed).
class ScriptedRunner final : public ProcessRunner {
 public:
  ProcessResult next;
  std::vector<ProcessSpec> specs;
  Result<ProcessResult> run(const ProcessSpec& spec) override {
    specs.push_back(spec);
    return next;
  }
};

nlohmann::json read_json(const fs::path& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

std::string read_text(const fs::path& path) {
  auto text = read_file(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : "";
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::write_fake_capture(capture()).ok());
    auto source = testing::write_program_tree(temp_.path());
    ASSERT_TRUE(source.ok()) << source.error().message;
    source_ = *source;
    // The library's bytes do not matter until something loads it.
    ASSERT_TRUE(write_file_atomic(temp_.path() / "lib" / "program.so", "not really ELF").ok());
  }

  fs::path capture() const { return temp_.path() / "run"; }
  fs::path best() const { return temp_.path() / "run" / "best"; }

  ExportRequest request() const {
    ExportRequest r;
    r.capture_dir = capture();
    r.sources = {source_};
    r.include_dirs = testing::repo_include_dirs();
    r.library = temp_.path() / "lib" / "program.so";
    r.libraries = {"cublasLt"};
    r.out_dir = best();
    r.provenance = {{"attempt", 3}, {"verify", {{"outcome", "passed"}, {"median_ms", 0.25}}}};
    r.build_main = false;
    return r;
  }

  TempDir temp_;
  fs::path source_;
};

TEST_F(ExportTest, WritesASelfContainedFolder) {
  ScriptedRunner runner;
  auto report = export_best(request(), runner);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(runner.specs.empty());  // build_main off: nothing runs
  EXPECT_FALSE(report->main_built);

  for (const char* name :
       {"program.cu", "program.so", "graph.json", "manifest.json", "README.md", "task_source.py",
        "stitch_extension.cpp", "model_new.py", "main.cc", "include/stitch/program.h",
        "include/kernels/program_support.cuh", "include/kernels/runtime.cuh", "include/helpers.cuh",
        "include/detail/more.cuh", "include/nlohmann/json.hpp"}) {
    EXPECT_TRUE(fs::is_regular_file(best() / name)) << name;
    EXPECT_NE(std::find(report->files.begin(), report->files.end(), best() / name),
              report->files.end())
        << name << " missing from the report";
  }
  EXPECT_FALSE(fs::exists(best() / "constants.safetensors"));  // no lifted constants here
  EXPECT_TRUE(std::is_sorted(report->files.begin(), report->files.end()));
  EXPECT_EQ(read_text(best() / "program.cu"), read_text(source_));
  EXPECT_EQ(read_text(best() / "include/kernels/runtime.cuh"),
            read_text(testing::kSourceDir / "kernels/runtime.cuh"));
  EXPECT_EQ(read_text(best() / "task_source.py"), read_text(testing::kData / "fake_task.py"));
  EXPECT_EQ(read_text(best() / "graph.json"), read_text(capture() / "graph.json"));

  // Templates arrive verbatim (the embedded copies are the files under src/adapters/templates/).
  const fs::path templates = testing::kSourceDir / "src/adapters/templates";
  EXPECT_EQ(read_text(best() / "main.cc"), read_text(templates / "main.cc"));
  EXPECT_EQ(read_text(best() / "stitch_extension.cpp"),
            read_text(templates / "stitch_extension.cpp"));
  // model_new.py differs from its template only in the export path filled in.
  std::string model_new = read_text(best() / "model_new.py");
  EXPECT_EQ(model_new.find("@STITCH_EXPORT_DIR@"), std::string::npos);
  EXPECT_NE(model_new.find("_EXPORT_DIR = \"" + best().string() + "\""), std::string::npos);
  std::string readme = read_text(best() / "README.md");
  EXPECT_EQ(readme.find("@"), std::string::npos) << "an unfilled placeholder in README.md";
  EXPECT_NE(readme.find("fake_task"), std::string::npos);
  EXPECT_NE(readme.find("input `x`: [4, 8] float32"), std::string::npos) << readme;
  EXPECT_NE(readme.find("nvcc -std=c++17 -O2 -Iinclude main.cc -o main -ldl"), std::string::npos);
  // The example reaches the capture's weights from best/ (the fake capture has no reference/).
  EXPECT_NE(readme.find("./main --params ../weights.safetensors --inputs inputs.safetensors"),
            std::string::npos);
  // Issue 13: without reference/inputs.safetensors the README says how to make inputs.safetensors.
  EXPECT_NE(readme.find("This run holds no `reference/inputs.safetensors`"), std::string::npos);
  EXPECT_NE(readme.find("s.save_file({f'input{i}'"), std::string::npos) << readme;
  // No staging folder is left beside best/.
  for (const auto& entry : fs::directory_iterator(capture()))
    EXPECT_EQ(entry.path().filename().string().find(".best."), std::string::npos) << entry.path();
}

TEST_F(ExportTest, ManifestDescribesTheProgram) {
  ScriptedRunner runner;
  auto report = export_best(request(), runner);
  ASSERT_TRUE(report.ok()) << report.error().message;
  nlohmann::json m = read_json(best() / "manifest.json");
  EXPECT_EQ(m["format"], "stitchcuda.best");
  EXPECT_EQ(m["abi_version"], 1);
  EXPECT_EQ(m["task"]["name"], "fake_task");
  EXPECT_EQ(m["training"], true);
  EXPECT_EQ(m["program"], "program.so");
  EXPECT_EQ(m["sources"], nlohmann::json({"program.cu"}));
  // Graph order, which is not state_dict order (scale is registered before inner).
  ASSERT_EQ(m["params"].size(), 4u);
  const char* names[] = {"bias", "inner.weight", "inner.bias", "scale"};
  const char* kinds[] = {"parameter", "parameter", "parameter", "buffer"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(m["params"][i]["name"], names[i]);
    EXPECT_EQ(m["params"][i]["kind"], kinds[i]);
    EXPECT_EQ(m["params"][i]["dtype"], "float32");
  }
  EXPECT_EQ(m["params"][1]["shape"], nlohmann::json({3, 8}));
  ASSERT_EQ(m["inputs"].size(), 1u);
  EXPECT_EQ(m["inputs"][0], nlohmann::json({{"name", "x"},
                                            {"kind", "user"},
                                            {"distribution", "randn"},
                                            {"shape", {4, 8}},
                                            {"dtype", "float32"}}));
  ASSERT_EQ(m["outputs"].size(), 2u);
  EXPECT_EQ(m["outputs"][0],
            nlohmann::json({{"name", "output0"}, {"shape", {4, 8}}, {"dtype", "float32"}}));
  EXPECT_EQ(m["outputs"][1]["shape"], nlohmann::json({3, 8}));
  EXPECT_EQ(m["specialized_inputs"], nlohmann::json::array());
  EXPECT_TRUE(m["constants_file"].is_null());
  EXPECT_EQ(m["libraries"], nlohmann::json({"cublasLt"}));
  auto headers = m["headers"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(headers.begin(), headers.end(), "kernels/runtime.cuh"), headers.end());
  EXPECT_EQ(m["export_dir"], best().string());
  EXPECT_EQ(m["provenance"]["attempt"], 3);
  EXPECT_EQ(m["provenance"]["verify"]["outcome"], "passed");
  EXPECT_EQ(m["main"]["built"], false);
  EXPECT_EQ(m["main"]["command_line"], "nvcc -std=c++17 -O2 -Iinclude main.cc -o main -ldl");
  // No build command given: NvccCompiler's, relative to best/.
  std::vector<std::string> build = m["build"]["command"].get<std::vector<std::string>>();
  ASSERT_FALSE(build.empty());
  EXPECT_EQ(build.front(), "nvcc");
  for (const char* want : {"-shared", "-arch=sm_90", "-Iinclude", "program.cu", "-lcublasLt"})
    EXPECT_NE(std::find(build.begin(), build.end(), want), build.end()) << want;
  auto o = std::find(build.begin(), build.end(), "-o");
  ASSERT_NE(o, build.end());
  EXPECT_EQ(*(o + 1), "program.so");
  for (const std::string& arg : build)
    EXPECT_NE(arg.front(), '/') << arg;
}

TEST(RelocateBuildCommand, MakesTheLoopsCommandRunInBest) {
  const std::vector<std::string> original = {"/usr/local/cuda/bin/nvcc",
                                             "-shared",
                                             "-Xcompiler",
                                             "-fPIC",
                                             "-O3",
                                             "-gencode",
                                             "arch=compute_90a,code=sm_90a",
                                             "-I/work/main/include",
                                             "-I/work/main",
                                             "-I/runs/t/attempts/03",
                                             "-DTILE=64",
                                             "/runs/t/attempts/03/program.cu",
                                             "/runs/t/attempts/03/extra.cu",
                                             "-o",
                                             "/cache/ab/program.so",
                                             "-lcublasLt"};
  auto argv = relocate_build_command(
      original, {"/runs/t/attempts/03/program.cu", "/runs/t/attempts/03/extra.cu"},
      {"program.cu", "extra.cu"});
  EXPECT_EQ(argv,
            (std::vector<std::string>{"nvcc", "-shared", "-Xcompiler", "-fPIC", "-O3", "-gencode",
                                      "arch=compute_90a,code=sm_90a", "-Iinclude", "-DTILE=64",
                                      "program.cu", "extra.cu", "-o", "program.so", "-lcublasLt"}));
  EXPECT_EQ(shell_join({"nvcc", "-DX=a b", "it's"}), "nvcc '-DX=a b' 'it'\\''s'");
}

TEST_F(ExportTest, GivenBuildCommandIsRelocated) {
  ExportRequest r = request();
  r.build_command = {"/opt/cuda/bin/nvcc",  "-shared",   "-I/somewhere", source_.string(), "-o",
                     "/cache/x/program.so", "-lcublasLt"};
  ScriptedRunner runner;
  ASSERT_TRUE(export_best(r, runner).ok());
  nlohmann::json m = read_json(best() / "manifest.json");
  EXPECT_EQ(m["build"]["command_line"],
            "nvcc -shared -Iinclude program.cu -o program.so -lcublasLt");
}

TEST_F(ExportTest, MainBuildRunsThroughTheRunnerAndAFailureIsData) {
  ExportRequest r = request();
  r.build_main = true;
  r.nvcc = "/opt/fake/nvcc";
  ScriptedRunner runner;
  runner.next.exit_code = 1;
  runner.next.stderr_text = "main.cc(3): error: something broke\n";
  auto report = export_best(r, runner);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_FALSE(report->main_built);
  EXPECT_NE(report->main_build_log.find("something broke"), std::string::npos);
  EXPECT_NE(report->main_build_log.find("exit code 1"), std::string::npos);
  ASSERT_EQ(runner.specs.size(), 1u);
  EXPECT_EQ(runner.specs[0].argv,
            (std::vector<std::string>{"/opt/fake/nvcc", "-std=c++17", "-O2", "-Iinclude", "main.cc",
                                      "-o", "main", "-ldl"}));
  // Built in the staging folder, next to best/, before the swap.
  EXPECT_EQ(runner.specs[0].cwd.parent_path(), best().parent_path());
  EXPECT_GT(runner.specs[0].timeout_s, 0);
  EXPECT_EQ(read_json(best() / "manifest.json")["main"]["built"], false);
  EXPECT_NE(read_text(best() / "README.md").find("was not built"), std::string::npos);

  // A runner that reports success but leaves no binary is no success either.
  runner.next = ProcessResult{};
  runner.next.exit_code = 0;
  report = export_best(r, runner);
  ASSERT_TRUE(report.ok());
  EXPECT_FALSE(report->main_built);
}

TEST_F(ExportTest, ReExportReplacesThePreviousFolder) {
  ScriptedRunner runner;
  ASSERT_TRUE(export_best(request(), runner).ok());
  ASSERT_TRUE(write_file_atomic(best() / "stale.txt", "from an older export").ok());
  ExportRequest r = request();
  r.provenance = {{"attempt", 7}};
  ASSERT_TRUE(export_best(r, runner).ok());
  EXPECT_FALSE(fs::exists(best() / "stale.txt"));
  EXPECT_EQ(read_json(best() / "manifest.json")["provenance"]["attempt"], 7);
  for (const auto& entry : fs::directory_iterator(capture()))
    EXPECT_EQ(entry.path().filename().string().find(".best."), std::string::npos) << entry.path();
}

TEST_F(ExportTest, LiftedConstantsTravelInTheirOwnFile) {
  auto graph = ir::load_graph((capture() / "graph.json").string());
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  graph->params[3].kind = ir::ParamKind::constant;  // "scale"
  ASSERT_TRUE(ir::save_graph(*graph, (capture() / "graph.json").string()).ok());
  ScriptedRunner runner;
  ASSERT_TRUE(export_best(request(), runner).ok());
  EXPECT_EQ(read_json(best() / "manifest.json")["constants_file"], "constants.safetensors");
  auto file = io::SafetensorsFile::open((best() / "constants.safetensors").string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  ASSERT_EQ(file->tensors().size(), 1u);
  EXPECT_EQ(file->tensors()[0].name, "scale");
  auto bytes = file->tensor_bytes("scale");
  ASSERT_TRUE(bytes.ok());
  std::vector<float> scale = testing::fake_scale();
  ASSERT_EQ(bytes->size(), scale.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(bytes->data(), scale.data(), bytes->size()), 0);
}

TEST_F(ExportTest, RefusesWhatItCannotExport) {
  ScriptedRunner runner;
  ExportRequest no_task = request();
  fs::remove(capture() / "task.py");
  auto missing = export_best(no_task, runner);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("task.py"), std::string::npos);
  ASSERT_TRUE(testing::write_fake_capture(capture()).ok());

  ExportRequest reserved = request();
  ASSERT_TRUE(write_file_atomic(temp_.path() / "src" / "main.cc", "int main() {}\n").ok());
  reserved.sources.push_back(temp_.path() / "src" / "main.cc");
  auto taken = export_best(reserved, runner);
  ASSERT_FALSE(taken.ok());
  EXPECT_NE(taken.error().message.find("best/main.cc"), std::string::npos);

  ExportRequest no_library = request();
  no_library.library = temp_.path() / "nope.so";
  EXPECT_FALSE(export_best(no_library, runner).ok());
  EXPECT_FALSE(fs::exists(best()));  // nothing half-made
}

// ---- main.cc for real
// ----------------------------------------------------------------------------

TEST_F(ExportTest, MainBuildsWithNvcc) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "nvcc not found: main.cc's CUDA build is not checked";
  ExportRequest r = request();
  r.build_main = true;
  SystemProcessRunner runner;
  auto report = export_best(r, runner);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->main_built) << report->main_build_log;
  EXPECT_TRUE(fs::is_regular_file(best() / "main"));
  EXPECT_EQ(read_json(best() / "manifest.json")["main"]["built"], true);
}

// main.cc with -DSTITCH_MAIN_HOST_MEMORY against the fake host-memory program: the whole
// standalone path (manifest, safetensors in and out, dlopen, init, forward, timing) without a GPU.
class MainHostTest : public ExportTest {
 protected:
  void SetUp() override {
    ExportTest::SetUp();
    auto built = testing::build_fake_program(temp_.path() / "lib" / "program.so");
    if (!built.ok())
      GTEST_SKIP() << "no C compiler for the fake program: " << built.error().message;
    ScriptedRunner runner;
    auto report = export_best(request(), runner);
    ASSERT_TRUE(report.ok()) << report.error().message;
    ProcessSpec spec;
    spec.argv = {"c++", "-std=c++17", "-O1", "-DSTITCH_MAIN_HOST_MEMORY", "-Iinclude", "main.cc",
                 "-o",  "main_host",  "-ldl"};
    spec.cwd = best();
    spec.timeout_s = 300;
    auto compiled = system_.run(spec);
    ASSERT_TRUE(compiled.ok());
    ASSERT_TRUE(compiled->succeeded()) << compiled->stderr_text;
  }

  ProcessResult run_main(const std::vector<std::string>& args) {
    ProcessSpec spec;
    spec.argv = {(best() / "main_host").string()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.timeout_s = 60;
    auto result = system_.run(spec);
    EXPECT_TRUE(result.ok());
    return result.ok() ? *result : ProcessResult{};
  }

  void write_inputs(const std::string& key, std::vector<int64_t> shape = {4, 8}) {
    std::vector<float> x = testing::fake_x();
    x.resize(static_cast<size_t>(shape[0] * shape[1]));
    std::vector<io::TensorView> views = {
        {key, ir::DType::float32, shape, std::as_bytes(std::span(x))}};
    ASSERT_TRUE(io::write_safetensors((temp_.path() / "inputs.safetensors").string(), views).ok());
  }

  std::vector<float> output(const fs::path& file, const std::string& name) {
    auto st = io::SafetensorsFile::open(file.string());
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    if (!st.ok()) return {};
    auto bytes = st->tensor_bytes(name);
    EXPECT_TRUE(bytes.ok()) << name;
    if (!bytes.ok()) return {};
    std::vector<float> values(bytes->size() / sizeof(float));
    std::memcpy(values.data(), bytes->data(), bytes->size());
    return values;
  }

  SystemProcessRunner system_;
};

TEST_F(MainHostTest, RunsTheProgramAndWritesItsOutputs) {
  write_inputs("x");
  const fs::path out = temp_.path() / "outputs.safetensors";
  ProcessResult result = run_main({"--params", (capture() / "weights.safetensors").string(),
                                   "--inputs", (temp_.path() / "inputs.safetensors").string(),
                                   "--out", out.string(), "--iters", "5"});
  ASSERT_TRUE(result.succeeded()) << result.stdout_text << result.stderr_text;
  EXPECT_NE(result.stdout_text.find("median_ms"), std::string::npos) << result.stdout_text;
  EXPECT_NE(result.stdout_text.find("over 5 iterations"), std::string::npos);

  const auto x = testing::fake_x(), bias = testing::fake_bias(), weight = testing::fake_weight(),
             scale = testing::fake_scale();
  std::vector<float> out0 = output(out, "output0"), out1 = output(out, "output1");
  ASSERT_EQ(out0.size(), 32u);
  ASSERT_EQ(out1.size(), 24u);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(out0[i * 8 + j], x[i * 8 + j] * 2.0f + bias[j]);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(out1[i * 8 + j], weight[i * 8 + j] * scale[j]);
  auto header = io::read_safetensors_header(out.string());
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->find("output1")->shape, (std::vector<int64_t>{3, 8}));
}

TEST_F(MainHostTest, AcceptsPositionalInputKeysAndExplainsBadInputs) {
  write_inputs("input0");  // reference/inputs.safetensors spelling
  const fs::path out = temp_.path() / "outputs.safetensors";
  std::vector<std::string> args = {"--params", (capture() / "weights.safetensors").string(),
                                   "--inputs", (temp_.path() / "inputs.safetensors").string(),
                                   "--out",    out.string()};
  ProcessResult ok = run_main(args);
  ASSERT_TRUE(ok.succeeded()) << ok.stderr_text;
  EXPECT_EQ(output(out, "output0").size(), 32u);
  EXPECT_EQ(ok.stdout_text.find("median_ms"), std::string::npos);  // no --iters: no timing

  write_inputs("x", {2, 8});
  ProcessResult bad = run_main(args);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.stderr_text.find("'x' is [2, 8] float32, the program needs [4, 8] float32"),
            std::string::npos)
      << bad.stderr_text;

  // The program's own error text reaches the user.
  std::vector<float> poisoned = testing::fake_x();
  poisoned[0] = -12345.0f;
  std::vector<io::TensorView> views = {
      {"x", ir::DType::float32, {4, 8}, std::as_bytes(std::span(poisoned))}};
  ASSERT_TRUE(io::write_safetensors((temp_.path() / "inputs.safetensors").string(), views).ok());
  ProcessResult failed = run_main(args);
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.stderr_text.find("fake: poisoned input seen"), std::string::npos)
      << failed.stderr_text;

  ProcessResult usage = run_main({"--inputs", "x.safetensors"});
  EXPECT_EQ(usage.exit_code, 1);
  EXPECT_NE(usage.stderr_text.find("usage: main"), std::string::npos);
}

}  // namespace
}  // namespace stitch::adapters
