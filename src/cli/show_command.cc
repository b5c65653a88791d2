// `stitchcuda show PATH`: print what a file of ours holds — a graph.json (node table and summary),
// a run directory (its graph and summary.json), or a .safetensors file (its tensors). A corrupt or
// truncated file gets one line naming the file and the problem, and exit code 2.
#include <fmt/format.h>

#include "cli/commands.h"
#include "io/safetensors.h"
#include "ir/ir.h"
#include "ir/print.h"
#include "util/fs.h"

namespace stitch::cli {
namespace {

Result<CommandEnd> show_graph(const fs::path& path) {
  auto graph = ir::load_graph(path.string());
  if (!graph.ok()) return graph.error().with_kind(ErrorKind::bad_input);
  fmt::print("{}\n{}\n", ir::format_node_table(*graph), ir::format_graph_summary(*graph));
  return CommandEnd::succeeded;
}

Result<CommandEnd> show_safetensors(const fs::path& path) {
  auto header = io::read_safetensors_header(path.string());
  if (!header.ok()) return header.error().with_kind(ErrorKind::bad_input);
  fmt::print("{:<48} {:<8} {:<24} {:>12}\n", "tensor", "dtype", "shape", "bytes");
  for (const auto& tensor : header->tensors)
    fmt::print("{:<48} {:<8} {:<24} {:>12}\n", tensor.name,
               io::safetensors_dtype_name(tensor.dtype),
               fmt::format("[{}]", fmt::join(tensor.shape, ", ")), tensor.byte_size());
  for (const auto& [key, value] : header->metadata)
    fmt::print("metadata {} = {}\n", key, value);
  fmt::print("{} tensors, {} bytes of data\n", header->tensors.size(), header->data_bytes);
  return CommandEnd::succeeded;
}

}  // namespace

CommandAction setup_show(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  app.add_option("path", *path, "A graph.json, a run directory, or a .safetensors file")
      ->required();
  return [path]() -> Result<CommandEnd> {
    fs::path target = *path;
    std::error_code ec;
    if (fs::is_directory(target, ec)) {
      if (!fs::exists(target / "graph.json"))
        return make_error(ErrorKind::bad_input,
                          "{}: no graph.json here (not a captured run directory)", target.string());
      if (auto summary = read_file(target / "summary.json"); summary.ok())
        fmt::print("summary.json: {}\n", *summary);
      return show_graph(target / "graph.json");
    }
    if (!fs::is_regular_file(target, ec))
      return make_error(ErrorKind::bad_input, "{}: no such file", target.string());
    if (target.extension() == ".safetensors") return show_safetensors(target);
    if (target.extension() == ".json") return show_graph(target);
    return make_error(ErrorKind::bad_input, "{}: not a .json graph or a .safetensors file",
                      target.string());
  };
}

}  // namespace stitch::cli
