// The driver of the static source checks (see static_checks.h): the identifier rules of
// verify/checks/source_rules.h, then the structural checks (includes, strings, asm/PTX,
// namespace-scope initialisers, function definitions, stream joins, kernel launches).
#include "verify/checks/static_checks.h"

#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "verify/checks/library_audit.h"
#include "verify/checks/source_hooks.h"
#include "verify/checks/source_lexer.h"
#include "verify/checks/source_rules.h"
#include "verify/checks/source_structure.h"

namespace stitch {
namespace {

using namespace source_rules;

bool in_list(std::string_view word, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

struct FileScan {
  const SourceFile* source = nullptr;
  LexedSource lexed;
  SourceStructure structure;
  std::vector<AsmStatement> asm_statements;
  bool using_namespace_std = false;
  std::set<std::string> using_std_names;

  std::string_view text(size_t i) const {
    return i < lexed.tokens.size() ? lexed.text(lexed.tokens[i]) : std::string_view();
  }
  bool is(size_t i, std::string_view t) const {
    return i < lexed.tokens.size() && lexed.tokens[i].kind != TokenKind::string_literal &&
           lexed.tokens[i].kind != TokenKind::header_name && text(i) == t;
  }
  bool ident(size_t i) const {
    return i < lexed.tokens.size() && lexed.tokens[i].kind == TokenKind::identifier;
  }
  int line(size_t i) const {
    return lexed.line_of(i < lexed.tokens.size() ? lexed.tokens[i].offset : 0);
  }
};

class Collector {
 public:
  Collector(Track track, const SplitTf32Evidence& split, std::string split_where)
      : track_(track), split_(split), split_where_(std::move(split_where)) {}

  // Repeats of one rule in one file are counted, not listed: three examples say enough.
  void add(HackKind kind, bool fatal, const FileScan& f, int line, std::string_view matched,
           std::string_view why) {
    std::string detail = fmt::format("{}:{}: {}: {}", f.source->path, line, matched, why);
    if (!seen_.insert(std::make_tuple(kind, fatal, detail)).second) return;
    Repeats& r = repeats_[std::make_tuple(kind, fatal, f.source->path, std::string(why))];
    if (++r.count > kExamplesPerRule) return;
    r.last_index = findings_.size();
    findings_.push_back(HackFinding{kind, std::move(detail), fatal});
  }

  void add_precision(Precision p, const FileScan& f, int line, std::string_view matched,
                     std::string_view why) {
    if (allowed(p)) return;
    if (p == Precision::tf32_direct && split_.found) {
      add(HackKind::precision_downgrade, false, f, line, matched,
          fmt::format(
              "{}; allowed as split-precision 3xTF32 ({} at {}); the error-norm check decides", why,
              split_.how, split_where_));
      return;
    }
    add(HackKind::precision_downgrade, true, f, line, matched,
        fmt::format("{} on the {} track", why, enum_name(track_)));
  }

  std::vector<HackFinding> take() {
    for (const auto& [key, r] : repeats_)
      if (r.count > kExamplesPerRule)
        findings_[r.last_index].detail +=
            fmt::format(" (and {} more like it)", r.count - kExamplesPerRule);
    return std::move(findings_);
  }

 private:
  bool allowed(Precision p) const {
    switch (p) {
      case Precision::none:
        return true;
      case Precision::tf32_direct:
      case Precision::tf32_library:
        return track_ != Track::fp32;
      case Precision::half:
        return track_ == Track::bf16;
      case Precision::low_bits:
        return false;
    }
    return false;
  }

  Track track_;
  SplitTf32Evidence split_;
  std::string split_where_;
  struct Repeats {
    int count = 0;
    size_t last_index = 0;
  };
  static constexpr int kExamplesPerRule = 3;

  std::vector<HackFinding> findings_;
  std::set<std::tuple<HackKind, bool, std::string>> seen_;
  std::map<std::tuple<HackKind, bool, std::string, std::string>, Repeats> repeats_;
};

Precision precision_of(ReducedPrecision p) {
  switch (p) {
    case ReducedPrecision::tf32:
      return Precision::tf32_direct;
    case ReducedPrecision::half:
      return Precision::half;
    case ReducedPrecision::low_bits:
      return Precision::low_bits;
  }
  return Precision::low_bits;
}

// Whether token i has the form a rule asks for; `matched` gets the text to report.
bool form_matches(const FileScan& f, size_t i, Form form, std::string& matched) {
  const std::string_view name = f.text(i);
  const bool member = i > 0 && (f.is(i - 1, ".") || f.is(i - 1, "->"));
  const bool after_scope = i > 0 && f.is(i - 1, "::");
  const bool std_scope = after_scope && i > 1 && f.is(i - 2, "std");
  switch (form) {
    case Form::any:
      matched = name;
      return true;
    case Form::call:
    case Form::c_call:
      matched = std::string(std_scope ? "std::" : "") + std::string(name) + "()";
      if (!f.is(i + 1, "(") || member || (form == Form::c_call && std_scope)) return false;
      // `int system(int);` declares a function of that name; it calls nothing.
      if (i > 0 && f.ident(i - 1) &&
          !in_list(f.text(i - 1), {"return", "co_return", "throw", "else", "do", "case"}))
        return false;
      return !after_scope || std_scope || i < 2 || !f.ident(i - 2);
    case Form::std_name: {
      matched = "std::" + std::string(name);
      if (f.is(i + 1, "::")) return false;  // std::thread::hardware_concurrency
      if (std_scope) return true;
      if (member || after_scope) return false;
      if (!f.using_namespace_std && !f.using_std_names.count(std::string(name))) return false;
      if (i > 0 && f.ident(i - 1) &&
          !in_list(f.text(i - 1), {"return", "new", "throw", "co_await"}))
        return false;
      return f.ident(i + 1) || f.is(i + 1, "(") || f.is(i + 1, "{") || f.is(i + 1, "<");
    }
    case Form::scope:
      matched = std::string(name) + "::";
      if (i > 0 && f.is(i - 1, "namespace")) {
        matched = "namespace " + std::string(name);
        return true;
      }
      return f.is(i + 1, "::") && !member && !after_scope;
    case Form::scoped:
      matched = (i > 1 ? std::string(f.text(i - 2)) : std::string()) + "::" + std::string(name);
      return after_scope;
  }
  return false;
}

// Token pasting (`std::thr ## ead`, `__float2 ## half`) builds names no token shows: each
// `a ## b ## c` chain is matched against the rules as one identifier, whatever its form.
void check_pasted_identifiers(const FileScan& f, Collector& out) {
  const auto& tokens = f.lexed.tokens;
  for (size_t i = 0; i + 2 < tokens.size(); ++i) {
    if (!f.ident(i) || !f.is(i + 1, "##") || (i >= 1 && f.is(i - 1, "##"))) continue;
    std::string name(f.text(i));
    std::string shown(f.text(i));
    size_t k = i;
    while (k + 2 < tokens.size() && f.is(k + 1, "##") && f.ident(k + 2) && name.size() < 256) {
      name += f.text(k + 2);
      shown += " ## " + std::string(f.text(k + 2));
      k += 2;
    }
    for (const IdentifierRule& rule : kRules) {
      const bool hit =
          rule.prefix ? name.substr(0, rule.name.size()) == rule.name : name == rule.name;
      if (!hit) continue;
      const std::string why = std::string(rule.why) + " (name built by token pasting)";
      if (rule.precision != Precision::none)
        out.add_precision(rule.precision, f, f.line(i), shown, why);
      else
        out.add(rule.kind, rule.fatal, f, f.line(i), shown, why);
    }
    i = k;
  }
}

void check_identifiers(const FileScan& f, Collector& out) {
  const auto& tokens = f.lexed.tokens;
  bool in_message_directive = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].directive_start)
      in_message_directive = f.is(i + 1, "error") || f.is(i + 1, "warning");
    if (!tokens[i].in_directive) in_message_directive = false;
    if (in_message_directive || tokens[i].kind != TokenKind::identifier) continue;
    const std::string_view name = f.text(i);
    for (const IdentifierRule& rule : kRules) {
      const bool hit =
          rule.prefix ? name.substr(0, rule.name.size()) == rule.name : name == rule.name;
      std::string matched;
      if (!hit || !form_matches(f, i, rule.form, matched)) continue;
      if (rule.precision != Precision::none)
        out.add_precision(rule.precision, f, f.line(i), matched, rule.why);
      else
        out.add(rule.kind, rule.fatal, f, f.line(i), matched, rule.why);
    }
    for (std::string_view type : kPolicyWindowTypes)
      if (name == type)
        out.add(HackKind::l2_persistence, true, f, f.line(i), name,
                "sets an L2 access-policy window");
    // Paths in macro definitions or __has_include: torch/extension.h written as tokens.
    if (in_list(name, {"torch", "ATen", "c10", "pybind11", "caffe2"}) && f.is(i + 1, "/") &&
        (i == 0 || !f.ident(i - 1)))
      out.add(HackKind::calls_torch, true, f, f.line(i), std::string(name) + "/",
              "names a PyTorch header");
  }
  check_pasted_identifiers(f, out);
}

void check_includes(const FileScan& f, Collector& out) {
  for (size_t i = 0; i < f.lexed.tokens.size(); ++i) {
    if (f.lexed.tokens[i].kind != TokenKind::header_name) continue;
    const std::string_view header = f.text(i);
    const std::string_view path = header.size() >= 2 ? header.substr(1, header.size() - 2) : header;
    bool torch = path == "Python.h" || path.find("/Python.h") != std::string_view::npos;
    for (std::string_view dir : {"torch", "ATen", "c10", "caffe2", "pybind11", "THC", "TH"}) {
      const std::string d = std::string(dir) + "/";
      if (path.substr(0, d.size()) == d || path.find("/" + d) != std::string_view::npos)
        torch = true;
    }
    if (torch)
      out.add(HackKind::calls_torch, true, f, f.line(i), header,
              "includes a PyTorch/Python header");
  }
}

void check_strings(const FileScan& f, Collector& out) {
  struct StringRule {
    std::string_view needle;
    HackKind kind;
    std::string_view why;
  };
  static constexpr StringRule kStringRules[] = {
      {"libtorch", HackKind::calls_torch, "names a PyTorch library"},
      {"libc10", HackKind::calls_torch, "names a PyTorch library"},
      {"libpython", HackKind::calls_torch, "names the Python library"},
      {"libcaffe2", HackKind::calls_torch, "names a PyTorch library"},
      {"torch/", HackKind::calls_torch, "names a PyTorch header path"},
      {"ATen/", HackKind::calls_torch, "names a PyTorch header path"},
      {"c10/", HackKind::calls_torch, "names a PyTorch header path"},
      {"pybind11/", HackKind::calls_torch, "names a pybind11 header path"},
      {"Python.h", HackKind::calls_torch, "names the Python header"},
      {"/proc/", HackKind::reads_answer, "names a /proc path"},
      {"/dev/shm", HackKind::reads_answer, "names shared memory"},
      {".safetensors", HackKind::reads_answer, "names a tensor file"},
      {"slots.json", HackKind::reads_answer, "names a judge file"},
      {"runner.json", HackKind::tampers_judge, "names a runner file"},
      {"verify.json", HackKind::tampers_judge, "names a verdict file"},
      {"LD_PRELOAD", HackKind::tampers_judge, "names LD_PRELOAD"},
  };
  for (size_t i = 0; i < f.lexed.tokens.size(); ++i) {
    const Token& token = f.lexed.tokens[i];
    if (token.kind != TokenKind::string_literal) continue;
    const std::string& value = f.lexed.strings[token.string_index].value;
    for (const StringRule& rule : kStringRules)
      if (value.find(rule.needle) != std::string::npos)
        out.add(rule.kind, true, f, f.line(i), fmt::format("\"{}\"", value.substr(0, 80)),
                rule.why);
  }
}

void check_ptx(const FileScan& f, Collector& out) {
  for (const AsmStatement& statement : f.asm_statements) {
    const int line = f.line(statement.first_token);
    for (const PtxInstruction& instruction : find_reduced_precision_ptx(statement.ptx))
      out.add_precision(precision_of(instruction.precision), f, line, instruction.text,
                        "reduced-precision PTX");
    for (const std::string& hint : find_l2_cache_hints(statement.ptx))
      out.add(
          HackKind::l2_persistence, false, f, line, hint,
          "L2 residency hint: lines may survive the runner's flush, the runner's timing decides");
  }
  for (const auto& [token, chain] : find_ptx_in_code(f.lexed))
    for (const PtxInstruction& instruction : find_reduced_precision_ptx(chain))
      out.add_precision(precision_of(instruction.precision), f, f.line(token), instruction.text,
                        "reduced-precision PTX outside a string");
}

void check_attributes_and_pragmas(const FileScan& f, Collector& out) {
  const auto& tokens = f.lexed.tokens;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].directive_start && f.is(i + 1, "pragma") &&
        (f.is(i + 2, "omp") || f.is(i + 2, "acc")))
      out.add(HackKind::host_thread, true, f, f.line(i), fmt::format("#pragma {}", f.text(i + 2)),
              "runs host threads");
  }
  for (const HookFinding& hook : find_load_hooks(f.lexed, f.asm_statements))
    out.add(hook.kind, true, f, f.line(hook.token), hook.matched, hook.why);
  for (const HookFinding& hook : find_raw_syscalls(f.lexed, f.asm_statements))
    out.add(hook.kind, true, f, f.line(hook.token), hook.matched, hook.why);
  for (const DynamicInit& init : f.structure.dynamic_inits)
    out.add(HackKind::init_side_effect, true, f, f.line(init.token),
            init.name.empty() ? "namespace-scope object" : init.name,
            fmt::format("namespace-scope object initialised when the library is loaded ({})",
                        init.reason));
  for (const FunctionBody& fn : f.structure.functions)
    if (fn.at_namespace_scope && shadows_runtime_function(fn.name))
      out.add(HackKind::tampers_judge, true, f, f.line(fn.name_token), fn.name,
              "defines a function that shadows the runtime's (timing, synchronisation or error "
              "checks)");
}

// Kernel launches that name no stream run on the default stream, not the caller's.
void check_launches(const FileScan& f, Collector& out) {
  const auto& tokens = f.lexed.tokens;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!f.is(i, "<<<")) continue;
    int depth = 0, commas = 0;
    size_t k = i + 1;
    for (; k < tokens.size() && k - i < 256 && !f.is(k, ">>>") && !f.is(k, ";"); ++k) {
      if (f.is(k, "(") || f.is(k, "[") || f.is(k, "{")) ++depth;
      if (f.is(k, ")") || f.is(k, "]") || f.is(k, "}")) --depth;
      if (depth == 0 && f.is(k, ",")) ++commas;
    }
    if (k < tokens.size() && f.is(k, ">>>") && commas < 3)
      out.add(HackKind::side_stream, false, f, f.line(i), "<<<...>>>",
              "kernel launched without a stream runs on the default stream, not the caller's");
  }
}

}  // namespace

std::vector<HackFinding> check_sources(const std::vector<SourceFile>& sources, Track track) {
  std::vector<FileScan> files(sources.size());
  std::set<std::string> classes_with_constructors;
  for (size_t i = 0; i < sources.size(); ++i) {
    files[i].source = &sources[i];
    files[i].lexed = lex_source(sources[i].text);
    const SourceStructure first = analyse_structure(files[i].lexed);
    classes_with_constructors.insert(first.classes_with_constructors.begin(),
                                     first.classes_with_constructors.end());
  }
  std::vector<const LexedSource*> lexed;
  std::vector<std::vector<AsmStatement>> asm_statements;
  for (FileScan& f : files) {
    f.structure = analyse_structure(f.lexed, classes_with_constructors);
    f.asm_statements = find_asm_statements(f.lexed, f.structure.functions);
    for (size_t i = 0; i + 2 < f.lexed.tokens.size(); ++i) {
      if (f.is(i, "using") && f.is(i + 1, "namespace") && f.is(i + 2, "std"))
        f.using_namespace_std = true;
      if (f.is(i, "using") && f.is(i + 1, "std") && f.is(i + 2, "::") && f.ident(i + 3))
        f.using_std_names.insert(std::string(f.text(i + 3)));
    }
    lexed.push_back(&f.lexed);
    asm_statements.push_back(f.asm_statements);
  }
  const SplitTf32Evidence split = find_split_tf32(lexed, asm_statements);
  std::string split_where;
  if (split.found) {
    const FileScan& f = files[split.file_index];
    split_where = fmt::format("{}:{}", f.source->path, f.line(split.token));
  }
  Collector out(track, split, split_where);

  bool joins = false, records = false, fma_math = false, numerical_notes = false;
  for (const FileScan& f : files) {
    for (size_t i = 0; i < f.lexed.tokens.size(); ++i) {
      if (!f.ident(i)) continue;
      const std::string_view w = f.text(i);
      joins = joins || w == "cudaStreamWaitEvent" || w == "cuStreamWaitEvent";
      records = records || w == "cudaEventRecord" || w == "cudaEventRecordWithFlags" ||
                w == "cuEventRecord";
      fma_math = fma_math || w == "CUDNN_FMA_MATH";
      numerical_notes = numerical_notes || w == "CUDNN_NUMERICAL_NOTE_TENSOR_CORE";
    }
  }
  for (const FileScan& f : files) {
    check_includes(f, out);
    check_identifiers(f, out);
    check_strings(f, out);
    check_ptx(f, out);
    check_attributes_and_pragmas(f, out);
    check_launches(f, out);
    for (size_t i = 0; i < f.lexed.tokens.size(); ++i) {
      if (!f.ident(i)) continue;
      const std::string_view w = f.text(i);
      if (in_list(w,
                  {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
                   "cuStreamCreate", "cuStreamCreateWithPriority"})) {
        out.add(
            HackKind::side_stream, false, f, f.line(i), w,
            joins && records
                ? "creates a stream; joined into the caller's with cudaEventRecord + "
                  "cudaStreamWaitEvent"
                : "creates a stream that is never joined into the caller's (no cudaEventRecord + "
                  "cudaStreamWaitEvent): its work may escape the caller's stream");
      }
      if (track == Track::fp32 && !fma_math && w.substr(0, 16) == "cudnnConvolution" &&
          w.find("Forward") != std::string_view::npos)
        out.add(HackKind::precision_downgrade, false, f, f.line(i), w,
                "cuDNN may run FP32 convolutions in TF32 unless the math type is CUDNN_FMA_MATH; "
                "the error-norm "
                "check decides");
      if (track == Track::fp32 && !numerical_notes && w == "cudnnBackendExecute")
        out.add(HackKind::precision_downgrade, false, f, f.line(i), w,
                "cuDNN graph engines may use TF32 on FP32 data unless engines with "
                "CUDNN_NUMERICAL_NOTE_TENSOR_CORE are excluded; the error-norm check decides");
    }
  }
  return out.take();
}

}  // namespace stitch
