// Functors with the same body share one type: a plan whose subtasks repeat (a loop captured
// unrolled, one fused body per step) would otherwise instantiate every kernel template once per
// copy, and nvcc's time grows with the instantiations (1025 functors with 3 distinct bodies took
// a 1.1 MB program past 25 minutes of nvcc). The kernels of functors that share a type carry the
// first one's name, so a profile attributes their time to that subtask (agents/refine.cc matches
// kernels to subtasks by functor name). Internal to src/codegen.
#pragma once

#include <string>

namespace stitch::codegen {

// `functors`: the text of ProgramPieces::functors, top-level `struct NAME {` ... `};` blocks. A
// block whose text, its name and `//` comments aside, equals an earlier one's becomes
// `using NAME = EARLIER;`. Everything else is kept as it is.
std::string share_identical_functors(const std::string& functors);

}  // namespace stitch::codegen
