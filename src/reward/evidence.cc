// Reading an attempt directory into AttemptEvidence (evidence.h): each file through its owner's
// typed reader, the run directory's graph, plan and the followed attempt found by docs/loop.md's
// layout.
#include "reward/evidence.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "adapters/header_closure.h"
#include "agents/attempt_files.h"
#include "plan/plan_json.h"
#include "util/fs.h"
#include "verify/build/compiler.h"

namespace stitch::reward {
namespace {

constexpr size_t kMaxSourceBytes = 1 << 20;  // a program larger than this is read in part

bool is_program_file(const fs::path& path) {
  static const std::set<std::string> kExtensions = {".cu", ".cuh", ".h", ".hpp",
                                                    ".cc", ".cpp", ".py"};
  return kExtensions.contains(path.extension().string());
}

Result<SourceText> read_source(const fs::path& path, std::string name) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  if (text.size() > kMaxSourceBytes) text.resize(kMaxSourceBytes);
  return SourceText{std::move(name), std::move(text)};
}

std::string name_in(const fs::path& dir, const fs::path& path) {
  std::error_code ec;
  fs::path name = fs::relative(path, dir, ec);
  return ec || name.empty() ? path.filename().string() : name.generic_string();
}

// The program: draft.json's sources and headers with the local headers they include (the project's
// kernel library among them, found where the compiler finds it: compiled into the program, so its
// kernels are the program's own), else the program files directly in the directory and in src/.
Result<std::vector<SourceText>> read_sources(const fs::path& dir) {
  std::vector<std::pair<fs::path, std::string>> files;  // path, name
  if (fs::exists(dir / "draft.json")) {
    STITCH_ASSIGN_OR_RETURN(agents::CodeDraft draft, agents::read_draft(dir));
    std::set<fs::path> seen;
    for (const auto& list : {draft.sources, draft.headers})
      for (const fs::path& path : list)
        if (seen.insert(fs::weakly_canonical(path)).second)
          files.emplace_back(path, name_in(dir, path));
    std::vector<fs::path> include_dirs = draft.include_dirs;
    fs::path stitch_include = default_stitch_include_dir();
    include_dirs.insert(include_dirs.end(), {stitch_include, stitch_include.parent_path()});
    auto closure = adapters::local_header_closure(draft.sources, include_dirs);
    if (closure.ok())
      for (const adapters::LocalHeader& header : *closure)
        if (seen.insert(header.file).second)
          files.emplace_back(header.file, header.relative.generic_string());
  } else {
    for (const fs::path& folder : {dir, dir / "src"}) {
      std::error_code ec;
      if (!fs::is_directory(folder, ec)) continue;
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(folder, ec))
        if (entry.is_regular_file() && is_program_file(entry.path())) found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      for (const fs::path& path : found)
        files.emplace_back(path, name_in(dir, path));
    }
  }
  std::vector<SourceText> sources;
  for (const auto& [path, name] : files) {
    STITCH_ASSIGN_OR_RETURN(SourceText source, read_source(path, name));
    sources.push_back(std::move(source));
  }
  return sources;
}

// The run directory an attempt directory sits in (run/attempts/NN), when it is one.
std::optional<fs::path> run_dir_of(const fs::path& attempt_dir) {
  fs::path run = attempt_dir.parent_path().parent_path();
  if (attempt_dir.parent_path().filename() == "attempts" && fs::exists(run / "graph.json"))
    return run;
  return std::nullopt;
}

std::optional<agents::AttemptRecord> read_intent(const fs::path& dir) {
  if (!fs::exists(dir / "attempt.json")) return std::nullopt;
  auto doc = read_json_file(dir / "attempt.json");
  if (!doc.ok()) return std::nullopt;
  auto record = agents::attempt_intent_from_json(*doc);
  return record.ok() ? std::optional(*record) : std::nullopt;
}

fs::path first_existing(std::initializer_list<fs::path> candidates) {
  for (const fs::path& path : candidates)
    if (!path.empty() && fs::exists(path)) return path;
  return {};
}

// The latest earlier attempt of the same scope (plan version and subtask) that left feedback: what
// the loop handed this attempt's Coder (docs/loop.md "Routing").
fs::path find_followed(const fs::path& attempt_dir, const std::optional<fs::path>& run) {
  std::optional<agents::AttemptRecord> self = read_intent(attempt_dir);
  if (!run || !self) return {};
  std::optional<agents::AttemptRecord> best;
  fs::path best_dir;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(*run / "attempts", ec)) {
    std::optional<agents::AttemptRecord> other = read_intent(entry.path());
    if (!other || other->number >= self->number || other->plan_version != self->plan_version ||
        other->subtask != self->subtask || !fs::exists(entry.path() / "feedback.json"))
      continue;
    if (!best || other->number > best->number) best = other, best_dir = entry.path();
  }
  return best_dir;
}

Result<FollowedAttempt> read_followed(const fs::path& dir) {
  FollowedAttempt followed;
  followed.dir = dir.string();
  STITCH_ASSIGN_OR_RETURN(followed.feedback, read_feedback(dir / "feedback.json"));
  if (fs::exists(dir / "verify.json")) {
    STITCH_ASSIGN_OR_RETURN(VerifyReport verify, read_verify_report(dir / "verify.json"));
    followed.verify = std::move(verify);
  }
  STITCH_ASSIGN_OR_RETURN(followed.sources, read_sources(dir));
  return followed;
}

// graph.json, the plan and the followed attempt, each where `given` says or where the layout puts
// it.
Status read_context(const fs::path& dir, const EvidenceSources& given, AttemptEvidence& evidence) {
  std::optional<fs::path> run = run_dir_of(dir);
  fs::path run_path = run.value_or(fs::path());
  fs::path graph =
      first_existing({given.graph, run ? run_path / "graph.json" : fs::path(), dir / "graph.json"});
  if (graph.empty()) {
    evidence.notes.push_back("no graph.json of the reference: coverage not measured");
  } else {
    STITCH_ASSIGN_OR_RETURN(ir::Graph reference, ir::load_graph(graph.string()));
    evidence.reference = std::move(reference);
  }
  std::optional<agents::AttemptRecord> intent = read_intent(dir);
  fs::path versioned = run && intent
                           ? run_path / "plans" / fmt::format("plan.v{}.json", intent->plan_version)
                           : fs::path();
  fs::path plan = first_existing(
      {given.plan, versioned, run ? run_path / "plan.json" : fs::path(), dir / "plan.json"});
  if (!plan.empty()) {
    STITCH_ASSIGN_OR_RETURN(plan::Plan loaded, plan::load_plan(plan.string()));
    evidence.plan = std::move(loaded);
  }
  fs::path followed = given.followed.empty() ? find_followed(dir, run) : given.followed;
  if (!followed.empty()) {
    STITCH_ASSIGN_OR_RETURN(FollowedAttempt read, read_followed(followed));
    evidence.followed = std::move(read);
  }
  return {};
}

}  // namespace

Result<std::string> CuobjdumpInspector::disassemble(const fs::path& library) {
  // Beside nvcc (the toolkit's bin/ need not be on PATH), else from PATH.
  std::string tool = "cuobjdump";
  if (auto nvcc = locate_nvcc(); nvcc.ok() && fs::exists(nvcc->parent_path() / tool))
    tool = (nvcc->parent_path() / tool).string();
  ProcessSpec spec;
  spec.argv = {tool, "-sass", library.string()};
  spec.timeout_s = 60;
  STITCH_ASSIGN_OR_RETURN(ProcessResult result, runner_.run(spec));
  if (!result.succeeded())
    return make_error(ErrorKind::machine, "cuobjdump -sass {}: {}", library.string(),
                      result.describe());
  return std::move(result.stdout_text);
}

Result<AttemptEvidence> read_attempt_evidence(const fs::path& given_dir,
                                              const EvidenceSources& sources, SassInspector* sass) {
  // Absolute and without a trailing separator, so "." and "attempts/03/" find their run directory.
  std::error_code ec;
  fs::path attempt_dir = fs::absolute(given_dir, ec).lexically_normal();
  if (attempt_dir.filename().empty()) attempt_dir = attempt_dir.parent_path();
  if (!fs::is_directory(attempt_dir, ec))
    return make_error(ErrorKind::bad_input, "{}: not an attempt directory", given_dir.string());
  AttemptEvidence evidence;
  evidence.attempt_dir = attempt_dir.string();
  if (fs::exists(attempt_dir / "verify.json")) {
    STITCH_ASSIGN_OR_RETURN(VerifyReport verify, read_verify_report(attempt_dir / "verify.json"));
    evidence.verify = std::move(verify);
  } else {
    evidence.notes.push_back("no verify.json: the attempt was never verified");
  }
  STITCH_ASSIGN_OR_RETURN(evidence.sources, read_sources(attempt_dir));
  if (evidence.sources.empty()) evidence.notes.push_back("no program sources found");
  STITCH_TRY(read_context(attempt_dir, sources, evidence));
  if (sass && evidence.verify && evidence.verify->built &&
      fs::exists(evidence.verify->library_path, ec)) {
    auto text = sass->disassemble(evidence.verify->library_path);
    if (text.ok())
      evidence.sass = std::move(*text);
    else
      evidence.notes.push_back("SASS not inspected: " + text.error().message);
  }
  return evidence;
}

}  // namespace stitch::reward
