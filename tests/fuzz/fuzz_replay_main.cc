// Replays a fuzz target over a seed corpus: every file in the directories given on the command
// line goes through LLVMFuzzerTestOneInput once. A property violation aborts (the test fails);
// success prints how many inputs ran. Lets a normal (gcc) build run the corpus as a ctest.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(argv[i]))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "no such file or directory: %s\n", argv[i]);
      return 2;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "no corpus files given\n");
    return 2;
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Copy into an exactly-sized buffer so out-of-bounds reads are visible to sanitizers.
    std::vector<uint8_t> buffer(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(buffer.data(), buffer.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
