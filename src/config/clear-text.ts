import { isIPv4 } from 'node:net';
import type { Env, Problem } from './index.ts';

/** A host that only this machine reaches: 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(host: string): boolean {
  const name = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1');
  if (name === 'localhost' || name === '::1') return true;
  return isIPv4(name) && name.startsWith('127.');
}

const isSet = (env: Env, variable: string) => (env[variable] ?? '').trim() !== '';
const isTrue = (env: Env, variable: string) =>
  ['true', '1', 'yes', 'on'].includes((env[variable] ?? '').trim());
const isHttp = (env: Env, variable: string) => URL.parse((env[variable] ?? '').trim())?.protocol === 'http:';

/** TLS to the brokers: KAFKA_SSL=true, or unset beside a KAFKA_TLS_* file, which turns TLS on. */
const kafkaTls = (env: Env) =>
  isTrue(env, 'KAFKA_SSL') ||
  (!isSet(env, 'KAFKA_SSL') &&
    ['KAFKA_TLS_CA', 'KAFKA_TLS_CERT', 'KAFKA_TLS_KEY'].some((v) => isSet(env, v)));

/** One way payment data or a credential would travel in clear: the variable to change, and what. */
interface ClearText {
  variable: string;
  /** Why the variable is refused. */
  refusal: string;
  /** What travels in clear, for the warning given when ALLOW_INSECURE_TRANSPORT=true. */
  inClear: string;
}

/** `variable`'s URL where it is http:// to a host beyond loopback: `inClear` would travel in clear. */
function httpBeyondLoopback(env: Env, variable: string, inClear: string): ClearText[] {
  const url = URL.parse((env[variable] ?? '').trim());
  if (url?.protocol !== 'http:' || isLoopbackHost(url.hostname)) return [];
  return [
    {
      variable,
      refusal: 'must be an https:// URL unless its host is loopback (127.0.0.0/8, ::1, localhost)',
      inClear,
    },
  ];
}

function clearTextUses(env: Env): ClearText[] {
  const uses: ClearText[] = [
    ...httpBeyondLoopback(env, 'API_BASE_URL', 'the API key, IBANs and names to and from API_BASE_URL'),
  ];
  if (isSet(env, 'KAFKA_SASL_MECHANISM') && !kafkaTls(env)) {
    uses.push({
      variable: 'KAFKA_SSL',
      refusal: 'must be true when KAFKA_SASL_MECHANISM is set',
      inClear: 'the Kafka SASL credentials (KAFKA_SSL is not true)',
    });
  }
  uses.push(
    ...httpBeyondLoopback(
      env,
      'KAFKA_SASL_OAUTH_TOKEN_URL',
      'the OAuth client secret and tokens to and from KAFKA_SASL_OAUTH_TOKEN_URL',
    ),
  );
  // Credentials may also ride in the URL itself (user:password@), which the registry client sends.
  const registryUrl = URL.parse((env.SCHEMA_REGISTRY_URL ?? '').trim());
  const registryAuth =
    ['SCHEMA_REGISTRY_USERNAME', 'SCHEMA_REGISTRY_PASSWORD'].some((v) => isSet(env, v)) ||
    Boolean(registryUrl?.username || registryUrl?.password);
  if (registryAuth && isHttp(env, 'SCHEMA_REGISTRY_URL')) {
    uses.push({
      variable: 'SCHEMA_REGISTRY_URL',
      refusal: 'must be an https:// URL when SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD are set',
      inClear: 'the schema registry credentials (SCHEMA_REGISTRY_URL is http://)',
    });
  }
  return uses;
}

/**
 * Clear text, refused by default: an upstream over http:// beyond loopback, SASL without TLS, registry
 * credentials over http://. ALLOW_INSECURE_TRANSPORT=true takes them instead, and `inClear` then says
 * what travels in clear, for the warning each process logs at start. Only the variables in `read`
 * (the command's own) count.
 */
export function clearTextCheck(
  env: Env,
  read: Readonly<Record<string, unknown>>,
): { problems: Problem[]; inClear: string[] } {
  const uses = clearTextUses(env).filter((use) => use.variable in read);
  if (isTrue(env, 'ALLOW_INSECURE_TRANSPORT')) return { problems: [], inClear: uses.map((u) => u.inClear) };
  const allow =
    ' (payment data and credentials must not travel in clear; ALLOW_INSECURE_TRANSPORT=true allows it for trials)';
  return { problems: uses.map((u) => ({ variable: u.variable, message: u.refusal + allow })), inClear: [] };
}
