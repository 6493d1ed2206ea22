#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, or on install by `prepare`).
// The signal keeper comes first, and the CLI is loaded only then: as PID 1 in the image, a SIGTERM
// while the CLI loads (a few hundred ms) would otherwise be dropped (src/cli/signals.ts).
// The connector's heap bound comes before the CLI too: V8 takes it up at a full collection, and
// loading the CLI runs the first one (src/connector/heap.ts).
import { keepStopSignals } from '../dist/cli/signals.js';
import { boundHeapGrowth } from '../dist/connector/heap.js';

keepStopSignals();
if (process.argv[2] === 'connector') boundHeapGrowth();
const { exitWith, main } = await import('../dist/cli/main.js');

main(process.argv).then(exitWith, (err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
