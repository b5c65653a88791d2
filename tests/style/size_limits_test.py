#!/usr/bin/env python3
"""Tests of size_limits.py on fixture text: what it must flag, what it must let pass."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import size_limits  # noqa: E402


def body(lines):
    """`lines` statement lines, for a function body."""
    return "".join(f"  x += {k};\n" for k in range(lines))


def function(name, body_lines, signature="void {}()"):
    """A function spanning body_lines + 2 lines (the braces' lines included)."""
    return signature.format(name) + " {\n" + body(body_lines) + "}\n"


def check(text, max_function_lines=80):
    return [f.text for f in size_limits.check_text("f.cc", text, 600, max_function_lines)]


def check_file(path, text):
    return [f.text for f in size_limits.check_text(path, text, 600, 80)]


def names(text):
    functions, problem = size_limits.find_functions(text)
    assert problem == "", problem
    return [(f.name, f.lines) for f in functions]


class LongFunctions(unittest.TestCase):
    def test_a_function_over_the_limit_is_named(self):
        findings = check(function("short_enough", 78) + function("too_long", 79))
        self.assertEqual(len(findings), 1)
        self.assertIn("f.cc:81: function too_long: 81 lines", findings[0])

    def test_class_members_and_qualified_definitions_count(self):
        text = ("namespace a::b {\nstruct S {\n  int f() const noexcept {\n" + body(80) +
                "  }\n};\n}  // namespace a::b\n" + function("S::g", 80, "auto {}(int x) -> int"))
        self.assertEqual(names(text), [("f", 82), ("S::g", 82)])

    def test_lambdas_count_toward_their_function(self):
        text = ("void outer() {\n  auto f = [](int x) {\n" + body(40) + "  };\n" +
                "  auto g = [&] { return 1; };\n" + body(40) + "}\n")
        self.assertEqual(names(text), [("outer", 85)])

    def test_constructor_with_a_braced_initialiser_list(self):
        text = "S::S(int a) : a_(a), b_{a, 2} {\n" + body(3) + "}\n"
        self.assertEqual(names(text), [("S::S", 5)])

    def test_initialisers_enums_and_classes_are_not_functions(self):
        text = ('extern "C" {\nint f(int x) { return x; }\n}\n'
                "const Entry kTable[] = {\n  {1, g(2)},\n  {3, [] { return 4; }},\n};\n"
                "enum class Kind : int { a, b };\n"
                "template <class T> struct Box final : Base<T> { T v{}; T get() { return v; } };\n"
                "std::vector<int> v{1, 2};\n")
        self.assertEqual(names(text), [("f", 1), ("get", 1)])

    def test_a_file_over_the_limit_is_named(self):
        self.assertEqual(check_file("big.cc", "int x;\n" * 601),
                         ["big.cc: 601 lines (limit 600)"])
        self.assertEqual(check_file("ok.cc", "int x;\n" * 600), [])


class TableMarker(unittest.TestCase):
    def test_the_marker_above_a_function_excepts_it(self):
        text = "// The op table.\n// stitch: table\n" + function("table", 100)
        self.assertEqual(check(text), [])

    def test_the_marker_above_a_template_head_excepts_it(self):
        text = "// stitch: table\ntemplate <class T>\n" + function("table", 100)
        self.assertEqual(check(text), [])

    def test_a_marker_separated_by_code_excepts_nothing(self):
        text = "// stitch: table\nint unrelated;\n" + function("long_one", 100)
        self.assertEqual(len(check(text)), 1)

    def test_a_marker_on_another_function_excepts_nothing(self):
        text = "// stitch: table\n" + function("table", 100) + function("long_one", 100)
        findings = check(text)
        self.assertEqual(len(findings), 1)
        self.assertIn("long_one", findings[0])


class Lexing(unittest.TestCase):
    def test_braces_in_literals_and_comments_are_ignored(self):
        text = ('void f() {\n'
                '  const char* s = "{ \\" {";\n'
                "  char c = '{';\n"
                "  char q = '\\'';\n"
                "  // }\n"
                "  /* } { */\n"
                '  auto r = R"x(} ")" {)x";\n'
                "  auto n = 1'000'000;\n"
                "#define OPEN {\n"
                "}\n"
                "void g() {}\n")
        self.assertEqual(names(text), [("f", 10), ("g", 1)])

    def test_braces_in_strings_do_not_hide_a_long_function(self):
        text = 'void long_one() {\n  puts("}");\n' + body(80) + "}\n"
        self.assertEqual(len(check(text)), 1)

    def test_unbalanced_braces_are_a_finding(self):
        self.assertIn("braces do not balance", check("void f() {\n")[0])
        self.assertIn("braces do not balance", check("}\n")[0])


class Scan(unittest.TestCase):
    def test_main_names_findings_and_fails(self):
        with tempfile.TemporaryDirectory() as root:
            with open(os.path.join(root, "a.cc"), "w") as file:
                file.write(function("too_long", 90))
            with open(os.path.join(root, "notes.txt"), "w") as file:
                file.write(function("not_source", 90))
            self.assertEqual(size_limits.main([root]), 1)
            os.remove(os.path.join(root, "a.cc"))
            with open(os.path.join(root, "b.cu"), "w") as file:
                file.write(function("fine", 10))
            self.assertEqual(size_limits.main([root]), 0)
            with open(os.path.join(root, "part.inc"), "w") as file:
                file.write(function("too_long_in_an_include", 90))
            self.assertEqual(size_limits.main([root]), 1)

    def test_pending_findings_pass_and_stale_ones_fail(self):
        with tempfile.TemporaryDirectory() as root:
            source = os.path.join(root, "a.cc")
            with open(source, "w") as file:
                file.write(function("too_long", 90))
            pending = os.path.join(root, "pending.txt")
            with open(pending, "w") as file:
                file.write(f"# known\n{source} too_long  # split elsewhere\n")
            self.assertEqual(size_limits.main([root, "--pending", pending]), 0)
            with open(pending, "a") as file:
                file.write(f"{source} already_split\n")
            self.assertEqual(size_limits.main([root, "--pending", pending]), 1)
            with open(pending, "w") as file:
                file.write(f"{source} another_function\n")
            self.assertEqual(size_limits.main([root, "--pending", pending]), 1)

    def test_an_empty_tree_fails(self):
        with tempfile.TemporaryDirectory() as root:
            self.assertEqual(size_limits.main([root]), 1)


if __name__ == "__main__":
    unittest.main()
