#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, or on install by `prepare`).
// The Node check comes first, before anything is loaded: an older Node fails inside undici with a
// TypeError that names neither Node nor the version needed.
// The signal keeper comes next, and the CLI is loaded only then: as PID 1 in the image, a SIGTERM
// while the CLI loads (a few hundred ms) would otherwise be dropped (src/cli/signals.ts).
// The connector's and the table's heap bound comes before the CLI too: V8 takes it up at a full collection, and
// loading the CLI runs the first one (src/connector/heap.ts).
const NEEDED = [22, 19];
const found = process.versions.node.split('.').map(Number);
const [major = 0, minor = 0] = found;
if (major < NEEDED[0] || (major === NEEDED[0] && minor < NEEDED[1])) {
  process.stderr.write(
    `fraudlink needs Node ${NEEDED.join('.')} or later; this is Node ${process.versions.node}\n`,
  );
  process.exit(2);
}

const { keepStopSignals } = await import('../dist/cli/signals.js');
const { boundHeapGrowth } = await import('../dist/connector/heap.js');

keepStopSignals();
if (process.argv[2] === 'connector' || process.argv[2] === 'table') boundHeapGrowth();
const { exitWith, main } = await import('../dist/cli/main.js');

main(process.argv).then(exitWith, (err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
