#!/usr/bin/env node
// `autoresearch` as an npm bin: runs the engine bundle built by `npm run build:engine`.
// The bundle calls main(process.argv) when loaded, so requiring it runs the CLI in this process.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

// The minimum is package.json's engines.node (">=MAJOR.MINOR.PATCH"), the one place it is declared.
const { engines } = require('../package.json');
const least = engines.node.replace(/^>=/, '').split('.').map(Number);
const here = process.versions.node.split('.').map(Number);
const diff = here.map((n, i) => n - (least[i] ?? 0)).find(d => d !== 0) ?? 0;
if (diff < 0) {
  console.error(`autoresearch: Node.js ${engines.node} is required (this is ${process.version}).`);
  process.exit(1);
}

const bundle = path.join(__dirname, '..', 'lib', 'engine', 'autoresearch.cjs');
if (!fs.existsSync(bundle)) {
  console.error(
    `autoresearch: the engine bundle ${bundle} is missing; build it with \`npm run build:engine\` (or \`make setup\`).`,
  );
  process.exit(1);
}
require(bundle);
