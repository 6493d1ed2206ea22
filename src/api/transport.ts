import { readFileSync } from 'node:fs';
import { Agent, type Dispatcher, errors } from 'undici';
import { ConfigError, SandboxUpstreamError, UpstreamBadResponseError } from '../errors.ts';
import { ibanLength } from '../iban.ts';
import { maskIban } from '../logger.ts';
import { parseRetryAfter } from '../retry.ts';
import { errorForStatus, type RequestContext } from './http-errors.ts';
import type { SandboxUpstream, TlsFiles, TlsPem } from './types.ts';

/** The header with which the sandbox marks every answer (src/sandbox/server.ts). */
const SANDBOX_HEADER = 'x-fraudlink-sandbox';

export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  tls?: TlsFiles | TlsPem;
  /** Largest response body read, in bytes; `MAX_RESPONSE_BYTES` unless a test makes it small. */
  maxResponseBytes?: number;
  sandboxUpstream?: SandboxUpstream;
}

export interface OutgoingRequest {
  method: 'GET' | 'POST';
  /** Path below the base URL, query included, e.g. `/sharing/v1/alerts/export?cursor=x`. */
  path: string;
  body?: unknown;
  signal?: AbortSignal;
}

/** A 2xx body, read to its end; never a partial one. */
export interface RawResponse {
  text: string;
  bytes: number;
}

export interface Transport {
  /** Sends one request; a non-2xx status rejects with the typed error from the status table. */
  send(request: OutgoingRequest): Promise<RawResponse>;
  /** `method path` as logged and put in errors: the base path is included, the origin is not. */
  context(request: Pick<OutgoingRequest, 'method' | 'path'>): RequestContext;
  close(): Promise<void>;
}

/**
 * A 1,000-row export page is ~170 KB; this leaves room for pages hundreds of times larger. Without
 * a cap, a runaway body ends in ERR_STRING_TOO_LONG after ~512 MB, typed a connection error and
 * downloaded again on every retry.
 */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
const EXCERPT_BYTES = 512;
const EXCERPT_CHARS = 200;

function readPem(file: string | undefined, variable: string): Buffer | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError([{ variable, message: `cannot read ${file} (${reason})` }]);
  }
}

/** Certificate material, read once: file paths are named after the variables they come from. */
function tlsOptions(tls: TlsFiles | TlsPem | undefined): {
  cert?: Buffer | string;
  key?: Buffer | string;
  ca?: Buffer | string;
} {
  if (tls === undefined) return {};
  if ('certFile' in tls || 'keyFile' in tls || 'caFile' in tls) {
    const files = tls as TlsFiles;
    const read = {
      cert: readPem(files.certFile, 'API_TLS_CERT'),
      key: readPem(files.keyFile, 'API_TLS_KEY'),
      ca: readPem(files.caFile, 'API_TLS_CA'),
    };
    return Object.fromEntries(Object.entries(read).filter(([, v]) => v !== undefined));
  }
  const pem = tls as TlsPem;
  return Object.fromEntries(Object.entries(pem).filter(([, v]) => v !== undefined));
}

/**
 * Strict, so that a body that is not UTF-8 is refused rather than passed on with U+FFFD in place of
 * its bytes. One leading BOM is dropped (RFC 8259 §8.1 lets a JSON parser ignore it, and JSON.parse
 * would refuse it); a second one, or one further in, stays as text, for JSON.parse to refuse.
 */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The offset of the first byte of `bytes` that is not UTF-8: where a lenient decoding first puts a
 * U+FFFD that the bytes themselves do not spell (EF BF BD); all before it decodes as it stands.
 */
function firstInvalidByte(bytes: Buffer): number {
  const text = bytes.toString('utf8');
  let offset = 0;
  let from = 0;
  for (let at = text.indexOf('\uFFFD'); at !== -1; at = text.indexOf('\uFFFD', at + 1)) {
    offset += Buffer.byteLength(text.slice(from, at));
    if (bytes[offset] !== 0xef || bytes[offset + 1] !== 0xbf || bytes[offset + 2] !== 0xbd) return offset;
    offset += 3;
    from = at + 1;
  }
  return -1;
}

/**
 * Reads a whole body as UTF-8 and counts its bytes. One larger than the dispatcher's limit, or not
 * UTF-8, is a bad response, not retried: the same page would be as large, or as broken, again.
 */
async function readAll(
  body: Dispatcher.ResponseData['body'],
  context: RequestContext,
  limit: number,
): Promise<RawResponse> {
  let bytes: Uint8Array;
  try {
    // undici's own consumer: the stream's async iterator cost several objects and ticks per response.
    bytes = await body.bytes();
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'UND_ERR_RES_EXCEEDED_MAX_SIZE') throw err;
    throw new UpstreamBadResponseError(
      `${context.method} ${context.path} answered a body larger than the ${limit}-byte limit`,
      context,
      err,
    );
  }
  try {
    return { text: utf8.decode(bytes), bytes: bytes.byteLength };
  } catch {
    const at = firstInvalidByte(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    const byte = `0x${bytes[at]?.toString(16).padStart(2, '0')}`;
    throw new UpstreamBadResponseError(
      `${context.method} ${context.path} answered a body that is not valid UTF-8 (at byte ${at}: ${byte})`,
      context,
    );
  }
}

/** The first bytes of an error body, for diagnosis; the rest is discarded and the stream destroyed. */
async function readExcerpt(body: Dispatcher.ResponseData['body'], apiKey: string): Promise<string> {
  // Enough past the cut to see a whole API key (in its longest echo: each byte `%XX`, or each UTF-16
  // unit, at most one a byte, `\uXXXX`) or IBAN that runs across it.
  const wanted = EXCERPT_BYTES + 6 * Buffer.byteLength(apiKey) + IBAN_LOOKAHEAD;
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk as Buffer);
      bytes += (chunk as Buffer).length;
      if (bytes >= wanted) break; // leaving the loop destroys the stream
    }
  } catch {
    // A broken error body must not hide the status that came with it.
  }
  const head = Buffer.concat(chunks, bytes).subarray(0, wanted);
  return excerpt(head.subarray(0, excerptEnd(head, apiKey)).toString('utf8'), apiKey);
}

/**
 * Text that looks like an IBAN, compact (`FR7630006000011234567890189`) or in groups of four split by
 * `space` or by dashes (`de89 3704 0044 0532 0130 00`, `FR76-3000-6000-0112-3456-7890-189`), any
 * case, with no letter or digit right before or after it (`_` may be, unlike with `\b`). The text is
 * a raw body, so one right after a JSON escape (`\nFR76…`, `\u00a0FR76…`) counts too. A compact one
 * may be an id of the same shape: that only hides a little of a diagnostic excerpt. A grouped one
 * may run on into words (`BE68 5390 0754 7034 from`) or the next IBAN of a list, up to `most` more
 * groups (unbounded when undefined): `maskIbanLike` sorts that out.
 */
function ibanLike(space: string, most?: number): RegExp {
  const grouped = (sep: string) => `(?:${sep}[A-Z0-9]{4}){2,${most ?? ''}}(?:${sep}[A-Z0-9]{1,3})?`;
  return new RegExp(
    [
      String.raw`(?:(?<![A-Z0-9])|(?<=\\[bfnrt]|\\u[0-9A-F]{4}))`,
      String.raw`[A-Z]{2}\d{2}(?:[A-Z0-9]{10,30}|${grouped(space)}|${grouped('-')})`,
      '(?![A-Z0-9])',
    ].join(''),
    'gi',
  );
}
/** Unbounded: a match that ended after 7 groups left a list's next IBAN cut in two, neither part masked. */
const IBAN_LIKE = ibanLike(' ');
/** One IBAN before whitespace is collapsed (34 characters at most), and how far past a cut it can run. */
const RAW_IBAN_LIKE = ibanLike(String.raw`\s+`, 7);
const IBAN_LOOKAHEAD = 64;

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
/** Hexadecimal digits as a regex source of either case: `2f` matches `2F` too. */
const anyCase = (digits: string) => digits.replace(/[a-f]/g, (d) => `[${d}${d.toUpperCase()}]`);
/** A regex source made of one `form` per UTF-16 unit of `text`. */
const perUnit = (text: string, form: (unit: number) => string) =>
  Array.from({ length: text.length }, (_, i) => form(text.charCodeAt(i))).join('');
/** A regex source matching `text` exactly, each unit written `\uXXXX` so that none is special. */
const exactly = (text: string) => perUnit(text, (unit) => `\\u${hex(unit, 4)}`);

/**
 * The API key as a server may echo it back: as sent, JSON-escaped (`\/`, `\u002F` or `\u002f`, any
 * character) or percent-encoded (`%2F`, `%2f`, any character), each character in any of its forms.
 * `literal` is how a character itself stands in the text searched: as is in decoded text, as its
 * UTF-8 bytes read as latin1 in a raw body's bytes. Undefined for an empty key.
 */
function keyEchoes(apiKey: string, literal: (ch: string) => string = (ch) => ch): RegExp | undefined {
  if (apiKey === '') return undefined;
  let source = '';
  for (const ch of apiKey) {
    const forms = new Set([exactly(literal(ch)), exactly(JSON.stringify(ch).slice(1, -1))]);
    if (ch === '/') forms.add(exactly('\\/'));
    if (ch === ' ') forms.add(exactly('+'));
    forms.add(perUnit(ch, (unit) => `${exactly('\\u')}${anyCase(hex(unit, 4))}`));
    forms.add(Array.from(Buffer.from(ch), (byte) => `%${anyCase(hex(byte, 2))}`).join(''));
    source += `(?:${[...forms].join('|')})`;
  }
  return new RegExp(source, 'g');
}

/**
 * Where to cut an error body's first bytes: at `EXCERPT_BYTES`, or before an echoed API key (in any
 * form `keyEchoes` knows) or an IBAN running across that point, whose first part `excerpt` could no
 * longer recognise and would leave unmasked. Moving the cut back past one may split another, hence
 * the loop.
 */
function excerptEnd(head: Buffer, apiKey: string): number {
  if (head.length <= EXCERPT_BYTES) return head.length;
  // latin1 gives one character per byte, so match offsets are byte offsets.
  const text = head.toString('latin1');
  const key = keyEchoes(apiKey, (ch) => Buffer.from(ch).toString('latin1'));
  const patterns = key === undefined ? [RAW_IBAN_LIKE] : [key, RAW_IBAN_LIKE];
  let end = EXCERPT_BYTES;
  for (let moved = true; moved; ) {
    moved = false;
    for (const pattern of patterns) {
      for (const m of text.matchAll(pattern)) {
        if (m.index >= end) break;
        if (m.index + m[0].length > end) {
          end = m.index;
          moved = true;
        }
      }
    }
  }
  return end;
}

/**
 * Compact IBAN-like text masked as it stands; grouped text masked on its longest run of whole groups
 * as long as an IBAN of its country (ibantools' registry). Print forms come from software that
 * groups a stored IBAN, so a grouped IBAN has its country's length; one a group or less away from it
 * (a character mistyped away or in) is still a customer's account, masked whole. Where the text is
 * no IBAN from its first group (a code like `SN12-ABCD-EFGH`, or words: `ID42 with code`), or goes
 * on past one, the rest is searched again: it may hold the next IBAN of a list.
 */
function maskIbanLike(text: string): string {
  const sep = /[ -]/.exec(text)?.[0];
  if (sep === undefined) return maskIban(text);
  const length = ibanLength(text.slice(0, 2).toUpperCase());
  if (length !== undefined) {
    for (let end = text.length; end > 0; end = text.lastIndexOf(sep, end - 1)) {
      if (text.slice(0, end).replaceAll(sep, '').length === length)
        return maskIban(text.slice(0, end)) + maskIbansIn(text.slice(end));
    }
    if (Math.abs(text.replaceAll(sep, '').length - length) <= 4) return maskIban(text);
  }
  const next = text.indexOf(sep);
  return text.slice(0, next) + maskIbansIn(text.slice(next));
}

const maskIbansIn = (text: string) => text.replace(IBAN_LIKE, maskIbanLike);

/**
 * Whitespace collapsed, the API key removed should a server echo it back (in any form `keyEchoes`
 * knows), IBANs masked as in logs (an export body holds rows; SPEC §7), and the length capped after
 * masking, so that no IBAN is cut in half and left unmasked.
 */
export function excerpt(text: string, apiKey: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const key = keyEchoes(apiKey);
  const keyless = key === undefined ? flat : flat.replace(key, '[redacted]');
  const safe = maskIbansIn(keyless);
  return safe.length > EXCERPT_CHARS ? `${safe.slice(0, EXCERPT_CHARS)}…` : safe;
}

export function createTransport(options: TransportOptions): Transport {
  const base = new URL(options.baseUrl);
  const origin = base.origin;
  const basePath = base.pathname.replace(/\/+$/, '');
  const maxResponseBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
  const dispatcher = new Agent({
    connectTimeout: options.timeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 10_000,
    maxResponseSize: maxResponseBytes,
    connect: tlsOptions(options.tls),
  });
  const refuseSandbox = options.sandboxUpstream === 'refuse';
  const commonHeaders = { 'x-api-key': options.apiKey, accept: 'application/json' };
  const jsonHeaders = { ...commonHeaders, 'content-type': 'application/json' };

  const context = (request: Pick<OutgoingRequest, 'method' | 'path'>): RequestContext => ({
    method: request.method,
    path: basePath + request.path,
  });

  const send = async (request: OutgoingRequest): Promise<RawResponse> => {
    const ctx = context(request);
    const hasBody = request.body !== undefined;
    const response = await dispatcher.request({
      origin,
      path: ctx.path,
      method: request.method,
      headers: hasBody ? jsonHeaders : commonHeaders,
      body: hasBody ? JSON.stringify(request.body) : null,
      signal: request.signal ?? null,
    });
    const { statusCode, headers, body } = response;
    // Any answer, an error too, is the sandbox's: nothing of it is read.
    if (refuseSandbox && headers[SANDBOX_HEADER] !== undefined) {
      // Destroyed unread; the abort error this emits is no one's concern.
      body.on('error', () => {}).destroy();
      throw new SandboxUpstreamError(options.baseUrl);
    }
    if (statusCode >= 200 && statusCode < 300) return readAll(body, ctx, maxResponseBytes);
    const bodyExcerpt = await readExcerpt(body, options.apiKey);
    // readExcerpt ignores a broken body so as to report the status; one broken by our own abort
    // (the caller cancelling, a deadline) is that abort, as it would be anywhere else.
    if (request.signal?.aborted) throw new errors.RequestAbortedError();
    const retryAfter = headers['retry-after'];
    const retryAfterMs = parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
    throw errorForStatus(statusCode, ctx, bodyExcerpt, retryAfterMs);
  };

  return { send, context, close: () => dispatcher.close() };
}
