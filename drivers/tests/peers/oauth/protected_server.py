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

--dpop: the resource takes DPoP-bound tokens only (RFC 9449 § 7), checked in front of the SDK (whose
own check stays, on the token itself): every request to /mcp needs `Authorization: DPoP <token>` and
exactly one `DPoP` proof header, a JWT with typ dpop+jwt, an asymmetric alg, a public jwk (no "d"),
a valid signature by that jwk, htm = the request's method, htu = this server's MCP URL (no query),
iat within 60 s, a jti not seen before, ath = base64url(SHA-256(token)), and the token's cnf.jkt =
the jwk's RFC 7638 thumbprint. Anything else is answered 401 with `WWW-Authenticate: DPoP
error="invalid_token", ..., resource_metadata="..."` (no token: `DPoP resource_metadata="..."`; a Bearer
one too). --dpop-nonce: each proof must also carry this server's nonce; one without it is answered
401 `DPoP error="use_dpop_nonce"` with a `DPoP-Nonce` header (RFC 9449 § 9).

Tools
  echo(text) -> text
  whoami() -> JSON text {"subject", "client_id", "scopes", "resource", "expires_at", "issuer",
              "dpop_jkt"} of the token the request was made with (dpop_jkt: its cnf.jkt, or null).
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
import base64
import hashlib
import secrets

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
            claims={"iss": claims.get("iss"), "jkt": (claims.get("cnf") or {}).get("jkt")},
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
                "dpop_jkt": (t.claims or {}).get("jkt"),
            }
        )

    return mcp


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwk_thumbprint(jwk: dict) -> str:
    """RFC 7638: the required members, in lexicographic order, no whitespace, SHA-256."""
    if jwk.get("kty") == "EC":
        members = {k: jwk[k] for k in ("crv", "kty", "x", "y")}
    elif jwk.get("kty") == "RSA":
        members = {k: jwk[k] for k in ("e", "kty", "n")}
    else:
        members = {k: jwk[k] for k in ("crv", "kty", "x")}
    canonical = json.dumps(members, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


class DpopGuard:
    """ASGI middleware: DPoP-bound tokens only on /mcp (see the module's docstring)."""

    ALGS = ["ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"]

    def __init__(self, app, mcp_url: str, require_nonce: bool) -> None:
        self.app = app
        self.mcp_url = mcp_url
        self.prm_url = mcp_url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
        self.nonce = secrets.token_urlsafe(16) if require_nonce else None
        self.jtis: set[str] = set()

    def check(self, method: str, proofs: list[str], token: str) -> str | None:
        """None when the proof holds; else "use_dpop_nonce" or what is wrong."""
        if len(proofs) != 1:
            return f"{len(proofs)} DPoP headers"
        proof = proofs[0]
        try:
            header = jwt.get_unverified_header(proof)
            if header.get("typ") != "dpop+jwt":
                return "typ is not dpop+jwt"
            alg, jwk = header.get("alg"), header.get("jwk")
            if alg not in self.ALGS or not isinstance(jwk, dict) or "d" in jwk:
                return "bad alg or jwk"
            key = jwt.PyJWK(jwk, algorithm=alg).key
            claims = jwt.decode(
                proof,
                key,
                algorithms=[alg],
                options={"verify_aud": False, "require": ["jti", "htm", "htu", "iat"]},
            )
        except Exception as e:
            return f"proof: {type(e).__name__}: {e}"
        if claims["htm"] != method:
            return "htm"
        if claims["htu"] != self.mcp_url:
            return f"htu {claims['htu']!r}"
        if abs(time.time() - float(claims["iat"])) > 60:
            return "iat"
        if claims["jti"] in self.jtis:
            return "a jti seen before"
        if claims.get("ath") != b64url(hashlib.sha256(token.encode("ascii")).digest()):
            return "ath"
        try:
            cnf = jwt.decode(token, options={"verify_signature": False}).get("cnf") or {}
        except Exception:
            return "the token is no JWT"
        if cnf.get("jkt") != jwk_thumbprint(jwk):
            return "the token is not bound to the proof's key"
        if self.nonce is not None and claims.get("nonce") != self.nonce:
            return "use_dpop_nonce"
        self.jtis.add(claims["jti"])
        return None

    async def refuse(self, send, error: str | None, description: str | None = None) -> None:
        params = [f'resource_metadata="{self.prm_url}"']
        if error:
            params.insert(0, f'error="{error}"')
            if description:
                safe = description.replace('"', "'").replace("\\", "/")
                params.insert(1, f'error_description="{safe}"')
        headers = [
            (b"www-authenticate", ("DPoP " + ", ".join(params)).encode()),
            (b"content-type", b"application/json"),
        ]
        if error == "use_dpop_nonce" and self.nonce is not None:
            headers.append((b"dpop-nonce", self.nonce.encode()))
        body = json.dumps({"error": error or "unauthorized"}).encode()
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] != "/mcp":
            return await self.app(scope, receive, send)
        auth = [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"authorization"]
        proofs = [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"dpop"]
        scheme, _, token = (auth[0] if len(auth) == 1 else "").partition(" ")
        if scheme.lower() != "dpop" or not token.strip():
            log.info("refused: no DPoP token (%s)", scheme or "none")
            return await self.refuse(send, None)
        token = token.strip()
        why = self.check(scope["method"], proofs, token)
        if why == "use_dpop_nonce":
            log.info("refused: no nonce")
            return await self.refuse(send, "use_dpop_nonce", "Resource server requires a nonce")
        if why is not None:
            log.warning("refused: %s", why)
            return await self.refuse(send, "invalid_token", why)
        # The SDK checks the token itself, as a Bearer one.
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"authorization"]
        headers.append((b"authorization", f"Bearer {token}".encode()))
        await self.app(dict(scope, headers=headers), receive, send)


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
    if args.dpop:
        app = DpopGuard(app, mcp_url, args.dpop_nonce)

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
    p.add_argument("--dpop", action="store_true", help="take DPoP-bound tokens only (RFC 9449)")
    p.add_argument("--dpop-nonce", action="store_true", help="with --dpop: require this server's nonce")
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
