// Builds the console into ../dist: src/main.tsx (with its CSS) bundled and
// minified by esbuild under content-hashed names, index.html pointing at
// them, THIRD_PARTY_LICENSES.txt for what the bundle includes, and
// sources.sha256, the hash of every source file, which a Go test
// (console/dist_test.go) recomputes so that a stale dist fails the build.
// `node build.mjs --check` only compares the hash.
import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, rmSync, mkdirSync, writeFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const dist = join(here, "..", "dist");

// The files dist is built from, as paths relative to console/web with '/'
// separators, sorted by byte order. Keep in step with sourceFiles in
// console/dist_test.go.
function sourceFiles() {
  const out = ["build.mjs", "package.json", "package-lock.json", "tsconfig.json"];
  const walk = (dir) => {
    for (const name of readdirSync(join(here, dir))) {
      const rel = dir + "/" + name;
      if (statSync(join(here, rel)).isDirectory()) walk(rel);
      else out.push(rel);
    }
  };
  walk("src");
  return out.sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
}

// sourceHash: sha256 over, for each file, "<path>\n<length>\n<bytes>".
export function sourceHash() {
  const h = createHash("sha256");
  for (const f of sourceFiles()) {
    const b = readFileSync(join(here, f));
    h.update(`${f}\n${b.length}\n`);
    h.update(b);
  }
  return h.digest("hex");
}

if (process.argv.includes("--check")) {
  const want = readFileSync(join(dist, "sources.sha256"), "utf8").trim();
  const got = sourceHash();
  if (want !== got) {
    console.error(`console/dist is stale (built from ${want}, sources are ${got}): run npm run build in console/web`);
    process.exit(1);
  }
  console.log("console/dist is up to date");
  process.exit(0);
}

rmSync(join(dist, "assets"), { recursive: true, force: true });
mkdirSync(join(dist, "assets"), { recursive: true });
const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { app: "src/main.tsx" },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020"],
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  outdir: join(dist, "assets"),
  metafile: true,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
let js = "", css = "";
for (const [out, meta] of Object.entries(result.metafile.outputs)) {
  const name = relative(join(dist, "assets"), join(here, out)).split("\\").join("/");
  if (meta.entryPoint && name.endsWith(".js")) js = name;
  if (name.endsWith(".css")) css = name;
}
if (!js || !css) throw new Error("build: esbuild produced no app script or stylesheet");
const page = readFileSync(join(here, "src", "index.html"), "utf8")
  .replace("%APP_JS%", `/ui/assets/${js}`)
  .replace("%APP_CSS%", `/ui/assets/${css}`);
writeFileSync(join(dist, "index.html"), page);
// The bundle includes Preact (MIT License), whose licence travels with it.
writeFileSync(join(dist, "THIRD_PARTY_LICENSES.txt"),
  "The console's script (assets/app-*.js) bundles Preact (https://preactjs.com/):\n\n" +
  readFileSync(join(here, "node_modules", "preact", "LICENSE"), "utf8"));
writeFileSync(join(dist, "sources.sha256"), sourceHash() + "\n");
console.log(`built console/dist: ${js}, ${css}`);
