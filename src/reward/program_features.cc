// The program's features, found by regular expressions over comment-free source and over the SASS
// text of `cuobjdump -sass` (program_features.h).
#include "reward/program_features.h"

#include <algorithm>
#include <regex>

#include <fmt/format.h>

namespace stitch::reward {
namespace {

bool has(const std::string& text, const char* pattern) {
  return std::regex_search(text, std::regex(pattern));
}

int count(const std::string& text, const char* pattern) {
  std::regex re(pattern);
  return int(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// Lines that reach for PyTorch, ATen or Python (a copy of the reference, or a wrapper around it).
void find_torch_uses(const SourceText& source, const std::string& code,
                     std::vector<std::string>& uses) {
  static const std::regex kTorch(
      R"((#\s*include\s*[<"](torch/|ATen/|c10/|Python\.h|pybind11/))|\btorch::|\bat::Tensor\b|)"
      R"(^\s*(import|from)\s+torch\b|\bnn\.Module\b)");
  size_t start = 0;
  while (start < code.size()) {
    size_t end = code.find('\n', start);
    if (end == std::string::npos) end = code.size();
    std::string line = code.substr(start, end - start);
    if (std::regex_search(line, kTorch) && uses.size() < 8)
      uses.push_back(fmt::format("{}: {}", source.name, line.substr(0, 120)));
    start = end + 1;
  }
}

}  // namespace

std::string strip_comments(std::string_view text) {
  std::string out(text);
  enum class State { code, line_comment, block_comment, string, character } state = State::code;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    char next = i + 1 < out.size() ? out[i + 1] : '\0';
    switch (state) {
      case State::code:
        if (c == '/' && next == '/')
          state = State::line_comment, out[i] = ' ';
        else if (c == '/' && next == '*')
          state = State::block_comment, out[i] = ' ', out[++i] = ' ';
        else if (c == '"')
          state = State::string;
        else if (c == '\'')
          state = State::character;
        break;
      case State::line_comment:
        if (c == '\n')
          state = State::code;
        else
          out[i] = ' ';
        break;
      case State::block_comment:
        if (c == '*' && next == '/')
          state = State::code, out[i] = ' ', out[++i] = ' ';
        else if (c != '\n')
          out[i] = ' ';
        break;
      case State::string:
      case State::character:
        if (c == '\\')
          ++i;
        else if ((state == State::string && c == '"') || (state == State::character && c == '\''))
          state = State::code;
        else if (c == '\n')
          state = State::code;
        break;
    }
  }
  return out;
}

ProgramFeatures scan_program(const std::vector<SourceText>& sources, std::string_view sass_view) {
  ProgramFeatures f;
  std::string code;
  for (const SourceText& source : sources) {
    bool python = source.name.ends_with(".py");
    f.python = f.python || python;
    std::string text = python ? source.text : strip_comments(source.text);
    find_torch_uses(source, text, f.torch_uses);
    if (!python) code += text + "\n";
  }
  std::string sass(sass_view);
  f.own_kernels = count(code, R"(__global__)");
  f.launch_sites = count(code, R"(<<<)");
  f.shared_tiling = has(code, R"(__shared__)");
  f.tensor_cores_in_sass = has(sass, R"(\b(HMMA|HGMMA|IMMA|IGMMA|DMMA|QGMMA|UTCHMMA)\b)");
  f.tensor_cores = f.tensor_cores_in_sass ||
                   has(code, R"(\bmma\.sync\b|\bwgmma\.|\bwmma::|\bmma_sync\b|\bmma::|tcgen05)");
  f.vectorised = has(code, R"(\b(float4|int4|uint4|double2|__half2|float2)\b|\.v4\.)") ||
                 has(sass, R"(\b(LDG|STG|LDS|STS)\.E?\.?128\b|\b(LDG|STG)\.E\.128)");
  f.library_gemm = has(code, R"(\bcublas\w*(Gemm|gemm|Matmul)\w*\s*\()");
  f.library_conv = has(code, R"(\bcudnnConvolution\w*\s*\(|\bcudnnBackendExecute\s*\()");
  f.library_norm =
      has(code, R"(\bcudnn(Softmax|Pooling|BatchNormalization|Normalization)\w*\s*\()");
  f.library_epilogue = has(code, R"(\bCUBLASLT_EPILOGUE_(RELU|GELU|BIAS|DRELU|DGELU)\w*)");
  f.graph_capture = has(code, R"(\bcudaStreamBeginCapture\w*\s*\(|\bcudaGraphLaunch\s*\()");
  return f;
}

void add_build_facts(ProgramFeatures& f, const VerifyReport& verify) {
  if (!verify.built) return;
  // nvcc always runs with -Xptxas -v: its kernel list is every kernel the program instantiated.
  // Text in headers the program includes but never instantiates (a kernel library's other
  // families) says nothing about it.
  f.own_kernels = int(verify.kernels.size());
  if (f.own_kernels == 0) {
    f.shared_tiling = f.vectorised = false;
    f.tensor_cores = f.tensor_cores_in_sass;
    return;
  }
  for (const PtxasKernelReport& kernel : verify.kernels)
    if (kernel.shared_bytes > 0) f.shared_tiling = true;
}

}  // namespace stitch::reward
