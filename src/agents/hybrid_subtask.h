// The steps of subtask-level coding the hybrid Coder (hybrid_coder.h) runs per LLM subtask:
// asking for the fragment (one re-ask carrying the reason when the reply defines no such
// function), and the subtask's own program for its check alone.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "codegen/program_emitter.h"
#include "codegen/subtask_signature.h"
#include "llm/chat.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::agents {

struct FragmentExchange {
  std::string code;  // empty: no usable fragment
  std::string why_not;
  std::vector<llm::ChatReply> replies;
  llm::Usage usage() const;
};

// The fragment in a reply: the first C++/CUDA block (or the unfenced text) that defines the
// signature's function; empty with the reason otherwise.
std::string find_fragment(const llm::ChatReply& reply, const codegen::SubtaskSignature& signature,
                          std::string& why_not);

// Sends `request`; re-asks once when the reply holds no fragment. An Error only when the client
// fails.
Result<FragmentExchange> ask_for_fragment(llm::ChatClient& client, llm::ChatRequest request,
                                          const codegen::SubtaskSignature& signature);

// The subtask's own program: its subgraph (plan/subgraph.h) as a task file, planned on its own
// with the fragment stitched in. Where its own plan does not hand the fragment the same operands
// (the subtask reads strided views, or plans differently alone), the reason instead.
struct OwnProgram {
  std::string task_source;
  codegen::EmittedProgram program;
};
Result<std::variant<OwnProgram, std::string>> own_program(const plan::Plan& plan,
                                                          const plan::Subtask& subtask,
                                                          const codegen::LlmSubtaskCode& code,
                                                          const codegen::EmitOptions& options);

}  // namespace stitch::agents
