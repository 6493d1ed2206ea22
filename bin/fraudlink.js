#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, or on install by `prepare`).
import { exitWith, main } from '../dist/cli/main.js';

main(process.argv).then(exitWith, (err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exitCode = 1;
});
