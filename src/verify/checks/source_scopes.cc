// The scope walker behind analyse_structure (verify/checks/source_structure.h): namespace, extern
// "C", class and function scopes; constructors of classes; namespace-scope objects whose
// initialisation runs code when the library is loaded (HACKS.md row 27).
#include <optional>
#include <set>
#include <string>

#include "verify/checks/source_structure.h"
#include "verify/checks/source_tokens.h"

namespace stitch {
namespace {

using namespace source_detail;

bool is_class_key(std::string_view w) {
  return in_list(w, {"struct", "class", "union", "enum"});
}

// Attribute-like constructs whose parentheses are not a parameter list or an initializer.
bool is_attribute_word(std::string_view w) {
  return in_list(w, {"__attribute__", "__declspec", "__align__", "alignas", "__launch_bounds__",
                     "__cluster_dims__", "__maxnreg__", "__grid_constant__", "decltype"});
}

// Calls that run no user code at load: casts, math, vector makers, standard containers' ctors.
// stitch: table
bool is_harmless_callee(std::string_view w) {
  if (w.substr(0, 10) == "__builtin_") return true;
  return in_list(w, {"sizeof",
                     "alignof",
                     "decltype",
                     "noexcept",
                     "static_cast",
                     "reinterpret_cast",
                     "const_cast",
                     "dynamic_cast",
                     "bit_cast",
                     "int",
                     "float",
                     "double",
                     "char",
                     "short",
                     "long",
                     "unsigned",
                     "signed",
                     "bool",
                     "size_t",
                     "int8_t",
                     "int16_t",
                     "int32_t",
                     "int64_t",
                     "uint8_t",
                     "uint16_t",
                     "uint32_t",
                     "uint64_t",
                     "intptr_t",
                     "uintptr_t",
                     "dim3",
                     "make_float2",
                     "make_float3",
                     "make_float4",
                     "make_int2",
                     "make_int3",
                     "make_int4",
                     "make_uint2",
                     "make_uint3",
                     "make_uint4",
                     "make_double2",
                     "sqrt",
                     "sqrtf",
                     "exp",
                     "expf",
                     "log",
                     "logf",
                     "log2",
                     "log2f",
                     "pow",
                     "powf",
                     "sin",
                     "sinf",
                     "cos",
                     "cosf",
                     "tan",
                     "tanf",
                     "tanh",
                     "tanhf",
                     "acos",
                     "acosf",
                     "asin",
                     "asinf",
                     "atan",
                     "atanf",
                     "atan2",
                     "fabs",
                     "fabsf",
                     "abs",
                     "ceil",
                     "ceilf",
                     "floor",
                     "floorf",
                     "round",
                     "roundf",
                     "fmin",
                     "fmax",
                     "fminf",
                     "fmaxf",
                     "min",
                     "max",
                     "infinity",
                     "quiet_NaN",
                     "signaling_NaN",
                     "epsilon",
                     "lowest",
                     "denorm_min",
                     "string",
                     "string_view",
                     "vector",
                     "array",
                     "pair",
                     "tuple",
                     "mutex",
                     "atomic",
                     "once_flag",
                     "optional",
                     "map",
                     "unordered_map",
                     "set",
                     "unordered_set",
                     "if",
                     "while",
                     "for",
                     "switch",
                     "return"});
}

bool is_type_word(std::string_view w, const std::set<std::string>& classes) {
  if (w.size() > 2 && w.substr(w.size() - 2) == "_t") return true;
  return classes.count(std::string(w)) != 0 ||
         in_list(w, {"void", "int", "float", "double", "char", "short", "long", "unsigned",
                     "signed", "bool", "auto", "dim3", "cudaStream_t", "cudaEvent_t"});
}

class ScopeWalker {
 public:
  ScopeWalker(const LexedSource& source, const std::set<std::string>& known)
      : t_(source), classes_(known) {}

  SourceStructure run() {
    // Class constructors first (a file may use a class before... it never does in C++, but a
    // header analysed as part of the program may declare it): two passes keep it simple.
    walk(/*collect_inits=*/false);
    for (const std::string& c : out_.classes_with_constructors)
      classes_.insert(c);
    out_.functions.clear();
    walk(/*collect_inits=*/true);
    return std::move(out_);
  }

 private:
  enum class Kind { file, ns, class_body, function_body, other };
  struct Scope {
    Kind kind;
    std::string name;
    size_t stmt_start = npos;
    int function_index = -1;
  };

  void walk(bool collect_inits) {
    collect_inits_ = collect_inits;
    std::vector<Scope> stack{Scope{Kind::file, "", npos, -1}};
    for (size_t i = 0; i < t_.size(); ++i) {
      if (t_.directive(i)) continue;
      Scope& top = stack.back();
      const bool declarative =
          top.kind == Kind::file || top.kind == Kind::ns || top.kind == Kind::class_body;
      if (declarative && top.stmt_start == npos && !t_.is(i, ";") && !t_.is(i, "}"))
        top.stmt_start = i;
      if (t_.is(i, "{")) {
        stack.push_back(declarative ? open_scope(top, i) : Scope{Kind::other, "", npos, -1});
      } else if (t_.is(i, "}")) {
        if (stack.size() == 1) continue;  // unbalanced
        const Scope closed = stack.back();
        stack.pop_back();
        if (closed.function_index >= 0) out_.functions[closed.function_index].close_brace = i;
        if (closed.kind == Kind::ns || closed.kind == Kind::function_body)
          stack.back().stmt_start = npos;
      } else if (t_.is(i, ";") && declarative) {
        if (top.stmt_start != npos) {
          if (top.kind == Kind::class_body)
            note_constructor(top.name, top.stmt_start, i);
          else if (collect_inits_)
            analyse_declaration(top.stmt_start, i);
        }
        top.stmt_start = npos;
      }
    }
  }

  // First index in [a, b) after a template header, typedef, storage words and attributes.
  size_t skip_prefix(size_t a, size_t b) const {
    size_t k = a;
    while (k < b) {
      if (t_.is(k, "template") && t_.is(k + 1, "<")) {
        const size_t close = t_.match_forward(k + 1);
        if (close == npos || close >= b) return b;
        k = close + 1;
      } else if (t_.ident(k) &&
                 in_list(t_.text(k), {"typedef", "static", "inline", "extern", "__device__",
                                      "__host__", "__constant__", "__managed__", "__shared__",
                                      "const", "volatile", "thread_local"})) {
        ++k;
      } else if (t_.kind(k) == TokenKind::string_literal && k > a && t_.is(k - 1, "extern")) {
        ++k;
      } else if (t_.ident(k) && is_attribute_word(t_.text(k)) && t_.is(k + 1, "(")) {
        const size_t close = t_.match_forward(k + 1);
        k = close == npos ? b : close + 1;
      } else if (t_.is(k, "[") && t_.is(k + 1, "[")) {
        const size_t close = t_.match_forward(k);
        k = close == npos ? b : close + 1;
      } else {
        break;
      }
    }
    return k;
  }

  // Index of the first top-level (outside () [] {}) token in [a, b) equal to `what`, or npos. A
  // `=` must be a plain assignment (not ==, <=, operator=).
  size_t find_top_level(size_t a, size_t b, std::string_view what) const {
    int depth = 0;
    for (size_t k = a; k < b; ++k) {
      if (t_.is(k, "(") || t_.is(k, "[") || t_.is(k, "{")) {
        if (depth == 0 && t_.is(k, what)) return k;
        ++depth;
      } else if (t_.is(k, ")") || t_.is(k, "]") || t_.is(k, "}")) {
        --depth;
      } else if (depth == 0 && t_.is(k, what)) {
        if (what != "=") return k;
        const bool compound =
            k > a && t_.adjacent(k - 1) &&
            in_list(t_.text(k - 1), {"=", "!", "<", ">", "+", "-", "*", "/", "%", "&", "|", "^"});
        const bool operator_name =
            k > a && (t_.is(k - 1, "operator") || (k > a + 1 && t_.is(k - 2, "operator")));
        if (!compound && !operator_name && !t_.is(k + 1, "=")) return k;
      }
    }
    return npos;
  }

  Scope open_scope(const Scope& parent, size_t brace) {
    const size_t a = parent.stmt_start;
    // Real declarations are short; a huge "statement" is noise, and rescanning it per brace would
    // make the pass quadratic.
    constexpr size_t kMaxStatement = 4096;
    if (a == npos || a >= brace || brace - a > kMaxStatement)
      return Scope{Kind::other, "", npos, -1};
    for (size_t k = a; k < brace; ++k)
      if (t_.is(k, "namespace")) return Scope{Kind::ns, "", npos, -1};
    if (brace == a + 2 && t_.is(a, "extern") && t_.kind(a + 1) == TokenKind::string_literal)
      return Scope{Kind::ns, "", npos, -1};
    const size_t body = skip_prefix(a, brace);
    if (find_top_level(body, brace, "=") != npos) return Scope{Kind::other, "", npos, -1};
    std::string function_name;
    if (size_t name = function_name_before(a, brace); name != npos) {
      if (parent.kind == Kind::class_body) note_constructor(parent.name, a, brace);
      out_.functions.push_back(FunctionBody{std::string(t_.text(name)), name, brace, t_.size(),
                                            parent.kind != Kind::class_body});
      return Scope{Kind::function_body, "", npos, static_cast<int>(out_.functions.size() - 1)};
    }
    if (body < brace && t_.ident(body) && is_class_key(t_.text(body))) {
      size_t k = body + 1;
      if (t_.is(k, "class") || t_.is(k, "struct")) ++k;  // enum class
      k = skip_prefix(k, brace);
      return Scope{Kind::class_body, t_.ident(k) ? std::string(t_.text(k)) : std::string(), npos,
                   -1};
    }
    return Scope{Kind::other, "", npos, -1};
  }

  // For a body opening at `brace`, the token naming the function, or npos if it is no function.
  size_t function_name_before(size_t a, size_t brace) const {
    size_t k = brace;
    for (int guard = 0; guard < 16 && k > a; ++guard) {
      const size_t prev = k - 1;
      if (t_.ident(prev) &&
          in_list(t_.text(prev), {"const", "noexcept", "override", "final", "mutable", "volatile",
                                  "__restrict__", "throw"})) {
        k = prev;
        continue;
      }
      if (t_.is(prev, ")")) {
        const size_t open = t_.match_backward(prev);
        if (open == npos || open <= a) return npos;
        const size_t name = open - 1;
        if (t_.ident(name) &&
            in_list(t_.text(name), {"noexcept", "throw", "__attribute__", "__launch_bounds__"})) {
          k = name;
          continue;
        }
        if (t_.ident(name) && !in_list(t_.text(name), {"if", "for", "while", "switch", "return",
                                                       "sizeof", "decltype", "catch"}))
          return name;
        for (size_t back = name + 1; back-- > a && back + 3 >= name;)
          if (t_.is(back, "operator")) return back;
        return npos;
      }
      break;
    }
    // Trailing return type: f(...) -> T {
    const size_t arrow = find_top_level(a, brace, "->");
    if (arrow != npos && arrow > a && t_.is(arrow - 1, ")")) return function_name_before(a, arrow);
    return npos;
  }

  // In class `cls`, a statement [a, b) that declares or defines a user-provided constructor.
  void note_constructor(const std::string& cls, size_t a, size_t b) {
    if (cls.empty()) return;
    size_t k = a;
    while (k < b) {
      if (t_.ident(k) && in_list(t_.text(k), {"public", "private", "protected"}) &&
          t_.is(k + 1, ":")) {
        k += 2;  // an access specifier starts the statement
      } else if (t_.ident(k) && in_list(t_.text(k), {"explicit", "inline", "__host__", "__device__",
                                                     "__forceinline__"})) {
        ++k;
      } else {
        break;
      }
    }
    if (k >= b || t_.text(k) != cls || !t_.is(k + 1, "(")) return;
    for (size_t m = a; m < b; ++m)
      if (t_.is(m, "constexpr") || t_.is(m, "consteval")) return;
    const size_t close = t_.match_forward(k + 1);
    if (close != npos && t_.is(close + 1, "=") &&
        (t_.is(close + 2, "default") || t_.is(close + 2, "delete")))
      return;
    out_.classes_with_constructors.insert(cls);
  }

  // Whether the comma-separated parts of (a, b) read as parameter declarations.
  bool looks_like_parameters(size_t a, size_t b) const {
    if (a >= b) return true;  // T f(); declares a function
    size_t part = a;
    int depth = 0;
    for (size_t k = a; k <= b; ++k) {
      if (k < b && (t_.is(k, "(") || t_.is(k, "[") || t_.is(k, "{") || t_.is(k, "<"))) ++depth;
      if (k < b && (t_.is(k, ")") || t_.is(k, "]") || t_.is(k, "}") || t_.is(k, ">"))) --depth;
      if (k < b && !(depth == 0 && t_.is(k, ","))) continue;
      if (part >= k) return false;
      for (size_t m = part; m < k; ++m) {
        if (t_.literal(m) || t_.is(m, "+") || t_.is(m, "-") || t_.is(m, "/") || t_.is(m, "%") ||
            t_.is(m, "?") || t_.is(m, "!") || t_.is(m, ".") || t_.is(m, "->") || t_.is(m, "("))
          return false;
      }
      if (k - part == 1 && !(t_.ident(part) && is_type_word(t_.text(part), classes_))) return false;
      part = k + 1;
    }
    return true;
  }

  // Why evaluating tokens [a, b) at load time runs code, or "".
  std::string code_run_by(size_t a, size_t b) const {
    for (size_t k = a; k < b; ++k) {
      if (t_.is(k, "new")) return "allocates with new";
      if (t_.is(k, "}") && t_.is(k + 1, "(")) return "runs a lambda";
      if (!t_.ident(k)) continue;
      const std::string_view w = t_.text(k);
      if (classes_.count(std::string(w)) && (t_.is(k + 1, "(") || t_.is(k + 1, "{")))
        return "constructs " + std::string(w) + ", which has a user-provided constructor";
      size_t call = k + 1;
      if (t_.is(call, "<")) {
        const size_t close = t_.match_forward(call);
        call = close == npos ? npos : close + 1;
      }
      if (call != npos && t_.is(call, "(") && !is_harmless_callee(w))
        return "calls " + std::string(w) + "()";
    }
    return {};
  }

  // A namespace-scope statement [a, b): records it in dynamic_inits when initialising what it
  // declares runs code at load time.
  void analyse_declaration(size_t a, size_t b) {
    if (b - a > 4096) b = a + 4096;  // see open_scope
    size_t k = skip_prefix(a, b);
    if (k >= b) return;
    if (t_.ident(k) && is_class_key(t_.text(k))) {
      size_t open = k + 1;
      while (open < b && !t_.is(open, "{"))
        ++open;
      if (open < b) return analyse_class_declaration(a, k, open, b);
      k = k + 1;  // elaborated type: struct S x;
    }
    if (t_.ident(k) && in_list(t_.text(k), {"typedef", "using", "template", "static_assert",
                                            "namespace", "friend", "asm", "__asm__", "__asm"}))
      return;
    for (size_t m = a; m < b; ++m)
      if (t_.ident(m) && in_list(t_.text(m), {"constexpr", "constinit", "consteval"})) return;
    std::optional<Declarator> declarator = split_declarator(a, k, b);
    if (!declarator) return;
    const std::string name = declared_name(k, declarator->decl_end);
    std::string reason = code_run_by(declarator->init_begin, declarator->init_end);
    if (reason.empty()) reason = constructed_class(k, declarator->decl_end, name);
    if (!reason.empty()) out_.dynamic_inits.push_back(DynamicInit{a, name, reason});
  }

  // struct S {...} declarators;  only the declarators matter, and S's constructors. `k` is the
  // class key, `open` the brace of the body.
  void analyse_class_declaration(size_t a, size_t k, size_t open, size_t b) {
    size_t name = k + 1;
    if (t_.is(name, "class") || t_.is(name, "struct")) ++name;
    name = skip_prefix(name, open);
    const std::string cls = t_.ident(name) ? std::string(t_.text(name)) : std::string();
    const size_t close = t_.match_forward(open);
    if (close == npos || close + 1 >= b) return;
    const size_t eq = find_top_level(close + 1, b, "=");
    std::string reason = eq == npos ? std::string() : code_run_by(eq + 1, b);
    if (reason.empty() && classes_.count(cls))
      reason = "type " + cls + " has a user-provided constructor";
    for (size_t m = close + 1; m < b && !reason.empty(); ++m)
      if (t_.ident(m)) {
        out_.dynamic_inits.push_back(DynamicInit{a, std::string(t_.text(m)), reason});
        break;
      }
  }

  // Where a declaration [k, b) ends and its initialiser lies: `T x = init`, `T x(args)`,
  // `T x{args}`, or no initialiser (an empty range at b).
  struct Declarator {
    size_t decl_end;
    size_t init_begin;
    size_t init_end;
  };

  // nullopt for what initialises nothing: an extern declaration, a function declaration, or
  // brackets that do not close.
  std::optional<Declarator> split_declarator(size_t a, size_t k, size_t b) const {
    const size_t eq = find_top_level(k, b, "=");
    if (eq != npos) return Declarator{eq, eq + 1, b};
    if (t_.is(a, "extern")) return std::nullopt;  // declaration only
    // Direct initialisation T x(args) / T x{args}, or a function declaration.
    size_t open = npos;
    for (size_t m = k; m < b && open == npos; ++m) {
      if (t_.ident(m) && is_attribute_word(t_.text(m)) && t_.is(m + 1, "(")) {
        const size_t close = t_.match_forward(m + 1);
        if (close == npos) return std::nullopt;
        m = close;
      } else if (t_.is(m, "(") || t_.is(m, "{")) {
        open = m;
      } else if (t_.is(m, "<")) {
        const size_t close = t_.match_forward(m);
        if (close != npos && close < b) m = close;
      }
    }
    if (open == npos) return Declarator{b, b, b};
    const size_t close = t_.match_forward(open);
    if (close == npos || close > b) return std::nullopt;
    if (t_.is(open, "(") && looks_like_parameters(open + 1, close)) return std::nullopt;
    return Declarator{open, open + 1, close};
  }

  // The last unqualified identifier of the declarator [k, decl_end): the variable's name.
  std::string declared_name(size_t k, size_t decl_end) const {
    std::string name;
    for (size_t m = k; m < decl_end; ++m)
      if (t_.ident(m) && !t_.is(m - 1, "::") && !t_.is(m + 1, "::")) name = std::string(t_.text(m));
    return name;
  }

  // Why declaring `name` by value constructs a class with a user-provided constructor, or "".
  std::string constructed_class(size_t k, size_t decl_end, const std::string& name) const {
    bool indirect = false;
    std::string cls;
    for (size_t m = k; m < decl_end; ++m) {
      if (t_.is(m, "*") || t_.is(m, "&")) indirect = true;
      if (t_.ident(m) && classes_.count(std::string(t_.text(m))) && std::string(t_.text(m)) != name)
        cls = std::string(t_.text(m));
    }
    if (cls.empty() || indirect) return "";
    return "type " + cls + " has a user-provided constructor";
  }

  Tokens t_;
  std::set<std::string> classes_;
  SourceStructure out_;
  bool collect_inits_ = false;
};

}  // namespace

SourceStructure analyse_structure(const LexedSource& source, const std::set<std::string>& known) {
  return ScopeWalker(source, known).run();
}

}  // namespace stitch
