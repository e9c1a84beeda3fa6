#!/usr/bin/env python3
"""An MCP server (official Python SDK, mcp 2.3.0) that is an OAuth 2.1 resource server.

    .peers/bin/python drivers/tests/peers/oauth/protected_server.py --issuer http://127.0.0.1:AS_PORT
                      [--port N] [--required-scope mcp:tools] [--log-level WARNING]
    (or .peers/bin/oauth-rs ...)

Streamable HTTP on http://127.0.0.1:PORT/mcp (127.0.0.1 only; --port 0, the default, lets the OS pick:
the socket is bound before uvicorn starts, so the URL is known and there is no race). Once uvicorn
accepts connections it prints exactly one line on stdout and flushes it:

    LISTENING http://127.0.0.1:PORT/mcp

Logs go to stderr. Exits on SIGTERM/SIGINT and, when stdin is a pipe, when stdin closes.

Auth is the SDK's own (AuthSettings + a TokenVerifier):
- every request to /mcp needs `Authorization: Bearer <token>`; without one (or with a bad, expired or
  foreign token) the answer is 401 with
  `WWW-Authenticate: Bearer error="invalid_token", error_description="Authentication required",
   resource_metadata="http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp"`;
  a valid token lacking the required scope gets 403 error="insufficient_scope".
- RFC 9728 metadata at GET /.well-known/oauth-protected-resource/mcp:
  {"resource": "http://127.0.0.1:PORT/mcp", "authorization_servers": ["<issuer>"],
   "scopes_supported": ["mcp:tools"], "bearer_methods_supported": ["header"]}
- a token is accepted when it is a JWT access token (RFC 9068: header typ "at+jwt") signed by a key of
  the issuer's JWKS (jwks_uri from <issuer>/.well-known/openid-configuration, fetched on first use),
  with iss = the issuer, aud = this server's MCP URL (RFC 8707 audience; the SDK's
  validate_token_resource compares it again), and exp in the future (no leeway).

Tools
  echo(text) -> text
  whoami() -> JSON text {"subject", "client_id", "scopes", "resource", "expires_at", "issuer"} of the
              token the request was made with.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import stat
import sys
import threading
import time
import urllib.request

import anyio
import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

log = logging.getLogger("protected_server")


class JwtAccessTokenVerifier:
    """TokenVerifier (the SDK's protocol) for RFC 9068 JWT access tokens of one issuer."""

    def __init__(self, issuer: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self._jwks: jwt.PyJWKClient | None = None
        self._lock = threading.Lock()

    def _jwks_client(self) -> jwt.PyJWKClient:
        with self._lock:
            if self._jwks is None:
                url = self.issuer.rstrip("/") + "/.well-known/openid-configuration"
                with urllib.request.urlopen(url, timeout=10) as r:
                    meta = json.load(r)
                if meta.get("issuer") != self.issuer:
                    raise RuntimeError(f"issuer mismatch: metadata says {meta.get('issuer')!r}")
                self._jwks = jwt.PyJWKClient(meta["jwks_uri"], cache_keys=True, timeout=10)
            return self._jwks

    def _verify_sync(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
            if str(header.get("typ", "")).lower() not in ("at+jwt", "application/at+jwt"):
                log.info("rejected token: typ %r", header.get("typ"))
                return None
            key = self._jwks_client().get_signing_key_from_jwt(token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=["RS256", "PS256", "ES256"],
                audience=self.audience,
                issuer=self.issuer,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except Exception as e:  # any failure -> not authenticated (401)
            log.info("rejected token: %s: %s", type(e).__name__, e)
            return None
        aud = claims["aud"]
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            resource=self.audience if isinstance(aud, list) else aud,
            subject=claims.get("sub"),
            claims={"iss": claims.get("iss")},
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        return await anyio.to_thread.run_sync(self._verify_sync, token)


def build_server(issuer: str, mcp_url: str, required_scope: str, log_level: str) -> MCPServer:
    mcp = MCPServer(
        "oauth-protected-test-server",
        version="1.0.0",
        log_level=log_level,
        token_verifier=JwtAccessTokenVerifier(issuer, mcp_url),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=mcp_url,
            required_scopes=[required_scope] if required_scope else None,
            validate_token_resource=True,
        ),
    )

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def whoami() -> str:
        """Who the bearer token says the caller is."""
        t = get_access_token()
        if t is None:
            return json.dumps(None)
        return json.dumps(
            {
                "subject": t.subject,
                "client_id": t.client_id,
                "scopes": t.scopes,
                "resource": t.resource,
                "expires_at": t.expires_at,
                "issuer": (t.claims or {}).get("iss"),
            }
        )

    return mcp


def watch_stdin() -> None:
    """Exit when stdin (a pipe) closes: the parent test went away."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return

    def run() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        os._exit(0)

    threading.Thread(target=run, daemon=True).start()


async def serve(args: argparse.Namespace) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    mcp_url = f"http://127.0.0.1:{port}/mcp"

    mcp = build_server(args.issuer, mcp_url, args.required_scope, args.log_level.upper())
    app = mcp.streamable_http_app()

    config = uvicorn.Config(app, log_level=args.log_level.lower(), lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            await task
            sys.exit(1)
        await asyncio.sleep(0.01)
    print(f"LISTENING {mcp_url}", flush=True)
    await task


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--issuer", required=True, help="the authorization server's issuer, e.g. http://127.0.0.1:PORT")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = pick a free one)")
    p.add_argument("--required-scope", default="mcp:tools", help="scope every request needs ('' = none)")
    p.add_argument("--log-level", default="WARNING")
    args = p.parse_args()
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    watch_stdin()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
