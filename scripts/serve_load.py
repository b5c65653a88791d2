#!/usr/bin/env python3
"""Load and crash tests for `stitchcuda serve` (docs/serve.md), standard library only.

Load: N clients, each sending M requests (unique ids) through the blocking call (/v1/score) or
submit + poll, then reports throughput, p50/p99 latency (send to final reply), replies by status,
and any request lost (no final reply) or carrying other keys than the reply contract's:

  scripts/serve_load.py --url http://127.0.0.1:8421 --clients 8 --requests 200 \\
      --task 19_ReLU --source program.cu            # token from $STITCH_SERVE_TOKEN

Crash test (ctest serve_crash_restart): starts `stitchcuda serve --fake-scorer` (or the real scorer
with --serve-arg ARGS, --task, --source), loads it, kills it
with SIGKILL mid-load, restarts it on the same state folder and checks that every request it had
accepted reaches a final reply; then that SIGTERM lets an in-flight request finish:

  scripts/serve_load.py --crash-test --stitchcuda build/stitchcuda
"""
import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

REPLY_KEYS = {"request_id", "task", "status", "reward", "compiled", "correct", "hacked", "speedup",
              "baseline", "runtimes", "error_code", "message", "breakdown", "queued_s",
              "scoring_s", "format"}
FINAL = {"done", "error", "timeout"}


class Client:
    """One keep-alive connection; reconnects after an error."""

    def __init__(self, url, token, timeout=3600):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port, self.timeout = parsed.hostname, parsed.port, timeout
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = "Bearer " + token
        self.connection = None

    def request(self, method, path, body=None):
        """(status, headers, reply dict); raises OSError / http.client errors on transport failure."""
        if self.connection is None:
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.connection.request(method, path, body=json.dumps(body) if body else None,
                                    headers=self.headers)
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            raise
        return response.status, dict(response.getheaders()), json.loads(data or b"{}")


def percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * q
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def poll_final(client, request_id, deadline):
    while time.time() < deadline:
        status, _, reply = client.request("GET", "/v1/requests/" + urllib.parse.quote(request_id, safe=""))
        if status == 200 and reply.get("status") in FINAL:
            return reply
        time.sleep(0.05)
    return None


def run_client(args, index, source, results, lock):
    client = Client(args.url, args.token)
    for number in range(args.requests):
        request_id = f"{args.run_id}-c{index}-r{number}"
        variant = (index * args.requests + number) % args.distinct
        body = {"request_id": request_id, "task": args.task,
                "source": source if args.distinct == 1 else f"{source}\n// variant {variant}\n"}
        started = time.time()
        reply, retries = None, 0
        while reply is None:
            try:
                status, headers, reply = client.request(
                    "POST", "/v1/score" if args.mode == "score" else "/v1/submit", body)
            except (OSError, http.client.HTTPException):
                status, headers, reply = 0, {}, None
            if status in (429, 503):  # back off as told, then the same id again
                retries += 1
                time.sleep(float(headers.get("Retry-After", "1")))
                reply = None
            elif status == 0:
                retries += 1
                time.sleep(0.2)
            elif reply.get("status") not in FINAL:
                reply = poll_final(client, request_id, started + args.request_timeout)
                if reply is None:
                    break
        with lock:
            results.append({"id": request_id, "latency": time.time() - started, "reply": reply,
                            "retries": retries})


def load(args):
    source = open(args.source).read() if args.source else f"// FAKE_SLEEP_MS={args.fake_sleep_ms}"
    results, lock = [], threading.Lock()
    started = time.time()
    threads = [threading.Thread(target=run_client, args=(args, i, source, results, lock))
               for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.time() - started
    replies = [r["reply"] for r in results if r["reply"]]
    latencies = [r["latency"] for r in results if r["reply"]]
    by_status = {}
    for reply in replies:
        by_status[reply["status"]] = by_status.get(reply["status"], 0) + 1
    summary = {
        "clients": args.clients, "requests": args.clients * args.requests,
        "distinct_programs": args.distinct,
        "final_replies": len(replies), "lost": args.clients * args.requests - len(replies),
        "bad_keys": sum(1 for reply in replies if set(reply) != REPLY_KEYS),
        "by_status": by_status, "retries": sum(r["retries"] for r in results),
        "wall_s": round(wall, 3), "throughput_rps": round(len(replies) / wall, 2),
        "latency_p50_ms": round(1000 * percentile(latencies, 0.5), 2),
        "latency_p99_ms": round(1000 * percentile(latencies, 0.99), 2),
        "reward_mean": round(sum(r["reward"] for r in replies) / max(1, len(replies)), 4),
        "result_cache_hits": sum(1 for r in replies
                                 if ((r.get("breakdown") or {}).get("result_cache") or {}).get("hit")),
    }
    print(json.dumps(summary, indent=2))
    return 0 if summary["lost"] == 0 and summary["bad_keys"] == 0 else 1


# --- crash test -------------------------------------------------------------------------------

def start_server(stitchcuda, state, token, scorer_args):
    port_file = os.path.join(state, "port")
    if os.path.exists(port_file):
        os.remove(port_file)
    log = open(os.path.join(state, "serve.log"), "a")
    server = subprocess.Popen(
        [stitchcuda, "serve", "--port", "0", "--port-file", port_file, "--state-dir", state,
         "--grace", "300", *scorer_args],
        env={**os.environ, "STITCH_SERVE_TOKEN": token}, stdout=log, stderr=log)
    deadline = time.time() + 30
    while not os.path.exists(port_file):
        if server.poll() is not None or time.time() > deadline:
            sys.exit(f"serve did not start: {open(os.path.join(state, 'serve.log')).read()}")
        time.sleep(0.05)
    return server, "http://127.0.0.1:" + open(port_file).read().strip()


def crash_test(args):
    """--serve-arg given: the real scorer with those arguments (--source, --task name the program);
    else the fake scorer, 2 workers, 20 ms a request."""
    token = "crash-test-token"
    real = bool(args.serve_arg)
    source = open(args.source).read() if args.source else "// fake"
    slow = source if real else "// FAKE_SLEEP_MS=800"
    with tempfile.TemporaryDirectory(prefix="stitch_serve_crash_") as state:
        scorer = (lambda sleep_ms: args.serve_arg) if real else (
            lambda sleep_ms: ["--fake-scorer", "--workers", "2", "--fake-sleep-ms", str(sleep_ms)])
        server, url = start_server(args.stitchcuda, state, token, scorer(20))
        accepted, lock, stop = [], threading.Lock(), threading.Event()

        def submitter(index):
            client = Client(url, token, timeout=10)
            for number in range(1000):
                if stop.is_set():
                    return
                request_id = f"crash-c{index}-r{number}"
                try:
                    status, _, reply = client.request(
                        "POST", "/v1/submit", {"request_id": request_id, "task": args.task,
                                               "source": source})
                except (OSError, http.client.HTTPException):
                    return  # the server is gone
                if status in (200, 202):
                    assert set(reply) == REPLY_KEYS, reply
                    with lock:
                        accepted.append(request_id)

        threads = [threading.Thread(target=submitter, args=(i,)) for i in range(8)]
        for thread in threads:
            thread.start()
        while True:
            with lock:
                if len(accepted) >= args.crash_after:
                    break
            time.sleep(0.01)
        server.send_signal(signal.SIGKILL)  # mid-load: clients are still submitting
        server.wait()
        stop.set()
        for thread in threads:
            thread.join()
        server, url = start_server(args.stitchcuda, state, token, scorer(1))
        client = Client(url, token)
        deadline = time.time() + args.final_timeout
        finals = {i: poll_final(client, i, deadline) for i in accepted}
        lost = [i for i, reply in finals.items() if reply is None]
        statuses = {}
        for reply in finals.values():
            if reply:
                key = reply["status"] + "/" + reply["error_code"]
                statuses[key] = statuses.get(key, 0) + 1
        log = open(os.path.join(state, "serve.log")).read()
        requeued = [line for line in log.splitlines() if "re-queued" in line]
        print(f"accepted before SIGKILL: {len(accepted)}; lost after restart: {len(lost)}; "
              f"{requeued[-1] if requeued else ''}; final replies: {statuses}")
        if lost:
            print("lost:", lost[:10])
            server.kill()
            return 1

        # Graceful: SIGTERM while a request is being scored; it finishes within the grace.
        client.request("POST", "/v1/submit",
                       {"request_id": "graceful", "task": args.task, "source": slow + "\n// graceful"})
        deadline = time.time() + 10
        while client.request("GET", "/v1/requests/graceful")[2]["status"] != "running":
            assert time.time() < deadline, "the graceful request never started"
            time.sleep(0.01)
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=400)
        server, url = start_server(args.stitchcuda, state, token, scorer(1))
        reply = Client(url, token).request("GET", "/v1/requests/graceful")[2]
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        print(f"SIGTERM: exit code {code}; the in-flight request ended {reply['status']}")
        return 0 if code == 0 and reply["status"] in FINAL else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8421")
    parser.add_argument("--token", default=os.environ.get("STITCH_SERVE_TOKEN", ""))
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200, help="per client")
    parser.add_argument("--mode", choices=["score", "submit"], default="score",
                        help="blocking call, or submit then poll")
    parser.add_argument("--task", default="t")
    parser.add_argument("--source", help="the program (.cu) every request sends")
    parser.add_argument("--distinct", type=int, default=1,
                        help="send this many distinct programs: request n carries --source plus "
                             "the comment '// variant n mod K', so each variant is verified once "
                             "and its repeats are the service's result cache hits")
    parser.add_argument("--fake-sleep-ms", type=int, default=0,
                        help="without --source: the fake scorer's time per request")
    parser.add_argument("--request-timeout", type=float, default=3600)
    parser.add_argument("--run-id", default=f"load{int(time.time())}",
                        help="request id prefix (a new one per run, or the replies are repeats)")
    parser.add_argument("--crash-test", action="store_true")
    parser.add_argument("--crash-after", type=int, default=200,
                        help="crash test: SIGKILL once this many requests were accepted")
    parser.add_argument("--final-timeout", type=float, default=60,
                        help="crash test: how long the restarted service may take to finish them")
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="crash test: serve with the real scorer and these arguments "
                             "(--serve-arg=--tasks-dir --serve-arg=tests/tasks)")
    parser.add_argument("--stitchcuda", default="build/stitchcuda")
    args = parser.parse_args()
    if args.distinct < 1:
        parser.error("--distinct must be at least 1")
    return crash_test(args) if args.crash_test else load(args)


if __name__ == "__main__":
    sys.exit(main())
