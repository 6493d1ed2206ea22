import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadTableConfig } from '../../src/config/index.ts';
import { silentLogger } from '../../src/logger.ts';
import { startTableService } from '../../src/table/index.ts';
import { alertFor, alertsTopic, ibans, storeDir, tableEnv, untilReady } from './harness.ts';

/** Debian's chromium package; `.ci/run` installs it where it is missing. */
const CHROMIUM = '/usr/bin/chromium';

async function servedTable(extra: Record<string, string> = {}) {
  const { topic, publish } = await alertsTopic(1);
  const [flagged = '', clean = ''] = ibans(2, 5);
  await publish([{ type: 'upsert', alert: alertFor(flagged, 2, 'UNDER_INVESTIGATION') }]);
  const config = loadTableConfig(tableEnv(topic, join(await storeDir(), 'table.db'), extra));
  const running = await startTableService(config, silentLogger());
  onTestFinished(() => running.stop());
  await untilReady(running.url);
  return { url: running.url, flagged, clean };
}

async function openPage(url: string, viewport = { width: 1024, height: 768 }) {
  const browser = await chromium.launch({ executablePath: CHROMIUM });
  onTestFinished(() => browser.close());
  const page = await browser.newPage({ viewport });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(`${url}/`);
  return { page, errors };
}

describe('the alert table page in a headless browser', () => {
  it('shows the alert of a typed IBAN, "no active alert" for an unknown one, and the freshness', async () => {
    const { url, flagged, clean } = await servedTable();
    const { page, errors } = await openPage(url, { width: 375, height: 740 });
    const spaced = flagged.toLowerCase().replace(/(.{4})/g, '$1 ');
    await page.getByLabel('IBAN, or several, one per line').fill(spaced);
    await page.getByRole('button', { name: 'Look up' }).click();
    const results = page.getByRole('list', { name: 'Results' });
    await results.getByText('active alert', { exact: true }).waitFor();
    expect(await results.textContent()).toContain('UNDER_INVESTIGATION');
    expect(await results.textContent()).toContain(`a-${flagged}`);
    await page.getByText(/Table last updated .*; 0 records behind the topic\./).waitFor();

    // Keyboard only: focus the field, type, Ctrl+Enter.
    await page.getByLabel('IBAN, or several, one per line').fill('');
    await page.getByLabel('IBAN, or several, one per line').focus();
    await page.keyboard.type(`${clean}\nDE00 0000`);
    await page.keyboard.press('Control+Enter');
    await results.getByText('no active alert', { exact: true }).waitFor();
    await results.getByText('not an IBAN', { exact: true }).waitFor();
    expect(await results.getByRole('listitem').count()).toBe(2);
    // Readable on a phone: nothing wider than the screen.
    expect(await page.locator('html').evaluate((html) => html.scrollWidth)).toBeLessThanOrEqual(375);
    expect(errors).toEqual([]);
  });

  it('asks for the API key when the service needs one, and says when it is refused', async () => {
    const { url, flagged } = await servedTable({ TABLE_API_KEYS: 'analyst-key-1' });
    const { page, errors } = await openPage(url);
    await page.getByLabel('IBAN, or several, one per line').fill(flagged);
    await page.getByLabel('API key').fill('wrong-key');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('alert').getByText('The API key is missing or not accepted.').waitFor();
    await page.getByLabel('API key').fill('analyst-key-1');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('list', { name: 'Results' }).getByText('active alert', { exact: true }).waitFor();
    expect(await page.getByRole('alert').textContent()).toBe('');
    // The 401 shows in the console as a failed resource: nothing else may.
    expect(errors.filter((e) => !e.includes('401'))).toEqual([]);
  });
});
