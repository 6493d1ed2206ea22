import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

export const OAUTH_AUDIENCE = 'fraudlink-test-kafka';

export interface OAuthServer {
  /** The OAuth 2 token endpoint (client credentials). */
  tokenUrl: string;
  /** The JWKS the broker validates tokens against. */
  jwksUrl: string;
  client: { id: string; secret: string };
  /** Tokens issued so far, and the form (and scope) of each token request. */
  issued: { clientId: string; scope: string | undefined }[];
  close(): Promise<void>;
}

function credentialsOf(req: IncomingMessage, form: URLSearchParams): { id: string; secret: string } {
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (basic) {
    const [id, secret] = Buffer.from(basic, 'base64').toString().split(':');
    return { id: decodeURIComponent(id ?? ''), secret: decodeURIComponent(secret ?? '') };
  }
  return { id: form.get('client_id') ?? '', secret: form.get('client_secret') ?? '' };
}

/**
 * An OAuth 2 authorization server on loopback for the OAUTHBEARER listener: a client-credentials
 * token endpoint issuing RS256 JWTs (sub = the client id, aud = OAUTH_AUDIENCE) and the JWKS that
 * verifies them. A client with another secret gets 401 invalid_client.
 */
export async function startOAuthServer(options: { expiresInS?: number } = {}): Promise<OAuthServer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const kid = randomUUID();
  const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] };
  const client = { id: 'fraudlink-client', secret: `secret-${randomUUID()}` };
  const issued: OAuthServer['issued'] = [];
  const expiresIn = options.expiresInS ?? 3600;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const json = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (req.method === 'GET' && req.url === '/jwks') return json(200, jwks);
        if (req.method !== 'POST' || req.url !== '/token') return json(404, { error: 'not_found' });
        const form = new URLSearchParams(Buffer.concat(chunks).toString());
        if (form.get('grant_type') !== 'client_credentials') {
          return json(400, { error: 'unsupported_grant_type' });
        }
        const { id, secret } = credentialsOf(req, form);
        if (id !== client.id || secret !== client.secret) {
          return json(401, { error: 'invalid_client', error_description: 'client authentication failed' });
        }
        const scope = form.get('scope') ?? undefined;
        issued.push({ clientId: id, scope });
        const token = await new SignJWT({ ...(scope && { scope }) })
          .setProtectedHeader({ alg: 'RS256', kid })
          .setSubject(id)
          .setAudience(OAUTH_AUDIENCE)
          .setIssuedAt()
          .setExpirationTime(`${expiresIn}s`)
          .sign(privateKey);
        return json(200, { access_token: token, token_type: 'Bearer', expires_in: expiresIn });
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    tokenUrl: `${base}/token`,
    jwksUrl: `${base}/jwks`,
    client,
    issued,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
