#!/usr/bin/env python3
"""Check the OAuth peers with the official Python SDK's client (mcp 2.3.0, OAuthClientProvider).

    .peers/bin/python drivers/tests/peers/oauth/sdk_client_check.py [--access-token-ttl 2] [--interactive] [-q]

Starts authorization-server.cjs (under Node 22 from .peers) and protected_server.py, then, as an MCP
client with the SDK's OAuth support (dynamic registration, PKCE, resource indicator, RFC 9207 iss
check) and no browser: initialize, tools/list, echo, whoami; waits past the access token's lifetime and
calls echo again (the SDK refreshes before sending); checks the refresh_token grant was used and that
the new token works. Prints every HTTP exchange (method, URL, key parameters, status, key response
fields) on stdout. Exit status 0 = all checks passed.

The "browser" is the redirect handler: it GETs the authorization URL with httpx2 and follows
redirects itself (303s; with a cookie jar, which --interactive needs) until a Location points at
the redirect_uri, whose query (code, state, iss) goes to the callback handler. Nothing listens on
the redirect_uri.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, parse_qsl, urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

HERE = Path(__file__).resolve().parent
REDIRECT_URI = "http://127.0.0.1:53682/callback"  # nothing listens there

exchanges: list[dict] = []
QUIET = False


def say(line: str) -> None:
    if not QUIET:
        print(line, flush=True)


def short(v: str, n: int = 24) -> str:
    return v if len(v) <= n else v[:n] + "…"


def jwt_claims(tok: str) -> dict | None:
    try:
        p = tok.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    except Exception:
        return None


def summarize_params(params: dict[str, str]) -> str:
    out = []
    for k, v in params.items():
        if k in ("code", "refresh_token", "code_verifier", "code_challenge", "client_id", "state", "access_token"):
            v = short(v, 10)
        out.append(f"{k}={v}")
    return " ".join(out)


class Recorder:
    """httpx2 event hooks: one line per request/response."""

    def __init__(self, mcp_url: str) -> None:
        self.mcp_url = mcp_url

    async def on_request(self, request: httpx2.Request) -> None:
        line = f"> {request.method} {request.url.copy_with(query=None)}"
        if request.url.query:
            line += " ?" + summarize_params(dict(parse_qsl(request.url.query.decode())))
        body = request.content if hasattr(request, "_content") else b""
        ctype = request.headers.get("content-type", "")
        auth = request.headers.get("authorization")
        if auth:
            line += f" [Authorization: {auth.split()[0]} {short(auth.split()[1], 12)}]"
        if body and "x-www-form-urlencoded" in ctype:
            line += " form: " + summarize_params(dict(parse_qsl(body.decode())))
        elif body and "json" in ctype:
            try:
                j = json.loads(body)
                if str(request.url).startswith(self.mcp_url):
                    line += f" jsonrpc: {j.get('method', 'response') if isinstance(j, dict) else 'batch'}"
                else:
                    line += " json: " + json.dumps(j)
            except ValueError:
                pass
        exchanges.append({"kind": "request", "method": request.method, "url": str(request.url), "body": body.decode(errors="replace")})
        say(line)

    async def on_response(self, response: httpx2.Response) -> None:
        req = response.request
        line = f"< {response.status_code}"
        if loc := response.headers.get("location"):
            line += f" Location: {loc}"
        if wa := response.headers.get("www-authenticate"):
            line += f" WWW-Authenticate: {wa}"
        info = {"kind": "response", "status": response.status_code, "url": str(req.url)}
        is_mcp = str(req.url).startswith(self.mcp_url)
        if not is_mcp and "json" in response.headers.get("content-type", ""):
            await response.aread()
            try:
                j = response.json()
                info["json"] = j
                shown = {}
                for k, v in j.items():
                    if k in ("access_token", "refresh_token", "id_token", "client_id", "client_secret"):
                        shown[k] = short(str(v), 10)
                    elif isinstance(v, (list, dict)) and len(json.dumps(v)) > 120:
                        shown[k] = "…"
                    else:
                        shown[k] = v
                line += " " + json.dumps(shown)
                if "access_token" in j and (c := jwt_claims(j["access_token"])):
                    line += f"\n    access_token JWT claims: {json.dumps(c)}"
            except ValueError:
                pass
        elif is_mcp:
            line += f" {response.headers.get('content-type', '')}"
            if sid := response.headers.get("mcp-session-id"):
                line += f" mcp-session-id: {short(sid, 8)}"
        exchanges.append(info)
        say(line)


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.token_history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.token_history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class HeadlessBrowser:
    """redirect_handler + callback_handler for OAuthClientProvider."""

    def __init__(self, recorder: Recorder) -> None:
        self.result: AuthorizationCodeResult | None = None
        self.recorder = recorder

    async def redirect_handler(self, authorization_url: str) -> None:
        say("  (browser) GET the authorization URL, following redirects by hand")
        url = authorization_url
        async with httpx2.AsyncClient(
            follow_redirects=False,
            event_hooks={"request": [self.recorder.on_request], "response": [self.recorder.on_response]},
        ) as c:
            for _ in range(10):
                r = await c.get(url)
                if r.status_code not in (301, 302, 303, 307, 308):
                    raise RuntimeError(f"authorization stopped at {url}: {r.status_code} {r.text[:300]}")
                url = str(r.url.join(r.headers["location"]))
                if url.startswith(REDIRECT_URI.split("?")[0]):
                    q = parse_qs(urlsplit(url).query)
                    if "error" in q:
                        raise RuntimeError(f"authorization error: {q}")
                    self.result = AuthorizationCodeResult(
                        code=q["code"][0], state=q.get("state", [None])[0], iss=q.get("iss", [None])[0]
                    )
                    say(f"  (browser) reached redirect_uri: code, state, iss={self.result.iss}")
                    return
        raise RuntimeError("too many redirects")

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.result is not None
        r, self.result = self.result, None
        return r


def start(cmd: list[str], prefix: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline().strip()
    if not line.startswith(prefix + " "):
        p.kill()
        raise RuntimeError(f"{cmd[0]}: expected '{prefix} ...', got {line!r}")
    return p, line.split(" ", 1)[1]


async def run(args: argparse.Namespace) -> int:
    # The .peers/bin wrappers (source .peers/env), else the scripts beside this one.
    as_cmd = [os.environ["PEERS_OAUTH_AS"]] if os.environ.get("PEERS_OAUTH_AS") else [
        os.environ.get("PEERS_NODE22") or str(HERE / "../../../.peers/bin/node22"), str(HERE / "authorization-server.cjs")]
    rs_cmd = [os.environ["PEERS_OAUTH_RS"]] if os.environ.get("PEERS_OAUTH_RS") else [
        sys.executable, str(HERE / "protected_server.py")]
    as_cmd += ["--access-token-ttl", str(args.access_token_ttl)] + (["--interactive"] if args.interactive else [])
    t0 = time.monotonic()
    as_proc, issuer = start(as_cmd, "ISSUER")
    rs_proc, mcp_url = start(rs_cmd + ["--issuer", issuer], "LISTENING")
    say(f"AS {issuer} / RS {mcp_url} ready in {time.monotonic() - t0:.2f}s")
    failures: list[str] = []

    def check(ok: bool, what: str) -> None:
        say(f"CHECK {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    try:
        rec = Recorder(mcp_url)
        browser = HeadlessBrowser(rec)
        storage = MemoryStorage()
        provider = OAuthClientProvider(
            server_url=mcp_url,
            client_metadata=OAuthClientMetadata(
                client_name="sdk-client-check",
                redirect_uris=[REDIRECT_URI],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=browser.redirect_handler,
            callback_handler=browser.callback_handler,
        )
        http = create_mcp_http_client(auth=provider)
        http.event_hooks = {"request": [rec.on_request], "response": [rec.on_response]}
        async with http, streamable_http_client(mcp_url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                say("== initialize")
                init = await session.initialize()
                check(init.server_info.name == "oauth-protected-test-server", "initialize answered by the protected server")
                say("== tools/list")
                tools = await session.list_tools()
                names = sorted(t.name for t in tools.tools)
                check(names == ["echo", "whoami"], f"tools/list -> {names}")
                say("== tools/call echo")
                r = await session.call_tool("echo", {"text": "hello"})
                check(r.content[0].text == "hello", "echo hello -> hello")
                say("== tools/call whoami")
                r = await session.call_tool("whoami", {})
                who = json.loads(r.content[0].text)
                say(f"  whoami: {who}")
                check(who["subject"] == "test-user" and "mcp:tools" in who["scopes"] and who["resource"] == mcp_url,
                      "whoami: sub test-user, scope mcp:tools, aud = the MCP URL")
                first_token = storage.tokens.access_token if storage.tokens else None
                wait = args.access_token_ttl + 1.5
                say(f"== sleep {wait}s (access token TTL {args.access_token_ttl}s)")
                await asyncio.sleep(wait)
                say("== tools/call echo after expiry")
                r = await session.call_tool("echo", {"text": "again"})
                check(r.content[0].text == "again", "echo after expiry -> again")
                r = await session.call_tool("whoami", {})
                who2 = json.loads(r.content[0].text)
                check(who2["expires_at"] > who["expires_at"], "the call after expiry used a newer token")
                refreshes = [e for e in exchanges if e["kind"] == "request" and "grant_type=refresh_token" in e.get("body", "")]
                auths = [e for e in exchanges if e["kind"] == "request" and "/auth?" in e["url"]]
                check(len(refreshes) >= 1, f"the SDK used the refresh_token grant ({len(refreshes)} refresh, {len(auths)} authorization request(s))")
                check(storage.tokens is not None and storage.tokens.access_token != first_token, "a new access token was stored")
                check(len(auths) == 1, "no second authorization (browser) round")
    finally:
        for p in (rs_proc, as_proc):
            p.stdin.close()
        for p in (rs_proc, as_proc):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
    print("ALL CHECKS PASSED" if not failures else "FAILED: " + "; ".join(failures), flush=True)
    return 0 if not failures else 1


def main() -> None:
    global QUIET
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--access-token-ttl", type=int, default=2)
    p.add_argument("--interactive", action="store_true", help="run the AS with --interactive (cookie-bound chain)")
    p.add_argument("-q", "--quiet", action="store_true")
    args = p.parse_args()
    QUIET = args.quiet
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
