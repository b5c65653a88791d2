#!/usr/bin/env python3
"""Keeps src/ within the size limits of STYLE.md 15: no file over 600 lines, no function over 80.

    python3 tests/style/size_limits.py src [--max-file-lines 600] [--max-function-lines 80]

Prints one line per finding (`path: N lines (limit M)`, `path:LINE: function NAME: N lines ...`)
and exits 1 when there is any; 0 otherwise. A function's length is the lines its body spans, from
the line of its opening brace to the line of its closing brace.

What counts as a function: a brace block opened at namespace or class scope after a `)`, optionally
followed by qualifiers (const, noexcept, override, final, &, `-> type`), or after a constructor's
initialiser list. Blocks inside a function (lambdas, local classes) count toward it. Comments,
string, character and raw-string literals and preprocessor lines are blanked before braces are
matched, so a brace inside them changes nothing; a file whose braces do not balance is a finding.

Tables are excepted by a visible marker: a comment `// stitch: table` in the comment lines directly
above the function (the last of them may be on the line before the declaration's first line).

`--pending FILE` names findings that are known and being fixed elsewhere (one `path function` or
`path` per line, # comments): they are printed as pending and do not fail the check, but a line
that matches no finding does, so the list only shrinks.

Standard library only: it runs with the system python3, no virtual environment needed.
"""

import argparse
import bisect
import collections
import os
import re
import sys

# .inc: a part of a .cc kept apart for its size (plan_json_kinds.inc) is held to the same limits.
SOURCE_SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cu", ".cuh", ".inc")
TABLE_MARKER = "stitch: table"

IDENTIFIER_CHARS = re.compile(r"[A-Za-z0-9_]")
RAW_STRING_PREFIX = re.compile(r"(?:u8|u|U|L)?R")


def blank(text):
    """Returns `text` of the same length and line breaks with comments, literals' contents and
    preprocessor lines turned into spaces (quotes are kept so that `extern "C"` stays visible)."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True  # only whitespace so far on this line

    def erase(start, end):
        for k in range(start, end):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":
            end = i
            while end < n:  # a directive runs on over lines ending in a backslash
                if text[end] == "\n" and text[end - 1] != "\\":
                    break
                end += 1
            erase(i, end)
            i = end
            continue
        line_start = False
        two = text[i:i + 2]
        if two == "//":
            end = text.find("\n", i)
            end = n if end < 0 else end
            erase(i, end)
            i = end
        elif two == "/*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            erase(i, end)
            i = end
        elif c == '"':
            word = _word_before(text, i)
            if RAW_STRING_PREFIX.fullmatch(word):
                i = _skip_raw_string(text, i, erase)
            else:
                i = _skip_quoted(text, i, '"', erase)
        elif c == "'":
            word = _word_before(text, i)
            if word and word[0].isdigit():
                i += 1  # a digit separator: 1'000'000
            else:
                i = _skip_quoted(text, i, "'", erase)
        else:
            i += 1
    return "".join(out)


def _word_before(text, i):
    """The identifier or number characters directly before position i."""
    start = i
    while start > 0 and IDENTIFIER_CHARS.match(text[start - 1]):
        start -= 1
    return text[start:i]


def _skip_quoted(text, i, quote, erase):
    end = i + 1
    while end < len(text) and text[end] != quote and text[end] != "\n":
        end += 2 if text[end] == "\\" else 1
    erase(i + 1, min(end, len(text)))
    return end if end < len(text) and text[end] == "\n" else end + 1


def _skip_raw_string(text, i, erase):
    open_paren = text.find("(", i)
    delimiter = text[i + 1:open_paren]
    close = text.find(")" + delimiter + '"', open_paren)
    close = len(text) if close < 0 else close
    erase(i + 1, close + len(delimiter) + 1)
    return close + len(delimiter) + 2


def _collapse(statement):
    """The statement with the contents of its bracket groups removed: `f(a, b) : x_{1}` becomes
    `f() : x_{}`, so that only its top-level shape is left."""
    out, depth = [], 0
    for c in statement:
        if c in "({[":
            if depth == 0:
                out.append(c)
            depth += 1
        elif c in ")}]":
            depth = max(depth - 1, 0)
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out)


QUALIFIER_TAIL = re.compile(
    r"(?:\s+|\bconst\b|\bvolatile\b|\bnoexcept(?:\(\))?|\boverride\b|\bfinal\b|\bmutable\b"
    r"|\btry\b|&&?|->[^;{}]*)$")
CONTAINER_HEAD = re.compile(r'^(?:.*\s)?(?:namespace\b.*|extern\s*"\s*"\s*)$', re.S)
CLASS_HEAD = re.compile(r"\b(?:class|struct|union)\b")
INITIALISER_LIST = re.compile(r"\)[\w\s&]*:(?!:)")


def _strip_qualifiers(shape):
    while True:
        stripped = QUALIFIER_TAIL.sub("", shape) if shape else shape
        if stripped == shape:
            return shape
        shape = stripped


def _without_template_head(shape):
    """The shape without a leading `template <...>` (its `class` and `=` say nothing here)."""
    match = re.match(r"\s*template\s*<", shape)
    if not match:
        return shape
    depth, k = 1, match.end()
    while k < len(shape) and depth:
        depth += {"<": 1, ">": -1}.get(shape[k], 0)
        k += 1
    return _without_template_head(shape[k:])


ACCESS_SPECIFIER = re.compile(r"^\s*(?:(?:public|private|protected)\s*:(?!:)\s*)+")
ASSIGNMENT = re.compile(r"(?<![=!<>])=(?!=)")


def classify(statement):
    """What a brace opened after `statement` (the text since the last `;` or block at namespace
    or class scope) starts: 'function', 'container' (namespace, class, extern "C") or 'other'."""
    shape = _collapse(statement).strip()
    if CONTAINER_HEAD.match(shape) and "(" not in shape:
        return "container"
    tail = _strip_qualifiers(shape)
    if tail.endswith(")"):
        return "function"  # also a lambda held by a namespace-scope variable
    if tail.endswith("}") and INITIALISER_LIST.search(tail):
        return "function"  # a constructor whose last initialiser uses braces: x_{1} {
    declaration = _without_template_head(shape)
    if ASSIGNMENT.search(declaration) or declaration.lstrip().startswith("enum"):
        return "other"  # an initialiser (a table) or an enum's list
    if CLASS_HEAD.search(declaration):
        return "container"
    return "other"


def function_name(statement):
    shape = _collapse(statement)
    match = INITIALISER_LIST.search(shape)
    if match:
        shape = shape[:match.start() + 1]
    shape = _strip_qualifiers(shape.strip())
    match = re.search(r"(operator\s*\S+?|[\w:~]+(?:<[^()]*>)?)\s*\(\)$", shape)
    if match:
        return match.group(1)
    match = re.search(r"(\w+)\s*=\s*\[\]", shape)  # a lambda held by a variable
    return match.group(1) if match else "?"


def declaration_start(statement):
    """The offset in `statement` of the declaration's first character (after access specifiers)."""
    match = ACCESS_SPECIFIER.match(statement)
    offset = match.end() if match else 0
    return offset + len(statement[offset:]) - len(statement[offset:].lstrip())


class Function:
    def __init__(self, name, first_line, open_line, close_line):
        self.name = name
        self.first_line = first_line  # the declaration's first line
        self.open_line = open_line
        self.close_line = close_line

    @property
    def lines(self):
        return self.close_line - self.open_line + 1


def find_functions(text):
    """The functions of one file's text, and a problem ('' when the braces balance)."""
    masked = blank(text)
    line_of = _line_index(masked)
    functions = []
    # Each frame: [kind, opening position, statement start, statement text at the opening].
    frames = [["container", -1, 0, ""]]
    for i, c in enumerate(masked):
        frame = frames[-1]
        if c == "{":
            if frame[0] == "container":
                statement = masked[frame[2]:i]
                frames.append([classify(statement), i, i + 1, statement])
            else:
                frames.append(["inner", i, i + 1, ""])
        elif c == "}":
            if len(frames) == 1:
                return functions, f"line {line_of(i)}: '}}' closes nothing"
            kind, opened, _, statement = frames.pop()
            if kind == "function":
                start = opened - len(statement) + declaration_start(statement)
                functions.append(Function(function_name(statement), line_of(start),
                                          line_of(opened), line_of(i)))
            if kind in ("function", "container") and frames[-1][0] == "container":
                frames[-1][2] = i + 1
        elif c == ";" and frame[0] == "container":
            frame[2] = i + 1
    if len(frames) > 1:
        return functions, f"line {line_of(frames[-1][1])}: '{{' is never closed"
    return functions, ""


def _line_index(text):
    """A function from a position in `text` to its 1-based line number."""
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    return lambda position: bisect.bisect_right(starts, position)


def has_table_marker(lines, first_line):
    """Whether the comment lines directly above line `first_line` (1-based) hold the marker."""
    k = first_line - 2
    while k >= 0 and lines[k].lstrip().startswith("//"):
        if TABLE_MARKER in lines[k]:
            return True
        k -= 1
    return False


# `key` is what a pending line names ("path function" or "path"); `text` the line printed.
Finding = collections.namedtuple("Finding", "key text")


def check_text(path, text, max_file_lines, max_function_lines):
    findings = []
    lines = text.splitlines()
    if len(lines) > max_file_lines:
        findings.append(Finding(path, f"{path}: {len(lines)} lines (limit {max_file_lines})"))
    functions, problem = find_functions(text)
    if problem:
        findings.append(Finding(path, f"{path}: braces do not balance, {problem}"))
    for function in functions:
        if function.lines > max_function_lines and not has_table_marker(lines,
                                                                         function.first_line):
            findings.append(Finding(
                f"{path} {function.name}",
                f"{path}:{function.first_line}: function {function.name}: {function.lines} lines "
                f"(limit {max_function_lines}; a table says so with '// {TABLE_MARKER}' above it)"))
    return findings


def read_pending(path):
    pending = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            line = line.split("#", 1)[0].strip()
            if line:
                pending.append(" ".join(line.split()))
    return pending


def source_files(root):
    for directory, subdirectories, files in os.walk(root):
        subdirectories.sort()
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(directory, name)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", help="folders (or files) to scan")
    parser.add_argument("--max-file-lines", type=int, default=600)
    parser.add_argument("--max-function-lines", type=int, default=80)
    parser.add_argument("--pending", help="findings known and being fixed elsewhere")
    args = parser.parse_args(argv)
    findings, scanned = [], 0
    for root in args.roots:
        paths = [root] if os.path.isfile(root) else source_files(root)
        for path in paths:
            with open(path, encoding="utf-8") as file:
                text = file.read()
            scanned += 1
            findings += check_text(path, text, args.max_file_lines, args.max_function_lines)
    pending = read_pending(args.pending) if args.pending else []
    new = [finding for finding in findings if finding.key not in pending]
    stale = sorted(set(pending) - {finding.key for finding in findings})
    for finding in findings:
        print(("" if finding in new else "pending: ") + finding.text)
    for key in stale:
        print(f"{args.pending}: '{key}' is within the limits now (or gone): delete the line")
    if scanned == 0:
        print("no source files found under " + ", ".join(args.roots))
        return 1
    print(f"{scanned} files scanned, {len(findings)} over the limits "
          f"({len(findings) - len(new)} pending)")
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
