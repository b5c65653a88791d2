// What the reward judges one attempt by, read from its directory: the Verifier's verify.json, the
// program's sources, the reference's captured graph, the plan and the feedback the attempt was
// asked to follow, and the SASS of the built library. Every file is read through its owner's typed
// reader; the SASS comes through SassInspector (cuobjdump behind an interface, with a fake in
// tests).
//
// An attempt directory (docs/loop.md): attempts/NN/{attempt.json, draft.json, src/, verify.json,
// feedback.json} inside a run directory that holds graph.json and plans/plan.vN.json. A bare
// directory with verify.json and program.cu (and graph.json beside them) reads too.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/plan.h"
#include "util/process.h"
#include "util/result.h"
#include "verify/feedback.h"
#include "verify/verify_report.h"

namespace stitch::reward {

namespace fs = std::filesystem;

struct SourceText {
  std::string name;  // file name, relative to the attempt directory
  std::string text;
};

// The attempt whose feedback this one was asked to act on (skill 2: code + feedback → better code).
struct FollowedAttempt {
  std::string dir;
  Feedback feedback;
  std::optional<VerifyReport> verify;
  std::vector<SourceText> sources;
};

struct AttemptEvidence {
  std::string attempt_dir;
  std::optional<VerifyReport> verify;  // unset: never verified (no verify.json)
  std::vector<SourceText> sources;     // the program's sources and local headers
  std::optional<ir::Graph> reference;  // the captured reference graph
  std::optional<plan::Plan> plan;      // the plan the attempt implements (skill 1)
  std::optional<FollowedAttempt> followed;
  std::string sass;                // the built library's SASS; empty when not inspected
  std::vector<std::string> notes;  // what could not be read, and why
};

// Disassembles a built program (cuobjdump -sass). An Error when the tool fails.
class SassInspector {
 public:
  virtual ~SassInspector() = default;
  virtual Result<std::string> disassemble(const fs::path& library) = 0;
};

// `cuobjdump -sass LIBRARY` through a ProcessRunner (the toolkit's, beside nvcc, else PATH's).
class CuobjdumpInspector final : public SassInspector {
 public:
  explicit CuobjdumpInspector(ProcessRunner& runner) : runner_(runner) {}
  Result<std::string> disassemble(const fs::path& library) override;

 private:
  ProcessRunner& runner_;
};

// Where to find what the attempt directory does not hold itself. Empty paths: looked up in the run
// directory (the attempt directory's grandparent, when it holds graph.json), else beside the
// attempt.
struct EvidenceSources {
  fs::path graph;     // graph.json of the reference
  fs::path plan;      // plan.json the attempt implements
  fs::path followed;  // the attempt directory whose feedback.json this attempt followed
};

// Reads the attempt. An Error only when `attempt_dir` is not a directory or a file present is
// corrupt; missing optional parts leave their field unset and a note. `sass` may be null (no
// inspection); it is asked only when verify.json names a built library that exists.
Result<AttemptEvidence> read_attempt_evidence(const fs::path& attempt_dir,
                                              const EvidenceSources& sources, SassInspector* sass);

}  // namespace stitch::reward
