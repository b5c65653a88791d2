"""The CUDA program in a model's reply: the last closed fenced block labelled as CUDA or C++.

The dataset's prompts (src/dataset/dataset.cc) ask for "the program in one ```cuda code block", so
the format is part of what the policy learns: a bare fence, a Python block, a reply cut off inside
its block (the response length ran out) or prose alone is no program, and is not sent for
verification. Of several blocks the last wins: a reply that corrects itself puts the fix last.
"""

from dataclasses import dataclass

# Fence info words accepted as the program's language (lower case; the first word of the info string).
PROGRAM_LANGUAGES = frozenset({"cuda", "cu", "cpp", "c++", "cxx"})


@dataclass(frozen=True)
class Extraction:
    program: str | None  # the block's text; None when the reply holds no program
    reason: str  # why there is no program, or which block was taken


@dataclass
class _Block:
    language: str
    lines: list[str]
    closed: bool = False


def _fence_of(line: str) -> tuple[str, str] | None:
    """(marker, language) when `line` opens a fence: ``` or ~~~ (3 or more), up to 3 spaces in."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3:
        return None
    for char in ("`", "~"):
        count = len(stripped) - len(stripped.lstrip(char))
        if count >= 3:
            info = stripped[count:].strip()
            if char == "`" and "`" in info:
                return None
            language = info.split()[0].lower() if info else ""
            return char * count, language
    return None


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(marker) and set(stripped) == {marker[0]}


def code_blocks(reply: str) -> list[_Block]:
    blocks: list[_Block] = []
    marker: str | None = None
    for line in reply.split("\n"):
        if marker is None:
            fence = _fence_of(line)
            if fence is not None:
                marker = fence[0]
                blocks.append(_Block(language=fence[1], lines=[]))
        elif _closes(line, marker):
            blocks[-1].closed = True
            marker = None
        else:
            blocks[-1].lines.append(line)
    return blocks


def extract_program(reply: str) -> Extraction:
    blocks = code_blocks(reply)
    programs = [
        (number, block)
        for number, block in enumerate(blocks, start=1)
        if block.language in PROGRAM_LANGUAGES and "".join(block.lines).strip()
    ]
    closed = [(number, block) for number, block in programs if block.closed]
    if closed:
        number, block = closed[-1]
        return Extraction("\n".join(block.lines) + "\n", f"block {number} of {len(blocks)} ({block.language})")
    if programs:
        return Extraction(None, "the reply was cut off inside its ```cuda block (no closing fence)")
    if not reply.strip():
        return Extraction(None, "the reply is empty")
    if not blocks:
        return Extraction(None, "the reply holds no fenced code block (```cuda expected)")
    labels = ", ".join(sorted({block.language or "unlabelled" for block in blocks}))
    return Extraction(None, f"no ```cuda/```cpp/```c++ block in the reply (found: {labels})")
