// Scope walking, inline-asm and PTX parsing, and the 3xTF32 recogniser behind the static checks.
// Every loop is bounded by the token count; unbalanced brackets end a construct at end of file.
#include "verify/checks/source_structure.h"

#include "verify/checks/source_tokens.h"

#include <algorithm>
#include <optional>

namespace stitch {
namespace {

using namespace source_detail;

// PTX statements with escapes turned into spaces, split at ';', '{' and '}'.
std::vector<std::string> ptx_statements(std::string_view ptx) {
  std::string clean;
  for (size_t i = 0; i < ptx.size(); ++i) {
    if (ptx[i] == '\\' && i + 1 < ptx.size()) {
      clean.push_back(' ');
      ++i;
    } else {
      clean.push_back(ptx[i]);
    }
  }
  std::vector<std::string> out;
  std::string current;
  for (char c : clean) {
    if (c == ';' || c == '{' || c == '}') {
      out.push_back(current);
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  out.push_back(current);
  return out;
}

// The opcode with modifiers of one PTX statement: skips a predicate guard and labels.
std::string ptx_opcode(std::string_view statement) {
  size_t i = 0;
  auto skip_space = [&] {
    while (i < statement.size() && (statement[i] == ' ' || statement[i] == '\t' ||
                                    statement[i] == '\n' || statement[i] == '\r'))
      ++i;
  };
  auto word = [&] {
    const size_t start = i;
    while (i < statement.size() && statement[i] != ' ' && statement[i] != '\t' &&
           statement[i] != '\n' && statement[i] != '\r' && statement[i] != ',')
      ++i;
    return std::string(statement.substr(start, i - start));
  };
  for (int guard = 0; guard < 8; ++guard) {
    skip_space();
    std::string w = word();
    if (w.empty()) return {};
    if (w[0] == '@' || w.back() == ':') continue;  // predicate guard or label
    return w;
  }
  return {};
}

std::vector<std::string> split_dots(std::string_view opcode) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= opcode.size(); ++i) {
    if (i == opcode.size() || opcode[i] == '.') {
      parts.emplace_back(opcode.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// The least tolerated reduced precision among an opcode's modifiers, if any.
std::optional<ReducedPrecision> classify_opcode(std::string_view opcode) {
  const std::vector<std::string> parts = split_dots(opcode);
  if (parts.size() < 2) return std::nullopt;
  const bool matrix_op = in_list(parts[0], {"mma", "wmma", "wgmma", "tcgen05", "dp4a", "dp2a"});
  std::optional<ReducedPrecision> worst;
  auto raise = [&](ReducedPrecision p) {
    if (!worst || static_cast<int>(p) > static_cast<int>(*worst)) worst = p;
  };
  for (size_t k = 1; k < parts.size(); ++k) {
    const std::string& p = parts[k];
    if (p == "tf32")
      raise(ReducedPrecision::tf32);
    else if (in_list(p, {"f16", "f16x2", "bf16", "bf16x2"}))
      raise(ReducedPrecision::half);
    else if (in_list(p, {"e4m3",     "e5m2",      "e4m3x2",       "e5m2x2",     "e2m1",
                         "e2m1x2",   "e3m2",      "e3m2x2",       "e2m3",       "e2m3x2",
                         "ue8m0",    "ue8m0x2",   "ue4m3",        "f8f6f4",     "mxf4",
                         "mxf8f6f4", "mxf4nvf4",  "kind::f8f6f4", "kind::mxf4", "kind::mxf8f6f4",
                         "kind::i8", "kind::f16", "kind::tf32"}))
      raise(p == "kind::tf32"  ? ReducedPrecision::tf32
            : p == "kind::f16" ? ReducedPrecision::half
                               : ReducedPrecision::low_bits);
    else if (matrix_op && in_list(p, {"s8", "u8", "s4", "u4", "b1"}))
      raise(ReducedPrecision::low_bits);
  }
  return worst;
}

}  // namespace

std::vector<PtxInstruction> find_reduced_precision_ptx(std::string_view ptx) {
  std::vector<PtxInstruction> out;
  for (const std::string& statement : ptx_statements(ptx)) {
    const std::string opcode = ptx_opcode(statement);
    if (auto precision = classify_opcode(opcode)) out.push_back(PtxInstruction{opcode, *precision});
  }
  return out;
}

bool ptx_rounds_to_tf32(std::string_view ptx) {
  for (const std::string& statement : ptx_statements(ptx)) {
    const std::vector<std::string> parts = split_dots(ptx_opcode(statement));
    if (!parts.empty() && parts[0] == "cvt" &&
        std::find(parts.begin(), parts.end(), "tf32") != parts.end())
      return true;
  }
  return false;
}

std::vector<std::string> find_l2_cache_hints(std::string_view ptx) {
  std::vector<std::string> out;
  for (std::string_view hint :
       {"evict_last", "evict_unchanged", "createpolicy", "L2::cache_hint", "applypriority"})
    if (ptx.find(hint) != std::string_view::npos) out.emplace_back(hint);
  return out;
}

std::vector<AsmStatement> find_asm_statements(const LexedSource& source,
                                              const std::vector<FunctionBody>& functions) {
  const Tokens t(source);
  std::vector<AsmStatement> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t.ident(i) || !in_list(t.text(i), {"asm", "__asm__", "__asm"})) continue;
    size_t j = i + 1;
    while (t.ident(j) && in_list(t.text(j), {"volatile", "__volatile__", "inline", "goto"}))
      ++j;
    if (!t.is(j, "(")) continue;
    const size_t close = t.match_forward(j);
    const size_t end = close == npos ? t.size() : close;
    AsmStatement statement;
    statement.first_token = i;
    statement.last_token = end;
    statement.enclosing_function = enclosing_function(functions, i);
    int section = 0;
    int depth = 0;
    for (size_t k = j + 1; k < end; ++k) {
      if (t.is(k, "(") || t.is(k, "[")) ++depth;
      if (t.is(k, ")") || t.is(k, "]")) --depth;
      if (depth == 0 && (t.is(k, ":") || t.is(k, "::"))) {  // "::" when a section is empty
        section += t.is(k, "::") ? 2 : 1;
        continue;
      }
      if (section == 0 && t.kind(k) == TokenKind::string_literal)
        statement.ptx += source.strings[source.tokens[k].string_index].value;
      // An operand: "constraint" ( expr ); its `(` has just raised depth to 1.
      if ((section == 1 || section == 2) && t.is(k, "(") && depth == 1 && k > 0 &&
          t.kind(k - 1) == TokenKind::string_literal) {
        const size_t operand_close = t.match_forward(k);
        const size_t operand_end = operand_close == npos ? end : operand_close;
        if (section == 1) {
          for (size_t m = k + 1; m < operand_end; ++m)
            if (t.ident(m)) statement.output_names.emplace_back(t.text(m));
        } else {
          statement.input_ranges.emplace_back(k + 1, operand_end);
        }
      }
    }
    out.push_back(std::move(statement));
    i = end;
  }
  return out;
}

std::vector<std::pair<size_t, std::string>> find_ptx_in_code(const LexedSource& source) {
  const Tokens t(source);
  std::vector<std::pair<size_t, std::string>> out;
  for (size_t i = 0; i + 2 < t.size(); ++i) {
    if (!t.ident(i) || !in_list(t.text(i), {"cvt", "mma", "wmma", "wgmma", "tcgen05"})) continue;
    if (i > 0 && (t.is(i - 1, ".") || t.is(i - 1, "->") || t.is(i - 1, "::"))) continue;
    std::string chain(t.text(i));
    size_t k = i;
    while (t.adjacent(k) && t.is(k + 1, ".") && t.adjacent(k + 1) && k + 2 < t.size() &&
           (t.ident(k + 2) || t.kind(k + 2) == TokenKind::number)) {
      chain += ".";
      chain += t.text(k + 2);
      k += 2;
    }
    if (k > i) out.emplace_back(i, std::move(chain));
    i = k;
  }
  return out;
}

std::string enclosing_function(const std::vector<FunctionBody>& functions, size_t token) {
  // Recorded bodies never nest (a body's inner braces are not declarative scopes) and come in
  // source order, so the candidate is the last one opening before `token`.
  auto it = std::lower_bound(functions.begin(), functions.end(), token,
                             [](const FunctionBody& f, size_t t) { return f.open_brace < t; });
  if (it == functions.begin()) return {};
  --it;
  return token < it->close_brace ? it->name : std::string();
}

namespace {

// Identifiers of the lvalue assigned by the `=` at `eq` (a, a[i], s.a[i] ...), skipping subscripts.
std::vector<std::string> lvalue_names(const Tokens& t, size_t eq) {
  std::vector<std::string> names;
  size_t k = eq;
  while (k > 0) {
    const size_t prev = k - 1;
    if (t.is(prev, "]")) {
      const size_t open = t.match_backward(prev);
      if (open == npos) break;
      k = open;
    } else if (t.ident(prev)) {
      names.emplace_back(t.text(prev));
      if (prev > 0 && (t.is(prev - 1, ".") || t.is(prev - 1, "->"))) {
        k = prev - 1;
      } else {
        break;
      }
    } else {
      break;
    }
  }
  return names;
}

bool is_plain_assignment(const Tokens& t, size_t k) {
  if (!t.is(k, "=") || t.is(k + 1, "=")) return false;
  if (k > 0 && t.adjacent(k - 1) &&
      in_list(t.text(k - 1), {"=", "!", "<", ">", "+", "-", "*", "/", "%", "&", "|", "^"}))
    return false;
  return true;
}

struct RoundingSite {
  size_t file = 0;
  size_t token = 0;
  std::vector<std::pair<size_t, size_t>> inputs;  // token ranges
  std::vector<std::string> outputs;
};

bool contains_name(const Tokens& t, size_t a, size_t b, const std::set<std::string>& names) {
  for (size_t k = a; k < b && k < t.size(); ++k)
    if (t.ident(k) && names.count(std::string(t.text(k)))) return true;
  return false;
}

// A `-` in [a, b) followed, later in the range, by one of `names`.
bool subtracts_one_of(const Tokens& t, size_t a, size_t b, const std::set<std::string>& names) {
  bool minus = false;
  for (size_t k = a; k < b && k < t.size(); ++k) {
    if (t.is(k, "-"))
      minus = true;
    else if (minus && t.ident(k) && names.count(std::string(t.text(k))))
      return true;
  }
  return false;
}

}  // namespace

SplitTf32Evidence find_split_tf32(const std::vector<const LexedSource*>& files,
                                  const std::vector<std::vector<AsmStatement>>& asm_statements) {
  SplitTf32Evidence evidence;
  std::set<std::string> rounding_functions = {"__float_to_tf32"};
  std::vector<RoundingSite> sites;
  for (size_t f = 0; f < files.size(); ++f) {
    const Tokens t(*files[f]);
    for (size_t k = 0; k < t.size(); ++k) {
      if (t.ident(k) &&
          in_list(t.text(k), {"OpMultiplyAddFastF32", "OpMultiplyAddComplexFastF32"})) {
        evidence = SplitTf32Evidence{true, f, k, "CUTLASS " + std::string(t.text(k))};
        return evidence;
      }
    }
    for (const AsmStatement& statement : asm_statements[f]) {
      if (!ptx_rounds_to_tf32(statement.ptx)) continue;
      if (!statement.enclosing_function.empty())
        rounding_functions.insert(statement.enclosing_function);
      sites.push_back(
          RoundingSite{f, statement.first_token, statement.input_ranges, statement.output_names});
    }
  }
  for (size_t f = 0; f < files.size(); ++f) {
    const Tokens t(*files[f]);
    for (size_t k = 0; k + 1 < t.size(); ++k) {
      if (!t.ident(k) || !rounding_functions.count(std::string(t.text(k))) || !t.is(k + 1, "("))
        continue;
      const size_t close = t.match_forward(k + 1);
      if (close == npos) continue;
      RoundingSite site{f, k, {{k + 2, close}}, {}};
      size_t before = k;
      while (before >= 2 && t.is(before - 1, "::") && t.ident(before - 2))
        before -= 2;
      if (before > 0 && is_plain_assignment(t, before - 1))
        site.outputs = lvalue_names(t, before - 1);
      sites.push_back(std::move(site));
    }
  }
  std::set<std::string> rounded;
  for (const RoundingSite& site : sites)
    rounded.insert(site.outputs.begin(), site.outputs.end());
  if (rounded.empty()) return evidence;
  // One level of indirection: r = x - big; small = tf32(r).
  std::set<std::string> residuals;
  for (size_t f = 0; f < files.size(); ++f) {
    const Tokens t(*files[f]);
    for (size_t k = 0; k < t.size(); ++k) {
      if (!is_plain_assignment(t, k)) continue;
      size_t end = k + 1;
      int depth = 0;
      constexpr size_t kMaxExpression = 256;  // bounds the pass on hostile input
      while (end < t.size() && end - k < kMaxExpression &&
             !(depth == 0 && (t.is(end, ";") || t.is(end, ",") || t.is(end, ")")))) {
        if (t.is(end, "(") || t.is(end, "[")) ++depth;
        if (t.is(end, ")") || t.is(end, "]")) --depth;
        ++end;
      }
      if (subtracts_one_of(t, k + 1, end, rounded))
        for (const std::string& name : lvalue_names(t, k))
          residuals.insert(name);
    }
  }
  for (const RoundingSite& site : sites) {
    const Tokens t(*files[site.file]);
    for (const auto& [a, b] : site.inputs) {
      if (subtracts_one_of(t, a, b, rounded) || contains_name(t, a, b, residuals)) {
        evidence.found = true;
        evidence.file_index = site.file;
        evidence.token = site.token;
        evidence.how = std::string(t.text(site.token)) + " of a residual v - tf32(v)";
        return evidence;
      }
    }
  }
  return evidence;
}

}  // namespace stitch
