import { hash } from 'node:crypto';
import { isValidNormalizedIban, normalizeIban } from '../iban.ts';
import { parseInstant } from '../instant.ts';

export { parseInstant };

export const Qualifications = ['PENDING', 'CONFIRMED', 'REJECTED', 'UNDER_INVESTIGATION'] as const;
export type Qualification = (typeof Qualifications)[number] | 'UNKNOWN';

/** The Avro value of an AlertUpserted or AlertDeactivated event (timestamps as epoch ms). */
export interface AlertEvent {
  eventId: string;
  alertId: string;
  iban: string;
  bic: string | null;
  qualification: Qualification;
  qualificationRaw: string | null;
  reportsCount: number;
  updatedAt: number;
  observedAt: number;
}

export type EventType = 'AlertUpserted' | 'AlertDeactivated';

/** Stable codes naming the rule a feed row broke; sent as the DLQ record's `error-code` header. */
export const RowErrorCodes = {
  NOT_AN_OBJECT: 'ROW_NOT_AN_OBJECT',
  ID_MISSING: 'ROW_ID_MISSING',
  ID_UNSAFE_NUMBER: 'ROW_ID_UNSAFE_NUMBER',
  IBAN_MISSING: 'ROW_IBAN_MISSING',
  IBAN_INVALID: 'ROW_IBAN_INVALID',
  UPDATED_AT_INVALID: 'ROW_UPDATED_AT_INVALID',
  IS_ACTIVE_INVALID: 'ROW_IS_ACTIVE_INVALID',
  REPORTS_COUNT_INVALID: 'ROW_REPORTS_COUNT_INVALID',
  BIC_INVALID: 'ROW_BIC_INVALID',
  /** Nested deeper than MAX_ROW_DEPTH: JSON.stringify would overflow the stack on it. */
  TOO_DEEP: 'ROW_TOO_DEEP',
  /** Its event is larger than the alerts topic takes (a field of absurd size). */
  TOO_LARGE: 'ROW_TOO_LARGE',
} as const;

export type RowErrorCode = (typeof RowErrorCodes)[keyof typeof RowErrorCodes];

export type MappedRow =
  | { ok: true; type: EventType; event: AlertEvent }
  | { ok: false; code: RowErrorCode; message: string; id: string | null; updatedAt: number | null };

const MAX_INT32 = 2 ** 31 - 1;

/**
 * Deepest nesting of objects and arrays a row may have, the row itself being level 1. A feed row is
 * flat (its `qualification` at most an object); 20,000 levels make JSON.stringify throw RangeError.
 */
export const MAX_ROW_DEPTH = 64;

/**
 * Longest alert id published, in characters. The cursor record keeps the id of every alert published
 * at the high-water mark: a few ids of hundreds of kB there would make it larger than the offsets
 * topic takes, and stop the connector.
 */
export const MAX_ALERT_ID_CHARS = 1024;
const knownQualifications: ReadonlySet<string> = new Set(Qualifications);

/**
 * The row's id as a string, or null. A number beyond 2^53 - 1 is null too: JSON.parse has already
 * rounded it to the nearest double, so two alerts could share the result (checked by magnitude
 * only: no reviver on the page worker's parse, the hot path).
 */
function idOf(value: unknown): string | null {
  if (typeof value === 'string') return value.trim() === '' ? null : value;
  // NaN and infinities fail the comparison too.
  if (typeof value === 'number' && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return String(value);
  return null;
}

/** The event id of SPEC §4: the same row change always has the same id, whatever form updatedAt took. */
export function eventIdOf(alertId: string, updatedAt: number, isActive: boolean): string {
  // crypto.hash: one call, no Hash object per row (the connector hashes every row).
  return hash('sha256', `${alertId}|${updatedAt}|${isActive}`, 'hex');
}

/**
 * Identifies an event's content: its event id and every other field it carries but `observedAt`. Two
 * changes of one alert with the same `updatedAt` and `isActive` (timestamps of one-second precision)
 * share an event id, but not this, so the second one is not taken for the first served again.
 * 64 bits of SHA-256 (16 hex digits): it is only ever compared among the rows at one mark, and every
 * row there costs the cursor record its fingerprint beside its 64-digit event id.
 */
export function rowFingerprintOf(event: AlertEvent): string {
  const { eventId, iban, bic, qualification, qualificationRaw, reportsCount } = event;
  return hash(
    'sha256',
    JSON.stringify([eventId, iban, bic, qualification, qualificationRaw, reportsCount]),
    'hex',
  ).slice(0, 16);
}

/** Identifies a row that cannot become an event, by its raw content, so a re-served copy is rejected once. */
export function fingerprintOf(raw: string): string {
  return hash('sha256', raw, 'hex');
}

function reject(code: RowErrorCode, message: string, row: Record<string, unknown>): MappedRow {
  return { ok: false, code, message, id: idOf(row.id), updatedAt: parseInstant(row.updatedAt) };
}

const isContainer = (value: unknown): value is object => typeof value === 'object' && value !== null;

type Pending = [node: object, depth: number][];

/**
 * Queues the containers among `node`'s children (at `depth + 1`); true when one lies deeper than
 * `limit`. for...in, not Object.values: no array per row on the connector's hot path.
 */
function queueChildren(node: object, depth: number, limit: number, pending: Pending): boolean {
  if (Array.isArray(node)) {
    for (const child of node) {
      if (!isContainer(child)) continue;
      if (depth >= limit) return true;
      pending.push([child, depth + 1]);
    }
    return false;
  }
  for (const key in node) {
    const child = (node as Record<string, unknown>)[key];
    if (!isContainer(child)) continue;
    if (depth >= limit) return true;
    pending.push([child, depth + 1]);
  }
  return false;
}

/**
 * True when objects and arrays nest deeper than `limit` levels in `value` (itself level 1). Walks
 * with a list of its own, never recursion, so that any depth is measured.
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  if (!isContainer(value)) return false;
  if (limit < 1) return true;
  const pending: Pending = [[value, 1]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop() as Pending[number];
    if (queueChildren(node, depth, limit, pending)) return true;
  }
  return false;
}

/**
 * The JSON text JSON.stringify gives for a value parsed from JSON, at any depth: written with a
 * stack of its own rather than recursion, for rows too deep for JSON.stringify.
 */
export function deepJson(value: unknown): string {
  const out: string[] = [];
  type Frame = { close: string; entries: [string | null, unknown][]; next: number };
  const frames: Frame[] = [];
  const open = (node: unknown): void => {
    if (!isContainer(node)) {
      out.push(JSON.stringify(node) ?? 'null');
      return;
    }
    const array = Array.isArray(node);
    const entries: [string | null, unknown][] = array
      ? node.map((v): [null, unknown] => [null, v])
      : Object.entries(node).filter(([, v]) => v !== undefined && typeof v !== 'function');
    out.push(array ? '[' : '{');
    frames.push({ close: array ? ']' : '}', entries, next: 0 });
  };
  open(value);
  while (frames.length > 0) {
    const frame = frames.at(-1) as Frame;
    if (frame.next === frame.entries.length) {
      out.push(frame.close);
      frames.pop();
      continue;
    }
    const [key, child] = frame.entries[frame.next] as [string | null, unknown];
    if (frame.next++ > 0) out.push(',');
    if (key !== null) out.push(`${JSON.stringify(key)}:`);
    open(child);
  }
  return out.join('');
}

/** The row's text for its DLQ copy and fingerprint: JSON.stringify's, at any depth. */
export function rowText(raw: unknown, code: RowErrorCode | undefined): string {
  if (code === RowErrorCodes.TOO_DEEP) return deepJson(raw);
  return JSON.stringify(raw) ?? 'null';
}

/** Turns one export row into an event, or names the first rule it breaks (SPEC §4). */
export function mapRow(raw: unknown, observedAt: number): MappedRow {
  if (nestedDeeperThan(raw, MAX_ROW_DEPTH)) {
    const row = (Array.isArray(raw) ? {} : raw) as Record<string, unknown>;
    return reject(
      RowErrorCodes.TOO_DEEP,
      `row nests objects and arrays deeper than ${MAX_ROW_DEPTH} levels`,
      row,
    );
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return {
      ok: false,
      code: RowErrorCodes.NOT_AN_OBJECT,
      message: 'row is not a JSON object',
      id: null,
      updatedAt: null,
    };
  }
  const row = raw as Record<string, unknown>;
  const alertId = idOf(row.id);
  if (alertId === null) {
    if (typeof row.id === 'number') {
      return reject(
        RowErrorCodes.ID_UNSAFE_NUMBER,
        `id is a number beyond 2^53 - 1 (read as ${row.id}): its digits may be lost, here and in ` +
          'the raw copy; the upstream should send it as a string',
        row,
      );
    }
    return reject(RowErrorCodes.ID_MISSING, 'id is missing or not a string or number', row);
  }
  if (alertId.length > MAX_ALERT_ID_CHARS) {
    return reject(
      RowErrorCodes.TOO_LARGE,
      `id is ${alertId.length} characters, over the ${MAX_ALERT_ID_CHARS} an alert id may have`,
      row,
    );
  }
  if (typeof row.iban !== 'string' || row.iban.trim() === '') {
    return reject(RowErrorCodes.IBAN_MISSING, 'iban is missing', row);
  }
  const iban = normalizeIban(row.iban);
  if (!isValidNormalizedIban(iban)) {
    return reject(
      RowErrorCodes.IBAN_INVALID,
      'iban is not a valid IBAN (ISO 13616 shape and mod-97 check)',
      row,
    );
  }
  const updatedAt = parseInstant(row.updatedAt);
  if (updatedAt === null) {
    return reject(
      RowErrorCodes.UPDATED_AT_INVALID,
      'updatedAt is not an ISO-8601 instant or epoch milliseconds',
      row,
    );
  }
  if (typeof row.isActive !== 'boolean')
    return reject(RowErrorCodes.IS_ACTIVE_INVALID, 'isActive is not a boolean', row);
  const count = row.reportsCount;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_INT32) {
    return reject(
      RowErrorCodes.REPORTS_COUNT_INVALID,
      'reportsCount is not an integer from 0 to 2^31-1',
      row,
    );
  }
  const bic = row.bic;
  if (bic !== undefined && bic !== null && typeof bic !== 'string') {
    return reject(RowErrorCodes.BIC_INVALID, 'bic is not a string', row);
  }
  const rawQualification = row.qualification;
  const known = typeof rawQualification === 'string' && knownQualifications.has(rawQualification);
  return {
    ok: true,
    type: row.isActive ? 'AlertUpserted' : 'AlertDeactivated',
    event: {
      eventId: eventIdOf(alertId, updatedAt, row.isActive),
      alertId,
      iban,
      bic: typeof bic === 'string' && bic.trim() !== '' ? bic.trim() : null,
      qualification: known ? (rawQualification as Qualification) : 'UNKNOWN',
      qualificationRaw: known
        ? null
        : rawQualification === undefined || rawQualification === null
          ? null
          : typeof rawQualification === 'string'
            ? rawQualification
            : JSON.stringify(rawQualification),
      reportsCount: count,
      updatedAt,
      observedAt,
    },
  };
}
