#!/usr/bin/env python3
"""A scripted OpenAI-compatible server for tests: /v1/models and /v1/chat/completions answered
from a JSON script, every request logged for assertions. Standard library only, so it runs on the
system python3 and in .venv alike. Binds 127.0.0.1 on a free port and prints "port N" (and writes
N to --port-file when given).

    scripted_openai_server.py --script script.json --log requests.jsonl [--port-file F]

The script: {"models": ["m1", ...], "replies": [REPLY, ...]}. Replies are used in order, one per
chat request; a reply with "match": "text" is used instead by the first request whose last user
message contains that text, and one with "match_seed": N by the first request with seed N (for
parallel samples, whose order of arrival is not fixed: the LLM Coder's sample i asks with seed i).
When no reply is left, the server answers HTTP 400 "script exhausted".

REPLY is an object with a "kind" (default "reply"):
  reply        {"content", "reasoning", "reasoning_field" ("reasoning_content"|"reasoning"),
                "tool_calls": [{"id", "name", "arguments"}], "finish_reason" (default "stop", or
                "tool_calls" when tool_calls are given), "usage": {"prompt_tokens",
                "completion_tokens", "reasoning_tokens"}, "chunks" (pieces the content is streamed
                in, default 4), "chunk_delay_s" (default 0.01)} — streamed (SSE, usage chunk when
                stream_options.include_usage) or not, as the request asks. Truncated or malformed
                output is just such a reply: its content and finish_reason "length".
  http_error   {"status", "retry_after" (header value), "body" (JSON, default an error object),
                "unless_no_response_format": true — answer this error only when the request has
                response_format; else fall through to the next reply}
  drop         {"after_chunks" (default 1), "content"} — send part of the reply, then close the
                connection mid-body.
  stall        {"stall_s", "after_chunks" (default 0)} — send the headers (and that many chunks),
                then nothing for stall_s seconds before closing.
/v1/embeddings is answered when the script has "embeddings": {"dims" (default 16), "per_token"
(default false)}: each input's vector counts its words (lower-case runs of [a-z0-9_]) hashed into
dims buckets; with per_token, an input gets one one-hot vector per word instead (as llama.cpp's
server answers with pooling "none"), whose mean points the same way.
Each log line: {"index": request number, "reply": the script index used (or null), "method",
"path", "headers": {...} without Authorization's value, "authorization": {"present", "sha256"},
"body": parsed JSON or null}.
"""

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def word_vectors(text, dims):
    """One one-hot vector per word of text, by a stable hash of the word."""
    vectors = []
    for word in re.findall(r"[a-z0-9_]+", text.lower()):
        bucket = hashlib.sha256(word.encode()).digest()[0] % dims
        vectors.append([1.0 if i == bucket else 0.0 for i in range(dims)])
    return vectors or [[0.0] * (dims - 1) + [1.0]]


def embeddings_response(config, body):
    dims = config.get("dims", 16)
    inputs = body.get("input", [])
    if isinstance(inputs, str):
        inputs = [inputs]
    data = []
    for index, text in enumerate(inputs):
        vectors = word_vectors(text, dims)
        embedding = vectors if config.get("per_token") else [sum(c) for c in zip(*vectors)]
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    return {"object": "list", "data": data, "model": body.get("model", "scripted-embed")}


class Script:
    def __init__(self, path, log_path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        self.models = doc.get("models", ["scripted-model"])
        self.replies = doc.get("replies", [])
        self.embeddings = doc.get("embeddings")
        self.used = [False] * len(self.replies)
        self.lock = threading.Lock()
        self.log_path = log_path
        self.count = 0

    def take(self, body):
        """The index of the reply for this request, or None when the script is exhausted."""
        last_user = ""
        for message in (body or {}).get("messages", []):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                last_user = message["content"]
        seed = (body or {}).get("seed")
        with self.lock:
            for i, reply in enumerate(self.replies):
                if self.used[i]:
                    continue
                if ("match" in reply and reply["match"] in last_user) or (
                        "match_seed" in reply and seed is not None and reply["match_seed"] == seed):
                    self.used[i] = True
                    return i
            for i, reply in enumerate(self.replies):
                if self.used[i] or "match" in reply or "match_seed" in reply:
                    continue
                self.used[i] = True
                if reply.get("unless_no_response_format") and "response_format" not in (body or {}):
                    continue
                return i
        return None

    def log(self, handler, body, reply_index):
        headers = {k.lower(): v for k, v in handler.headers.items() if k.lower() != "authorization"}
        auth = handler.headers.get("Authorization")
        entry = {
            "reply": reply_index,
            "method": handler.command,
            "path": handler.path,
            "headers": headers,
            "authorization": {
                "present": auth is not None,
                "sha256": hashlib.sha256(auth.encode()).hexdigest() if auth else None,
            },
            "body": body,
        }
        with self.lock:
            entry["index"] = self.count
            self.count += 1
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


def split_text(text, pieces):
    pieces = max(1, pieces)
    size = max(1, -(-len(text) // pieces))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def usage_object(reply):
    usage = reply.get("usage")
    if usage is None:
        return None
    out = {"prompt_tokens": usage.get("prompt_tokens", 0),
           "completion_tokens": usage.get("completion_tokens", 0)}
    out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    if "reasoning_tokens" in usage:
        out["completion_tokens_details"] = {"reasoning_tokens": usage["reasoning_tokens"]}
    return out


def finish_reason(reply):
    return reply.get("finish_reason", "tool_calls" if reply.get("tool_calls") else "stop")


def wire_tool_calls(reply):
    return [{"id": c.get("id", f"call_{i}"), "type": "function",
             "function": {"name": c["name"], "arguments": c.get("arguments", "{}")}}
            for i, c in enumerate(reply.get("tool_calls", []))]


def full_message(reply):
    message = {"role": "assistant", "content": reply.get("content", "")}
    if "reasoning" in reply:
        message[reply.get("reasoning_field", "reasoning_content")] = reply["reasoning"]
    if reply.get("tool_calls"):
        message["tool_calls"] = wire_tool_calls(reply)
        if not reply.get("content"):
            message["content"] = None
    return message


def stream_events(reply, model, include_usage):
    """The SSE data payloads of a streamed reply, in order."""
    def chunk(delta, finish=None):
        return {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    field = reply.get("reasoning_field", "reasoning_content")
    pieces = reply.get("chunks", 4)
    if reply.get("reasoning"):
        events += [chunk({field: part}) for part in split_text(reply["reasoning"], pieces)]
    if reply.get("content"):
        events += [chunk({"content": part}) for part in split_text(reply["content"], pieces)]
    for i, call in enumerate(wire_tool_calls(reply)):
        args = call["function"]["arguments"]
        first, rest = args[: len(args) // 2], args[len(args) // 2:]
        events.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"],
                                                          "arguments": first}}]}))
        events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": rest}}]}))
    events.append(chunk({}, finish_reason(reply)))
    usage = usage_object(reply)
    if include_usage and usage is not None:
        events.append({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
                       "model": model, "choices": [], "usage": usage})
    return [json.dumps(e) for e in events] + ["[DONE]"]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    script = None  # set by main

    def log_message(self, *args):
        pass

    def send_json(self, status, doc, extra_headers=()):
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in extra_headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.script.log(self, None, None)
        if self.path.rstrip("/") == "/v1/models":
            self.send_json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "owned_by": "scripted"} for m in self.script.models]})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if self.path.rstrip("/") == "/v1/embeddings" and self.script.embeddings is not None:
            self.script.log(self, body, None)
            self.send_json(200, embeddings_response(self.script.embeddings, body or {}))
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.script.log(self, body, None)
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        index = self.script.take(body)
        self.script.log(self, body, index)
        if index is None:
            self.send_json(400, {"error": {"message": "script exhausted"}})
            return
        reply = self.script.replies[index]
        kind = reply.get("kind", "reply")
        if kind == "http_error":
            headers = [("Retry-After", str(reply["retry_after"]))] if "retry_after" in reply else []
            doc = reply.get("body", {"error": {"message": f"scripted HTTP {reply['status']}"}})
            self.send_json(reply["status"], doc, headers)
            return
        model = (body or {}).get("model", "scripted-model")
        if (body or {}).get("stream"):
            include_usage = ((body or {}).get("stream_options") or {}).get("include_usage", False)
            self.stream(reply, kind, stream_events(reply, model, include_usage))
        else:
            self.whole(reply, kind, model)

    def whole(self, reply, kind, model):
        doc = {"id": "chatcmpl-scripted", "object": "chat.completion", "model": model,
               "choices": [{"index": 0, "message": full_message(reply),
                            "finish_reason": finish_reason(reply)}]}
        usage = usage_object(reply)
        if usage is not None:
            doc["usage"] = usage
        data = json.dumps(doc).encode()
        if kind == "reply":
            self.send_json(200, doc)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if kind == "stall":
            self.wfile.flush()
            time.sleep(reply.get("stall_s", 5))
        else:  # drop: half the body, then the connection closes
            self.wfile.write(data[: len(data) // 2])
        self.close_connection = True

    def stream(self, reply, kind, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        limit = len(events)
        if kind == "drop":
            limit = reply.get("after_chunks", 1)
        elif kind == "stall":
            limit = reply.get("after_chunks", 0)
        delay = reply.get("chunk_delay_s", 0.01)
        for data in events[:limit]:
            payload = f"data: {data}\n\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()
            time.sleep(delay)
        if kind == "stall":
            time.sleep(reply.get("stall_s", 5))
        if kind == "reply":
            self.wfile.write(b"0\r\n\r\n")
        # drop and stall: the connection closes without the chunked body's end.
        self.close_connection = True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--port-file")
    args = parser.parse_args()
    Handler.script = Script(args.script, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        with open(args.port_file, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
    print(f"port {port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
