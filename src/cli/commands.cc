#include "cli/commands.h"

namespace stitch::cli {

namespace {
constexpr Command kCommands[] = {
    {"capture", "Capture a KernelBench-style PyTorch task into graph.json + weights and print its graph",
     setup_capture},
    {"doctor", "Check this machine: compiler, CUDA toolkit, GPU, Python harness and torch",
     setup_doctor},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

}  // namespace stitch::cli
