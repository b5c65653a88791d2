#include "cli/commands.h"

namespace stitch::cli {

namespace {
constexpr Command kCommands[] = {
    {"capture",
     "Capture a KernelBench-style PyTorch task into graph.json + weights and print its graph",
     setup_capture},
    {"show", "Print a graph.json, a run directory's graph, or a .safetensors file's tensors",
     setup_show},
    {"doctor", "Check this machine: compiler, CUDA toolkit, GPU, Python harness and torch",
     setup_doctor},
    {"verify", "Verify a CUDA program against its task: build, hack checks, judge, runner, timing",
     setup_verify},
    {"eval-kb", "Score a KernelBench ModelNew solution with the hardened judge", setup_eval_kb},
    {"profile", "Profile a program (CUPTI timeline, ncu counters, bottlenecks) or the reference",
     setup_profile},
    {"plan", "Plan a task with the built-in Planner: subtasks, kernels, costs; writes plan.json",
     setup_plan},
    {"generate",
     "Generate a CUDA program for a task with the built-in Coder (plan, emit, nvcc check)",
     setup_generate},
    {"run",
     "The whole loop on one task (plan, code, verify, feed back, refine); best/ with adapters",
     setup_run},
    {"bench", "The loop over many tasks, one worker per GPU: results.jsonl, table and HTML report",
     setup_bench},
    {"rag", "Documentation index over CUDA headers and docs: index, query (path:lines), eval",
     setup_rag},
    {"mcp", "Serve capture, verify, profile, docs and run state to coding agents (MCP on stdio)",
     setup_mcp},
    {"reward", "The rubric reward of one attempt: rule reward, rubric scores, breakdown",
     setup_reward},
    {"dataset", "Single-turn RL samples (task+plan→code, code+feedback→code) of run dirs as Parquet",
     setup_dataset},
#ifdef STITCH_HAVE_SERVE
    {"serve", "The reward service: HTTP, candidates verified on a GPU worker pool, durable queue",
     setup_serve},  // runs stitchcuda-serve (serve_proxy.cc)
#endif
};
}  // namespace

std::span<const Command> commands() {
  return kCommands;
}

}  // namespace stitch::cli
