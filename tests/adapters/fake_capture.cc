// The adapters' test fixtures (fake_capture.h).
#include "fake_capture.h"

#include <stdlib.h>

#include <cstddef>
#include <span>

#include "io/safetensors.h"
#include "util/fs.h"
#include "util/process.h"

namespace stitch::adapters::testing {

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "stitch_adapters_XXXXXX").string();
  path_ = mkdtemp(pattern.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::vector<float> fake_bias() {
  std::vector<float> v;
  for (int j = 0; j < 8; ++j)
    v.push_back(0.5f * j - 1.0f);
  return v;
}

std::vector<float> fake_weight() {
  std::vector<float> v;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j)
      v.push_back(0.25f * i - 0.125f * j);
  return v;
}

std::vector<float> fake_inner_bias() {
  return {0.1f, 0.2f, 0.3f};
}

std::vector<float> fake_scale() {
  std::vector<float> v;
  for (int j = 0; j < 8; ++j)
    v.push_back(1.0f + 0.5f * j);
  return v;
}

std::vector<float> fake_x() {
  std::vector<float> v;
  for (int i = 0; i < 32; ++i)
    v.push_back(0.75f * i - 7.0f);
  return v;
}

namespace {

io::TensorView view(const std::string& name, const std::vector<float>& values,
                    std::vector<int64_t> shape) {
  return {name, ir::DType::float32, std::move(shape), std::as_bytes(std::span(values))};
}

}  // namespace

Status write_fake_capture(const fs::path& capture_dir) {
  STITCH_TRY(make_dirs(capture_dir));
  std::error_code ec;
  for (const char* name : {"graph.json", "capture.json"}) {
    fs::copy_file(kData / "fake_capture" / name, capture_dir / name,
                  fs::copy_options::overwrite_existing, ec);
    if (ec) return make_error("copying {}: {}", name, ec.message());
  }
  fs::copy_file(kData / "fake_task.py", capture_dir / "task.py",
                fs::copy_options::overwrite_existing, ec);
  if (ec) return make_error("copying fake_task.py: {}", ec.message());
  const auto bias = fake_bias(), weight = fake_weight(), inner_bias = fake_inner_bias(),
             scale = fake_scale();
  std::vector<io::TensorView> tensors = {
      view("bias", bias, {8}), view("inner.weight", weight, {3, 8}),
      view("inner.bias", inner_bias, {3}), view("scale", scale, {8})};
  return io::write_safetensors((capture_dir / "weights.safetensors").string(), tensors);
}

Status build_fake_program(const fs::path& output) {
  SystemProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"cc",
               "-shared",
               "-fPIC",
               "-O1",
               "-I" + (kSourceDir / "include").string(),
               (kData / "fake_program.c").string(),
               "-o",
               output.string()};
  spec.timeout_s = 120;
  STITCH_ASSIGN_OR_RETURN(ProcessResult result, runner.run(spec));
  if (!result.succeeded())
    return make_error("cc fake_program.c: {}: {}", result.describe(), result.stderr_text);
  return {};
}

Result<fs::path> write_program_tree(const fs::path& dir) {
  const fs::path src = dir / "src";
  STITCH_TRY(write_file_atomic(src / "program.cu",
                               "// A program source whose includes chain through local headers.\n"
                               "#include <cstdint>\n"
                               "#include \"stitch/program.h\"\n"
                               "#include \"kernels/program_support.cuh\"\n"
                               "#include \"helpers.cuh\"\n"
                               "#include \"cuda_runtime.h\"  // quoted but the toolkit's\n"));
  STITCH_TRY(
      write_file_atomic(src / "helpers.cuh", "#pragma once\n#include \"detail/more.cuh\"\n"));
  STITCH_TRY(write_file_atomic(src / "detail" / "more.cuh",
                               "#pragma once\n  #  include \"../helpers.cuh\"\n"
                               "inline int more() { return 1; }\n"));
  return src / "program.cu";
}

std::vector<fs::path> repo_include_dirs() {
  return {kSourceDir / "include", kSourceDir};
}

}  // namespace stitch::adapters::testing
