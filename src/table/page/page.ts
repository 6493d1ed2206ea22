import { createHash } from 'node:crypto';

// The analysts' page, served by the table service itself at `GET /`: one HTML document with its CSS
// and script inline, nothing fetched from elsewhere. Kept in a .ts module so that the build ships it
// in dist/ as it does the code. The Content-Security-Policy allows exactly this script and style
// (by hash) and calls to the same origin.

const STYLE = `
:root { color-scheme: light dark; --accent: #0b5cad; --hit: #a4141b; --ok: #1d6b30; }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 48rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: 0.5rem 0 1rem; }
label { display: block; font-weight: 600; margin: 0.75rem 0 0.25rem; }
textarea, input { width: 100%; font: inherit; padding: 0.5rem; border: 1px solid #888; border-radius: 4px; }
textarea { min-height: 6rem; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; }
.hint { font-size: 0.875rem; margin: 0.25rem 0 0; opacity: 0.8; }
button { margin-top: 0.75rem; font: inherit; padding: 0.5rem 1.25rem; border: 0; border-radius: 4px;
  background: var(--accent); color: #fff; cursor: pointer; }
button:focus-visible, textarea:focus-visible, input:focus-visible { outline: 3px solid #f0a000; outline-offset: 2px; }
#freshness { font-size: 0.875rem; margin: 0 0 1rem; }
#error:not(:empty) { color: var(--hit); font-weight: 600; }
#results { list-style: none; padding: 0; margin: 1rem 0 0; }
#results li { border: 1px solid #8884; border-left: 6px solid var(--ok); border-radius: 4px; padding: 0.5rem 0.75rem; margin-bottom: 0.75rem; }
#results li.alert { border-left-color: var(--hit); }
#results li.invalid { border-left-color: #888; }
.iban { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-weight: 600; word-break: break-all; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0.125rem 1rem; margin: 0.5rem 0 0; }
dt { font-weight: 600; }
dd { margin: 0; word-break: break-all; }
@media (max-width: 30rem) { dl { grid-template-columns: 1fr; } dd { margin-bottom: 0.25rem; } }
`;

const SCRIPT = `
const form = document.getElementById('lookup');
const input = document.getElementById('ibans');
const keyInput = document.getElementById('api-key');
const results = document.getElementById('results');
const status = document.getElementById('status');
const error = document.getElementById('error');
const freshness = document.getElementById('freshness');
const FIELDS = [['alertId', 'Alert id'], ['qualification', 'Qualification'], ['qualificationRaw', 'Upstream qualification'],
  ['reportsCount', 'Reports'], ['bic', 'BIC'], ['updatedAt', 'Updated at'], ['eventId', 'Event id']];

function showFreshness(response) {
  const updated = response.headers.get('x-table-updated-at');
  const lag = response.headers.get('x-table-offset-lag');
  if (updated === null) return;
  const when = updated === 'never' ? 'no event applied yet' : 'last updated ' + new Date(updated).toLocaleString();
  freshness.textContent = 'Table ' + when + '; ' + lag + ' record' + (lag === '1' ? '' : 's') + ' behind the topic.';
}

function item(result) {
  const li = document.createElement('li');
  const iban = document.createElement('div');
  iban.className = 'iban';
  iban.textContent = result.iban;
  li.append(iban);
  const verdict = document.createElement('div');
  if (result.error) {
    li.className = 'invalid';
    verdict.textContent = 'not an IBAN';
  } else if (result.alert === null) {
    verdict.textContent = 'no active alert';
  } else {
    li.className = 'alert';
    verdict.textContent = 'active alert';
    const dl = document.createElement('dl');
    for (const [field, label] of FIELDS) {
      const value = result.alert[field];
      if (value === null || value === undefined) continue;
      const dt = document.createElement('dt');
      dt.textContent = label;
      const dd = document.createElement('dd');
      dd.textContent = field === 'updatedAt' ? new Date(value).toLocaleString() + ' (' + value + ')' : String(value);
      dl.append(dt, dd);
    }
    li.append(verdict, dl);
    return li;
  }
  li.append(verdict);
  return li;
}

async function lookUp(event) {
  event.preventDefault();
  error.textContent = '';
  const ibans = input.value.split('\\n').map((line) => line.trim()).filter((line) => line !== '');
  if (ibans.length === 0) {
    error.textContent = 'Enter at least one IBAN.';
    input.focus();
    return;
  }
  if (ibans.length > __MAX_IBANS__) {
    error.textContent = 'At most __MAX_IBANS__ IBANs at a time.';
    return;
  }
  const headers = { 'content-type': 'application/json' };
  if (keyInput && keyInput.value.trim() !== '') headers['x-api-key'] = keyInput.value.trim();
  status.textContent = 'Looking up ' + ibans.length + ' IBAN' + (ibans.length === 1 ? '' : 's') + '…';
  try {
    const response = await fetch('v1/alerts/lookup', { method: 'POST', headers, body: JSON.stringify({ ibans }) });
    showFreshness(response);
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      status.textContent = '';
      error.textContent = response.status === 401 ? 'The API key is missing or not accepted.' : 'The lookup failed: ' + (body.message || response.status);
      return;
    }
    results.replaceChildren(...body.results.map(item));
    const found = body.results.filter((r) => r.alert !== null).length;
    status.textContent = ibans.length + ' looked up: ' + found + ' with an active alert.';
  } catch (err) {
    status.textContent = '';
    error.textContent = 'The table service cannot be reached: ' + err.message;
  }
}

form.addEventListener('submit', lookUp);
input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) form.requestSubmit();
});
fetch('readyz').then(showFreshness, () => {});
`;

const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

export interface TablePage {
  html: string;
  /** The Content-Security-Policy to serve it with. */
  csp: string;
}

/** The page; `apiKeyField` adds a field for the key, which the service asks for then. */
export function tablePage({ apiKeyField, maxIbans }: { apiKeyField: boolean; maxIbans: number }): TablePage {
  const script = SCRIPT.replaceAll('__MAX_IBANS__', String(maxIbans));
  const keyField = apiKeyField
    ? `<label for="api-key">API key</label>
      <input id="api-key" name="api-key" type="password" autocomplete="off" required>`
    : '';
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>fraudlink alert table</title>
<style>${STYLE}</style>
</head>
<body>
<main>
  <h1>Alert table lookup</h1>
  <p id="freshness" aria-live="polite"></p>
  <form id="lookup" novalidate>
    ${keyField}
    <label for="ibans">IBAN, or several, one per line</label>
    <textarea id="ibans" name="ibans" autocomplete="off" spellcheck="false" aria-describedby="ibans-hint" required></textarea>
    <p id="ibans-hint" class="hint">Spaces and lower case are fine. Ctrl+Enter looks up too.</p>
    <button type="submit">Look up</button>
  </form>
  <p id="error" role="alert"></p>
  <p id="status" aria-live="polite"></p>
  <ul id="results" aria-live="polite" aria-label="Results"></ul>
</main>
<script>${script}</script>
</body>
</html>
`;
  const csp = [
    "default-src 'none'",
    `script-src ${hash(script)}`,
    `style-src ${hash(STYLE)}`,
    "connect-src 'self'",
    "form-action 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
  return { html, csp };
}
