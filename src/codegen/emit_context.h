// What the per-subtask emitters share while one program is emitted (program_emitter.cc drives
// them): the plan, where each value lives, the text the program is assembled from, and the helpers
// that render buffers, body steps and stores. Internal to src/codegen.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codegen/code_writer.h"
#include "codegen/program_emitter.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::codegen {

// Free helpers of the emitters.
int64_t align256(int64_t bytes);
std::string c_type(ir::DType dtype);  // "" for a dtype the emitter does not handle
std::string int_list(const std::vector<int64_t>& values);  // "1, 2, 3"
int64_t numel(const std::vector<int64_t>& shape);
std::vector<std::string> split_lines(const std::string& text);
// "a, b, c" from the initializers of `members` ((declaration, initializer) pairs), appended to
// `list`.
using Members = std::vector<std::pair<std::string, std::string>>;
void append_inits(std::string& list, const Members& members);

// Element index of `access` for index-space coordinates `coords` of shape `space` (see the .cc).
std::string index_expr(const plan::Access& access, const std::vector<int64_t>& space,
                       const std::vector<std::string>& coords, const std::string& linear);

// The pieces the program is assembled from (program_assembly.cc), filled by the subtask emitters.
struct ProgramPieces {
  CodeWriter functors;      // one device functor per fused body, at namespace scope
  CodeWriter forward_body;  // Program::run_subtasks: one block per forward subtask
  CodeWriter init_body;     // Program::run_init_subtasks: subtasks that read only params
  CodeWriter gemm_init;     // Program::init_gemms: each GEMM's description and tuning
  CodeWriter conv_init;     // Program::init_convs: each convolution's / RNN's description, tuning
  CodeWriter kernel_prepare;  // at init, before the init subtasks: kernels' shared-memory limits
  std::vector<std::string> gemm_members;  // members of Program::Gemms
  std::vector<std::string> conv_members;  // CudnnConv and CudnnRnn members of Program::Convs
  std::vector<std::string> reductions;    // ReduceExtent initializers ("{o, r, i}")
  bool uses_matmul = false;
  bool uses_tf32x3 = false;
  bool uses_pool = false;
  bool uses_scan = false;         // kernels/scan.cuh
  bool uses_gather = false;       // kernels/gather.cuh
  bool uses_conv = false;         // cuDNN convolutions
  bool uses_rnn = false;          // cuDNN recurrent layers (kernels/rnn.cuh), in Program::Convs
  int rnn_count = 0;
  bool uses_depthwise = false;    // kernels/conv_depthwise.cuh
  bool uses_conv_igemm = false;   // kernels/conv_igemm_tf32x3.cuh
  bool uses_conv_transpose = false;  // kernels/conv_transpose.cuh
  bool uses_conv_direct = false;           // kernels/conv_direct.cuh
  bool uses_conv_timing = false;  // cuDNN timed against a kernel (kernels/conv_engine_timing.cuh)
  bool uses_gemm_tf32x3 = false;  // the one-kernel 3xTF32 GEMM (kernels/gemm_tf32x3.cuh)
  bool uses_attention = false;    // kernels/attention.cuh
  bool uses_attention_mma = false;  // its tensor-core variants (kernels/attention_mma.cuh)
  int matmul_count = 0;
  std::vector<std::string> llm_includes;  // #include lines of LLM-written subtasks, hoisted
  CodeWriter llm_code;                    // their code, in an anonymous namespace of its own
};

class EmitContext {
 public:
  EmitContext(const plan::Plan& plan, const EmitOptions& options);

  const plan::Plan& plan() const { return plan_; }
  const EmitOptions& options() const { return options_; }
  ProgramPieces& pieces() { return pieces_; }
  const ProgramPieces& pieces() const { return pieces_; }
  const std::vector<int64_t>& param_offsets() const { return param_offsets_; }
  int64_t persistent_total() const { return persistent_total_; }

  const ir::TensorType& type_of(const ir::ValueRef& ref) const;
  // A char* expression for the start of the buffer that owns `ref` (inside Program's functions).
  Result<std::string> buffer_base(const ir::ValueRef& ref) const;
  // Typed element pointer to `ref`'s buffer (an access's offset not applied).
  Result<std::string> typed_base(const ir::ValueRef& ref, bool writable = false) const;
  // "<typed base> + <offset>" of an access.
  Result<std::string> access_pointer(const plan::Access& access) const;
  // Where a stored value's elements go: its own buffer, contiguous, or its window of a cat's
  // buffer (plan/cat_placement.h), offset and strides in elements of that buffer.
  plan::Access store_access(const ir::ValueRef& value) const;
  // The element index in a store member (store_members) of the value's element `linear`.
  std::string store_index(const ir::ValueRef& value, const std::string& linear) const;

  // Renders body steps into `w` as `const float <prefix>N = ...;` given the load expressions;
  // returns every step's variable name.
  Result<std::vector<std::string>> emit_steps(CodeWriter& w, const plan::Body& body,
                                              const std::vector<std::string>& loads,
                                              const std::vector<std::string>& index_values,
                                              const std::string& prefix) const;
  Result<std::string> operand_expr(const plan::Operand& operand,
                                   const std::vector<std::string>& loads,
                                   const std::vector<std::string>& steps,
                                   const std::vector<std::string>& index_values) const;
  // Assigns `value` (a float expression) to `member`[`linear`], converted to the store's dtype.
  Result<std::string> store_statement(const plan::Store& store, const std::string& member,
                                      const std::string& linear, const std::string& value) const;

  // The line storing `store` (functor member out<j>, element "e") from its operand.
  Status emit_store_line(CodeWriter& w, const plan::Store& store, size_t j,
                         const std::vector<std::string>& loads,
                         const std::vector<std::string>& steps,
                         const std::vector<std::string>& index_values) const;

  // Functor members: one typed pointer per access ("const float* l0;") with its initializer.
  Result<Members> pointer_members(const std::vector<plan::Access>& accesses,
                                  const std::string& prefix) const;
  // Functor members: one writable typed pointer per store ("float* out0;").
  Result<Members> store_members(const std::vector<plan::Store>& stores) const;

  static std::string functor_name(const plan::Subtask& subtask, std::string_view role);

 private:
  // store_statement at an element index already in the store's buffer.
  Result<std::string> store_statement_at(const plan::Store& store, const std::string& member,
                                         const std::string& index, const std::string& value) const;

  const plan::Plan& plan_;
  const EmitOptions& options_;
  ProgramPieces pieces_;
  std::map<std::string, const plan::BufferSlot*> slots_;
  std::vector<int64_t> param_offsets_;
  int64_t persistent_total_ = 0;
};

// Opens functor struct `name`: the declarations of its members (each list in turn), then its
// operator, `signature` (without the brace). close_functor closes both.
void open_functor(CodeWriter& w, const std::string& name,
                  std::initializer_list<const Members*> member_lists, const std::string& signature);
// Closes a functor struct opened with its operator (two levels) and leaves a blank line.
void close_functor(CodeWriter& w);

// Lines `const float x<j> = static_cast<float>(l<j>[<index>]);` for each of `accesses` at `coords`
// of `space` (linear index "e"); returns the names x0, x1, ...
std::vector<std::string> emit_load_lines(CodeWriter& w, const std::vector<plan::Access>& accesses,
                                         const std::vector<int64_t>& space,
                                         const std::vector<std::string>& coords);

// A loading functor (a reduction's prologue, a row op's load): `signature` computes the linear
// index with `linear_line`, loads `loads`, returns the prologue's last step (or the first load).
// Returns the functor's pointer members.
Result<Members> emit_load_functor(EmitContext& ctx, const std::string& name,
                                  const std::string& signature, const std::string& linear_line,
                                  const std::vector<plan::Access>& loads,
                                  const std::vector<int64_t>& space,
                                  const std::vector<std::string>& coords,
                                  const std::optional<plan::Body>& prologue);

// The subtask emitters (one file per kernel family). Each writes its functors into
// ctx.pieces().functors and its launch into `w`.
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::ElementwiseSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::CopySpec& spec,
                 CodeWriter& w);
// An elementwise body over `shape` through launch_elementwise (also a GEMM's epilogue pass).
Status emit_library_elementwise(EmitContext& ctx, const plan::Subtask& subtask,
                                const std::string& role, const std::vector<int64_t>& shape,
                                const plan::Body& body, const std::vector<plan::Store>& stores,
                                CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::MatmulSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::ReductionSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::RowSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::ScanSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::GatherSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::RecurrentSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::PoolSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::ConvSpec& spec,
                 CodeWriter& w);
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::AttentionSpec& spec,
                 CodeWriter& w);
// An opaque subtask has no built-in emission: an Error naming the op (an LLM writes it).
Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::OpaqueSpec& spec,
                 CodeWriter& w);
// An LLM-written subtask (subtask_llm.cc): its code into the program, a call of its function.
Status emit_llm_subtask(EmitContext& ctx, const plan::Subtask& subtask, const LlmSubtaskCode& code,
                        CodeWriter& w);

// The whole program.cu from the filled pieces (program_assembly.cc).
std::string assemble_program(const EmitContext& ctx);

}  // namespace stitch::codegen
