import { parseInstant } from '../instant.ts';
import { alertIndexOf } from './alerts.ts';
import { fullAlertOf } from './details.ts';
import { json, problem, type Reply } from './reply.ts';
import type { World } from './world.ts';

/**
 * GET /sharing/v1/alerts/export: `{"rows":[...],"nextCursor":"..."|null}`. The position is the
 * cursor when given, else just after `updatedAfter` (exclusive), else the start; both together
 * narrow each other. Rows are joined from their JSON text, never re-serialised as a whole.
 */
export function exportFeed(
  world: World,
  query: URLSearchParams,
  cursorParam: string,
  pageSize: number,
): Reply {
  const from: { afterSeq?: number; updatedAfter?: number } = {};
  const afterText = query.get('updatedAfter');
  if (afterText !== null) {
    // The contract: an ISO-8601 instant, with its zone (epoch ms digits are no such thing), read as
    // strictly as the connector reads rows: `2026-02-30T00:00:00Z` is no date, not 2 March.
    from.updatedAfter = parseInstant(afterText) ?? undefined;
    if (from.updatedAfter === undefined)
      return problem(400, 'INVALID_UPDATED_AFTER', 'updatedAfter must be an ISO-8601 instant with a zone');
  }
  const cursorText = query.get(cursorParam);
  if (cursorText !== null) {
    from.afterSeq = world.cursors.decode(cursorText);
    if (from.afterSeq === undefined)
      return problem(400, 'INVALID_CURSOR', `${cursorParam} is not a cursor this service issued`);
  }
  const page = world.feed.page(from, pageSize);
  let rows = '';
  for (let k = 0; k < page.refs.length; k++) {
    if (k > 0) rows += ',';
    rows += world.rowJson(page.refs[k] as number);
  }
  const next = page.end ? 'null' : `"${world.cursors.encode(page.lastSeq)}"`;
  return { status: 200, body: `{"rows":[${rows}],"nextCursor":${next}}` };
}

/** A path segment's text, or undefined when its percent-encoding is broken (`%E0%A4%A`). */
function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/**
 * GET /sharing/v1/alerts/{alertId}: the full alert, or 404. `segment` is the id as it stands in
 * the path; one that does not decode names no alert, so it gets the same 404 as an unknown id.
 */
export function getAlert(world: World, segment: string): Reply {
  const id = decodeSegment(segment);
  const index = id === undefined ? undefined : alertIndexOf(id, world.alerts.length);
  if (index === undefined) return problem(404, 'ALERT_NOT_FOUND', 'no alert with this id');
  return json(200, fullAlertOf(world, index));
}
