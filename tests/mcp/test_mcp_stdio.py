"""`stitchcuda mcp` driven over stdio as an agent would drive it.

- With the official Python MCP client (PyPI `mcp`, pinned in python/requirements.txt) in both
  protocol eras — `mode="legacy"` (initialize handshake, 2025-11-25), `mode="2026-07-28"`
  (stateless: per-request _meta) and `mode="auto"` (server/discover probe): list tools, capture
  tests/tasks/scale_shift_relu.py, verify a program that does not compile (compile_error with the
  compiler's message in the feedback, progress notifications on the way), query the docs (no index
  here: a clear tool error), read the run's state, arguments the schema refuses.
- With raw JSON lines: malformed and invalid requests get JSON-RPC errors, stdout carries nothing
  but protocol messages, every exchange is in calls.jsonl.
- On a GPU (marker gpu; raw lines, so the device machine needs no `mcp` package): the hand-written
  tests/programs/scale_shift_relu.cu verifies to `passed` with its time and speedups, and profiles
  (timeline only) to a profile.json.
The binary is $STITCHCUDA; $STITCH_MCP_ARGS adds server flags (e.g. --insecure-sandbox LAYER on
a machine where a sandbox layer breaks CUDA).
"""
import asyncio
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tests" / "tasks" / "scale_shift_relu.py"
PROGRAMS = REPO / "tests" / "programs"
STITCHCUDA = str(Path(os.environ.get("STITCHCUDA", REPO / "build" / "stitchcuda")).resolve())
TOOLS = ["capture_task", "verify_program", "profile_program", "query_docs", "read_run_state"]
BROKEN = """#include <cuda_runtime.h>
#include "stitch/program.h"
extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }
extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return cublasLtMatmulDescCreateX(params, n_params, state);
}
"""


def server_args(record_dir, docs_index=None):
    docs = ["--docs-index", str(docs_index)] if docs_index else []
    return ["mcp", "--record-dir", str(record_dir), "--no-build-cache", *docs,
            *shlex.split(os.environ.get("STITCH_MCP_ARGS", ""))]


def index_docs(workdir):
    """A documentation index of tests/rag/corpus alone (no toolkit headers): the file's path."""
    index = workdir / "docs.sqlite"
    subprocess.run([STITCHCUDA, "rag", "index", "--no-defaults", "--index", str(index),
                    str(REPO / "tests" / "rag" / "corpus")], check=True, capture_output=True)
    return index


def server_env():
    env = dict(os.environ)
    env["PATH"] = "/usr/local/cuda/bin" + os.pathsep + env.get("PATH", "")
    return env


def read_calls(record_dir):
    with open(Path(record_dir) / "calls.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


# --- the official client -------------------------------------------------------------------------

async def drive_with_official_client(mode, workdir):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    (workdir / "broken.cu").write_text(BROKEN)
    # The legacy run has no index (query_docs answers a tool error), the others a small one.
    docs_index = workdir / "missing.sqlite" if mode == "legacy" else index_docs(workdir)
    params = StdioServerParameters(command=STITCHCUDA,
                                   args=server_args(workdir / "record", docs_index),
                                   cwd=str(workdir), env=server_env())
    seen = {}
    async with Client(params, mode=mode) as client:
        seen["modern"] = client.session.discover_result is not None
        tools = await client.list_tools()
        seen["tools"] = {tool.name: tool.input_schema for tool in tools.tools}
        captured = await client.call_tool("capture_task", {"task": str(TASK)})
        seen["capture"] = captured
        run_dir = captured.structured_content["run_dir"]
        progress = []

        async def on_progress(value, total, message):
            progress.append(message)

        seen["verify"] = await client.call_tool(
            "verify_program", {"target": run_dir, "program": "broken.cu"},
            progress_callback=on_progress)
        seen["progress"] = progress
        seen["docs"] = await client.call_tool("query_docs", {"query": "miniblasMatmul"})
        seen["invalid"] = await client.call_tool("verify_program", {"target": run_dir})
        seen["state"] = await client.call_tool("read_run_state", {"run_dir": run_dir})
    return seen


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28", "auto"])
def test_official_client_drives_every_tool(mode, tmp_path):
    pytest.importorskip("mcp", reason="the official MCP client (pip install -r python/requirements.txt)")
    seen = asyncio.run(drive_with_official_client(mode, tmp_path))
    assert seen["modern"] == (mode != "legacy")
    assert list(seen["tools"]) == TOOLS
    assert seen["tools"]["verify_program"]["required"] == ["target", "program"]

    capture = seen["capture"]
    assert not capture.is_error, capture.content
    run_dir = tmp_path / capture.structured_content["run_dir"]
    assert (run_dir / "graph.json").is_file()
    assert capture.structured_content["nodes"] > 0

    verify = seen["verify"]
    assert not verify.is_error, verify.content  # a failed program is a verdict, not a tool error
    out = verify.structured_content
    assert out["state"] == "verified" and out["outcome"] == "compile_error", out
    errors = out["feedback"]["compile_errors"]
    assert errors and "cublasLtMatmulDescCreateX" in errors[0]["message"], errors
    assert out["feedback"]["suggestion"]["rule"] == "fix_compile_error"
    assert (tmp_path / out["verify_json"]).is_file() and (tmp_path / out["feedback_json"]).is_file()
    assert any("build failed" in line for line in seen["progress"]), seen["progress"]

    docs = seen["docs"]
    if mode == "legacy":
        assert docs.is_error and "stitchcuda rag index" in docs.content[0].text, docs.content
    else:
        assert not docs.is_error, docs.content
        hits = docs.structured_content["hits"]
        assert hits and hits[0]["path"].endswith("mini_blas.h"), hits
        assert "miniblasMatmul" in hits[0]["text"] and hits[0]["line_begin"] >= 1, hits[0]
    invalid = seen["invalid"]
    assert invalid.is_error and 'missing required property "program"' in invalid.content[0].text

    state = seen["state"].structured_content
    assert [a["outcome"] for a in state["attempts"]] == ["compile_error"]
    assert state["summary"]["outcome"] == "compile_error"

    calls = read_calls(tmp_path / "record")
    requests = [c for c in calls if c["kind"] == "request"]
    responses = [c for c in calls if c["kind"] == "response"]
    assert {c["id"] for c in requests} == {c["id"] for c in responses}
    assert {c["era"] for c in requests if c["method"] == "tools/call"} == \
        {"handshake" if mode == "legacy" else "modern"}


# --- raw JSON lines ------------------------------------------------------------------------------

def exchange(lines, workdir, timeout=600):
    """Runs the server on `lines` (str or dict each) and returns its stdout messages."""
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    process = subprocess.run([STITCHCUDA, *server_args(workdir / "record")], input=text,
                             capture_output=True, text=True, timeout=timeout, cwd=workdir,
                             env=server_env())
    assert process.returncode == 0, process.stderr
    # stdout carries protocol messages only: every line is a JSON-RPC 2.0 message.
    messages = [json.loads(line) for line in process.stdout.splitlines()]
    assert all(message.get("jsonrpc") == "2.0" for message in messages), process.stdout
    return messages, process.stderr


def request(id_, method, params=None):
    message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


INITIALIZE = request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "raw", "version": "1"}})
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def modern(params=None, version="2026-07-28"):
    params = dict(params or {})
    params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version,
                       "io.modelcontextprotocol/clientCapabilities": {}}
    return params


def by_id(messages):
    return {m.get("id"): m for m in messages if "id" in m and m.get("id") is not None}


def test_malformed_and_invalid_requests_get_json_rpc_errors(tmp_path):
    messages, stderr = exchange([
        request(1, "tools/list"),                       # before initialize
        '{"jsonrpc": "2.0", "id": 2, "method": ',       # malformed
        INITIALIZE, INITIALIZED,
        '{"jsonrpc": "2.0", "id": 3}',                  # no method
        '{"jsonrpc": "1.0", "id": 4, "method": "ping"}',
        request(5, "resources/list"),
        request(6, "tools/call", {"name": "no_such_tool", "arguments": {}}),
        request(7, "tools/call", {"name": "query_docs", "arguments": "text"}),
        request(8, "tools/call", {"name": "query_docs", "arguments": {"query": ""}}),
        request(9, "ping"),
        request(10, "tools/list", modern(version="2099-01-01")),
        request(11, "server/discover", modern()),
        request(12, "tools/list", modern()),
    ], tmp_path)
    replies = by_id(messages)
    parse_errors = [m for m in messages if m.get("id") is None]
    assert [m["error"]["code"] for m in parse_errors] == [-32700]
    assert replies[1]["error"]["code"] == -32600
    assert replies[3]["error"]["code"] == -32600
    assert replies[4]["error"]["code"] == -32600
    assert replies[5]["error"]["code"] == -32601
    assert replies[6]["error"]["code"] == -32602
    assert replies[7]["error"]["code"] == -32602
    assert replies[8]["result"]["isError"] is True
    assert replies[9]["result"] == {}
    assert replies[10]["error"]["code"] == -32022
    assert replies[10]["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2099-01-01"}
    discover = replies[11]["result"]
    assert discover["resultType"] == "complete" and discover["supportedVersions"] == ["2026-07-28"]
    assert "tools" in discover["capabilities"] and discover["serverInfo"]["name"] == "stitchcuda"
    assert [t["name"] for t in replies[12]["result"]["tools"]] == TOOLS
    assert "serving on stdio" in stderr  # logs go to stderr

    calls = read_calls(tmp_path / "record")
    # The unreadable line and the two invalid requests, each with the error it got.
    malformed = [c for c in calls if c["kind"] == "malformed"]
    assert [c["response"]["error"]["code"] for c in malformed] == [-32700, -32600, -32600]
    answered = {c["id"] for c in calls if c["kind"] == "response"}
    assert answered == {0, 1, 5, 6, 7, 8, 9, 10, 11, 12}


def test_skill_is_printed_from_anywhere(tmp_path):
    process = subprocess.run([STITCHCUDA, "mcp", "--skill"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=60)
    assert process.returncode == 0
    for needed in ["stitch_forward", "## Workflow", "## What the judge enforces",
                   "## Reading the feedback", "compile_error"]:
        assert needed in process.stdout


# --- on a GPU ------------------------------------------------------------------------------------

def cuda_device_present():
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_device_present(), reason="no CUDA device")
def test_a_correct_program_verifies_to_passed_over_the_protocol(tmp_path):
    messages, stderr = exchange([
        request(1, "tools/call", modern({"name": "capture_task", "arguments": {"task": str(TASK)}})),
    ], tmp_path, timeout=900)
    capture = by_id(messages)[1]["result"]
    assert not capture["isError"], capture
    run_dir = capture["structuredContent"]["run_dir"]
    messages, stderr = exchange([
        INITIALIZE, INITIALIZED,
        request(2, "tools/call", {"name": "verify_program", "arguments": {
            "target": run_dir, "program": str(PROGRAMS / "scale_shift_relu.cu"),
            "include_dirs": [str(PROGRAMS)]}, "_meta": {"progressToken": "v"}}),
        request(3, "tools/call", {"name": "profile_program", "arguments": {
            "target": run_dir, "program": str(PROGRAMS / "scale_shift_relu.cu"),
            "no_ncu": True}}),
    ], tmp_path, timeout=1200)
    replies = by_id(messages)
    out = replies[2]["result"]["structuredContent"]
    assert out["outcome"] == "passed", (out["summary"], stderr[-3000:])
    assert out["time_ms"] > 0 and out["speedups"].get("eager", 0) > 0, out
    assert any(m.get("method") == "notifications/progress" for m in messages)
    profile = replies[3]["result"]
    assert not profile["isError"], (profile["content"], stderr[-3000:])
    assert (tmp_path / profile["structuredContent"]["profile_json"]).is_file()
