#include "mcp/skill.h"

namespace stitch::mcp {

std::string_view skill_text() {
  for (const EmbeddedFile& file : embedded_files())
    if (file.name == "skill.md") return file.contents;
  return {};
}

std::string_view server_instructions() {
  return "StitchCUDA's judge for CUDA programs that replace a PyTorch reference. Workflow: "
         "capture_task (once per task) -> write a .cu implementing the stitch C ABI "
         "(stitch_init / stitch_forward / stitch_destroy / stitch_last_error, "
         "include/stitch/program.h) -> verify_program -> read outcome and feedback.suggestion -> "
         "fix and verify again -> profile_program once it passes -> iterate on speed. "
         "query_docs cites the CUDA headers for API names. The full guide (ABI, the rules the "
         "judge enforces, how to read feedback): `stitchcuda mcp --skill`.";
}

}  // namespace stitch::mcp
