#!/usr/bin/env python3
"""Record a raw stdio transcript from @modelcontextprotocol/server-everything.

    python3 drivers/tests/peers/record-transcript.py [--out-dir tests/transcripts] [--name everything-stdio]
                                             [-- SERVER COMMAND ...]

Default server command: .peers/bin/everything stdio  (install it with .ci/install-peers).

Sends one line at a time, each only after the answer to the previous request has arrived:
  id 0 initialize (protocolVersion 2025-11-25, capabilities {}), notifications/initialized,
  id 1 tools/list, id 2 tools/call echo {"message":"hello"}, id 3 tools/call get-sum {"a":2,"b":3},
  id 4 tools/call <image tool from tools/list>, id 5 tools/call get-structured-content
  {<first enum value of each required enum property>}.
If the server sends a request of its own, it is answered with error -32601 (that answer is recorded
in the .in file too). After the last answer the recorder waits --grace seconds for trailing
messages, closes stdin and waits for the server to exit.

Writes (the exact bytes, nothing reformatted):
  <out-dir>/<name>.out   everything the server wrote to stdout
  <out-dir>/<name>.in    the lines the client wrote to stdin
and prints a summary of the non-response lines (notifications, server requests, non-JSON) to stderr.
Only standard library; works with any python3.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Peer:
    def __init__(self, cmd: list[str]):
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        )
        self.raw = bytearray()
        self.sent = bytearray()
        self.lines: list[bytes] = []
        self.stderr = bytearray()
        self.cond = threading.Condition()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self._seen = 0  # lines already handled by wait_for

    def _read_stdout(self):
        buf = b""
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                break
            with self.cond:
                self.raw += chunk
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            if buf:
                self.lines.append(buf)
            self.cond.notify_all()

    def _read_stderr(self):
        while True:
            chunk = self.proc.stderr.read1(65536)
            if not chunk:
                break
            self.stderr += chunk

    def send(self, obj: dict):
        line = json.dumps(obj, separators=(",", ":")).encode() + b"\n"
        self.sent += line
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def _handle_new_lines(self, want_id):
        """Answer server requests among unseen lines; return the response to want_id if seen."""
        found = None
        while self._seen < len(self.lines):
            line = self.lines[self._seen]
            self._seen += 1
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if not isinstance(msg, dict):
                continue
            if "method" in msg and "id" in msg:  # server -> client request
                self.send({"jsonrpc": "2.0", "id": msg["id"],
                           "error": {"code": -32601, "message": "Method not found"}})
            elif "method" not in msg and msg.get("id") == want_id:
                found = msg
        return found

    def wait_for(self, want_id, timeout: float = 15.0) -> dict:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = self._handle_new_lines(want_id)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and self._seen == len(self.lines):
                    raise SystemExit(f"no answer to id {want_id}; stderr tail:\n{self.stderr[-2000:].decode(errors='replace')}")
                self.cond.wait(min(left, 0.1))

    def drain(self, seconds: float):
        end = time.monotonic() + seconds
        with self.cond:
            while time.monotonic() < end:
                self._handle_new_lines(None)
                self.cond.wait(0.05)
            self._handle_new_lines(None)


def first_enum_args(tool: dict) -> dict:
    schema = tool.get("inputSchema") or {}
    args = {}
    for prop in schema.get("required", []):
        spec = schema.get("properties", {}).get(prop, {})
        if "enum" in spec:
            args[prop] = spec["enum"][0]
        elif spec.get("type") in ("number", "integer"):
            args[prop] = 1
        else:
            args[prop] = "x"
    return args


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=str(ROOT / "tests" / "transcripts"))
    ap.add_argument("--name", default="everything-stdio")
    ap.add_argument("--grace", type=float, default=1.0)
    ap.add_argument("cmd", nargs="*", default=[str(ROOT / ".peers" / "bin" / "everything"), "stdio"])
    a = ap.parse_args()

    peer = Peer(a.cmd)
    peer.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "rec", "version": "0"}}})
    peer.wait_for(0)
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    peer.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    tools = {t["name"]: t for t in peer.wait_for(1)["result"]["tools"]}

    image_tool = "get-tiny-image" if "get-tiny-image" in tools else next(n for n in tools if "image" in n)
    calls = [
        (2, "echo", {"message": "hello"}),
        (3, "get-sum", {"a": 2, "b": 3}),
        (4, image_tool, {}),
        (5, "get-structured-content", first_enum_args(tools["get-structured-content"])),
    ]
    for rid, name, args in calls:
        peer.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                   "params": {"name": name, "arguments": args}})
        peer.wait_for(rid)
    peer.drain(a.grace)

    peer.proc.stdin.close()
    try:
        peer.proc.wait(5)
    except subprocess.TimeoutExpired:
        peer.proc.terminate()
        peer.proc.wait(5)
    time.sleep(0.1)

    out_dir = Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with peer.cond:
        (out_dir / f"{a.name}.out").write_bytes(bytes(peer.raw))
        (out_dir / f"{a.name}.in").write_bytes(bytes(peer.sent))
        lines = list(peer.lines)

    print(f"wrote {out_dir / (a.name + '.out')} ({len(peer.raw)} bytes, {len(lines)} lines), "
          f"{out_dir / (a.name + '.in')} ({len(peer.sent)} bytes); exit status {peer.proc.returncode}",
          file=sys.stderr)
    for i, line in enumerate(lines, 1):
        try:
            msg = json.loads(line)
        except ValueError:
            print(f"  line {i}: NOT JSON: {line[:120]!r}", file=sys.stderr)
            continue
        if "method" in msg:
            kind = "server request" if "id" in msg else "notification"
            print(f"  line {i}: {kind} {msg['method']} {json.dumps(msg.get('params'))[:160]}", file=sys.stderr)
        else:
            print(f"  line {i}: response id {msg.get('id')!r}", file=sys.stderr)
    if peer.stderr:
        print("server stderr:\n  " + peer.stderr.decode(errors="replace").strip().replace("\n", "\n  "),
              file=sys.stderr)


if __name__ == "__main__":
    main()
