#!/usr/bin/env node
// A real OAuth 2.1 / OpenID authorization server for the client's OAuth tests: `oidc-provider`
// (pinned in drivers/tests/peers/oauth/package.json, installed into .peers/oauth-npm by .ci/install-peers),
// configured for the MCP authorization spec (2025-11-25) and for headless tests. See README.md here.
//
//   node22 authorization-server.cjs [--port N] [--access-token-ttl SECONDS] [--refresh-token-ttl SECONDS]
//                                   [--interactive] [--openid-only] [--dpop-nonce] [--log]
//   (or .peers/bin/oauth-as ...; env OAUTH_AS_PORT / OAUTH_AS_ACCESS_TOKEN_TTL / OAUTH_AS_REFRESH_TOKEN_TTL)
//
// Listens on 127.0.0.1 only (port 0 = the OS picks one, the default) and, once it accepts
// connections, prints exactly one line on stdout:
//
//   ISSUER http://127.0.0.1:PORT
//
// Everything else (oidc-provider's notices, our request log with --log) goes to stderr. Exits on
// SIGTERM/SIGINT and, when stdin is a pipe, when stdin closes.
//
// What it offers (all of it in the metadata at /.well-known/openid-configuration):
// - open dynamic client registration (RFC 7591) at /reg, no initial access token: public clients
//   (token_endpoint_auth_method "none") and confidential ones (client_secret_basic/_post);
//   application_type "native" with http://127.0.0.1:<any port>/... loopback redirect URIs
//   (RFC 8252 7.3: the port is not compared), or "web".
// - authorization code + PKCE, S256 only, required for every client.
// - resource indicators (RFC 8707): any http(s) URL is accepted as `resource`; the access token for it
//   is a JWT (RFC 9068, typ at+jwt, RS256, key in /jwks) with aud = that URL, scope = the granted
//   resource scopes asked for (mcp:tools, mcp:admin), sub = "test-user". Without `resource` the
//   access token is opaque (no audience).
// - scopes_supported: openid, offline_access, mcp:tools, mcp:admin (a registered client's `scope` may
//   use only these); mcp:* are granted as scopes of the requested resource.
// - refresh tokens for every client allowed the refresh_token grant (whether or not offline_access
//   or prompt=consent was sent); public clients get a new refresh token on each use (rotation).
// - RFC 9207: authorization_response_iss_parameter_supported: true, `iss` in every redirect.
// - DPoP (RFC 9449, ES256 among dpop_signing_alg_values_supported): a token request with a proof
//   gets a token bound to its key (`token_type: DPoP`, `cnf.jkt` in the JWT); --dpop-nonce requires
//   the server's nonce in every proof.
// - introspection (/token/introspection) and revocation (/token/revocation) for the client's own
//   tokens (client authentication as registered).
// - No login or consent form. Default ("direct"): every authorization request runs as the logged-in
//   fixed account "test-user" and is granted what it asks for, so GET /auth?... answers at once
//   with 303 to redirect_uri?code=...&state=...&iss=...; no cookie is needed.
//   --interactive: the way oidc-provider behaves with a real user: /auth -> 303 /interaction/<uid>
//   (here auto-completed: login as test-user + consent) -> 303 /auth/<uid> -> 303 redirect_uri?code=...
//   This chain needs a cookie jar (the _interaction/_interaction_resume/_session cookies bind it to
//   the user agent).
// - the same metadata document at /.well-known/oauth-authorization-server (RFC 8414) and at
//   /.well-known/openid-configuration; --openid-only answers 404 at the RFC 8414 location (to exercise a
//   client's fallback to the OpenID one).
// - --log: one line per request on stderr (method, URL, status, Location).
'use strict';

const http = require('node:http');
const path = require('node:path');
const crypto = require('node:crypto');
const fs = require('node:fs');
const { pathToFileURL } = require('node:url');

// stdout carries the ISSUER line only.
console.log = console.error;
console.info = console.error;

function parseArgs(argv) {
  const o = {
    port: Number(process.env.OAUTH_AS_PORT || 0),
    accessTokenTtl: Number(process.env.OAUTH_AS_ACCESS_TOKEN_TTL || 3600),
    refreshTokenTtl: Number(process.env.OAUTH_AS_REFRESH_TOKEN_TTL || 86400),
    interactive: false,
    dpopNonce: false,
    openidOnly: false,
    log: !!process.env.OAUTH_AS_LOG,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--port') o.port = Number(val());
    else if (a === '--access-token-ttl') o.accessTokenTtl = Number(val());
    else if (a === '--refresh-token-ttl') o.refreshTokenTtl = Number(val());
    else if (a === '--interactive') o.interactive = true;
    else if (a === '--dpop-nonce') o.dpopNonce = true;
    else if (a === '--openid-only') o.openidOnly = true;
    else if (a === '--log') o.log = true;
    else if (a === '-h' || a === '--help') {
      const lines = fs.readFileSync(__filename, 'utf8').split('\n');
      process.stderr.write(lines.slice(1, lines.indexOf("'use strict';")).join('\n') + '\n');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const k of ['port', 'accessTokenTtl', 'refreshTokenTtl']) {
    if (!Number.isInteger(o[k]) || o[k] < 0) throw new Error(`bad ${k}: ${o[k]}`);
  }
  if (o.accessTokenTtl < 1) throw new Error('--access-token-ttl must be >= 1');
  return o;
}

// oidc-provider is ESM-only and lives in .peers/oauth-npm, not beside this script.
async function loadProvider() {
  const dirs = [
    process.env.PEERS_OAUTH_NODE_MODULES,
    path.join(__dirname, '../../../.peers/oauth-npm/node_modules'),
    path.join(__dirname, 'node_modules'),
  ].filter(Boolean);
  for (const d of dirs) {
    const entry = path.join(d, 'oidc-provider', 'lib', 'index.js');
    if (fs.existsSync(entry)) {
      const mod = await import(pathToFileURL(entry).href);
      return { Provider: mod.default, interactionPolicy: mod.interactionPolicy };
    }
  }
  throw new Error(`oidc-provider not found in ${dirs.join(', ')} (run .ci/install-peers)`);
}

const ACCOUNT = 'test-user';
// oidc-provider's `scopes` (scopes_supported in its metadata, and all that dynamic registration
// accepts in a client's `scope`); mcp:* are also the scopes of every resource server (below).
const RS_SCOPES = ['mcp:tools', 'mcp:admin'];
const SCOPES = ['openid', 'offline_access', ...RS_SCOPES];

function splitScope(s) {
  return (s || '').split(' ').filter(Boolean);
}

async function main() {
  const opt = parseArgs(process.argv.slice(2));
  const { Provider, interactionPolicy } = await loadProvider();

  // Bind first: the issuer carries the port.
  const server = http.createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opt.port, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;

  // A fresh signing key per run (instead of oidc-provider's published development key).
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: crypto.randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };

  let provider;

  // A grant for everything the request asks: OIDC scopes as such, every other scope as a scope of
  // each requested resource.
  async function autoGrant(accountId, clientId, params) {
    const grant = new provider.Grant({ accountId, clientId });
    const scopes = splitScope(params.scope);
    const oidc = scopes.filter((s) => SCOPES.includes(s));
    const rs = scopes.filter((s) => RS_SCOPES.includes(s));
    if (oidc.length) grant.addOIDCScope(oidc.join(' '));
    let resources = params.resource;
    if (resources && !Array.isArray(resources)) resources = [resources];
    for (const r of resources || []) grant.addResourceScope(r, rs.join(' '));
    await grant.save();
    return grant;
  }

  const policy = interactionPolicy.base();
  if (!opt.interactive) {
    // Nothing left to ask a person: the account is always logged in (below) and loadExistingGrant
    // grants what is requested, so prompt=login/consent and "native clients require interaction"
    // are answered as if the person had clicked through.
    policy.get('login').checks.remove('login_prompt');
    policy.get('consent').checks.remove('consent_prompt');
    policy.get('consent').checks.remove('native_client_prompt');
  }

  const configuration = {
    jwks: { keys: [jwk] },
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    scopes: SCOPES,
    claims: { openid: ['sub'] },
    clientDefaults: {
      // RFC 7591's default is authorization_code alone; a client that omits grant_types still gets
      // refresh tokens here.
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    responseTypes: ['code'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true, initialAccessToken: false },
      introspection: { enabled: true },
      // DPoP (RFC 9449): a token request with a valid proof gets a DPoP-bound token (its JWT
      // carries cnf.jkt); without a proof, a Bearer one. --dpop-nonce: every proof must carry
      // this server's nonce (a 400 use_dpop_nonce with a DPoP-Nonce header first).
      dPoP: {
        enabled: true,
        nonceSecret: crypto.randomBytes(32),
        requireNonce: () => opt.dpopNonce,
      },
      revocation: { enabled: true },
      userinfo: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resourceIndicator) => {
          let u;
          try {
            u = new URL(resourceIndicator);
          } catch {
            throw new provider.constructor.errors.InvalidTarget('resource must be an absolute URL');
          }
          if (u.protocol !== 'http:' && u.protocol !== 'https:') {
            throw new provider.constructor.errors.InvalidTarget('resource must be an http(s) URL');
          }
          return {
            scope: RS_SCOPES.join(' '),
            audience: resourceIndicator,
            accessTokenTTL: opt.accessTokenTtl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    ttl: {
      AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL || opt.accessTokenTtl,
      AuthorizationCode: 60,
      Grant: Math.max(opt.refreshTokenTtl, 3600),
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: opt.refreshTokenTtl,
      Session: 86400,
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Codes and tokens are not tied to the (never sent back) browser session.
    expiresWithSession: async () => false,
    findAccount: async (_ctx, sub) => ({
      accountId: sub,
      claims: async () => ({ sub }),
    }),
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      if (grantId) return provider.Grant.find(grantId);
      return autoGrant(ctx.oidc.account.accountId, ctx.oidc.client.clientId, ctx.oidc.params);
    },
    interactions: {
      policy,
      url: (_ctx, interaction) => `/interaction/${interaction.uid}`,
    },
    renderError: async (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
    clientBasedCORS: () => true,
  };

  provider = new Provider(issuer, configuration);

  if (!opt.interactive) {
    // Every browser session is already logged in as the test account.
    const origGet = provider.Session.get;
    provider.Session.get = async function get(ctx) {
      const session = await origGet.call(this, ctx);
      if (!session.accountId) session.loginAccount({ accountId: ACCOUNT, amr: ['pwd'] });
      return session;
    };
  }

  if (opt.log) {
    provider.use(async (ctx, next) => {
      await next();
      process.stderr.write(`[oauth-as] ${ctx.method} ${ctx.url} -> ${ctx.status}${ctx.response.get('location') ? ` Location: ${ctx.response.get('location')}` : ''}\n`);
    });
  }

  provider.use(async (ctx, next) => {
    if (opt.openidOnly && ctx.path === '/.well-known/oauth-authorization-server') {
      ctx.status = 404;
      ctx.body = { error: 'not_found' };
      return;
    }
    const m = /^\/interaction\/([^/]+)$/.exec(ctx.path);
    if (m && ctx.method === 'GET') {
      // The auto-completed login + consent (reached only with --interactive, or for a request that
      // still needs a person, e.g. max_age=0).
      let details;
      try {
        details = await provider.interactionDetails(ctx.req, ctx.res);
      } catch (err) {
        // No _interaction cookie (a user agent without a cookie jar) or an expired interaction.
        ctx.status = 400;
        ctx.body = { error: err.error || 'invalid_request', error_description: err.error_description || String(err.message) };
        return;
      }
      const grant = await autoGrant(ACCOUNT, details.params.client_id, details.params);
      const result = { login: { accountId: ACCOUNT, amr: ['pwd'] }, consent: { grantId: grant.jti } };
      const to = await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
      ctx.status = 303;
      ctx.redirect(to);
      return;
    }
    await next();
  });

  server.on('request', provider.callback());

  const stop = () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    const st = fs.fstatSync(0);
    if (st.isFIFO() || st.isSocket()) {
      process.stdin.on('end', stop);
      process.stdin.on('close', stop);
      process.stdin.resume();
    }
  } catch {
    // no stdin at all
  }

  process.stdout.write(`ISSUER ${issuer}\n`);
}

main().catch((err) => {
  process.stderr.write(`authorization-server: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
