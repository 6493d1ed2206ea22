// `npm run bench -- <name>...`: runs the named benchmarks (all when none is named), one after another,
// each printing its figures and ratios measured side by side in one run.
import { parseArgs } from 'node:util';
import { buildDist } from './common.ts';

const benches: Record<string, () => Promise<{ run: () => Promise<void> }>> = {
  'api-export': () => import('./api-export.ts'),
  connector: () => import('./connector.ts'),
  verifier: () => import('./verifier.ts'),
  replay: () => import('./replay.ts'),
  table: () => import('./table.ts'),
};

const { positionals } = parseArgs({ allowPositionals: true });
const unknown = positionals.filter((name) => !(name in benches));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark(s): ${unknown.join(', ')}; choose from ${Object.keys(benches).join(', ')}`,
  );
  process.exit(2);
}
buildDist();
for (const name of positionals.length > 0 ? positionals : Object.keys(benches)) {
  console.log(`\n=== ${name} ===`);
  const bench = await benches[name]?.();
  await bench?.run();
}
