// Bundles the acceptance page (src/page.js with @xmtp/browser-sdk) and the SDK's two workers with
// esbuild into OUT_DIR, next to the WASM core, laid out as the SDK expects to find them:
// `new URL("./workers/client", import.meta.url)` and the WASM file beside the worker that loads it.
//
//   node build.mjs SRC_DIR OUT_DIR   (run from build-browser/, where node_modules is)
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";

const [srcDir, outDir] = process.argv.slice(2);
const modules = "node_modules/@xmtp";
mkdirSync(`${outDir}/workers`, { recursive: true });
// The page's imports resolve from build-browser/node_modules, not beside the page's source.
const common = { bundle: true, format: "esm", platform: "browser", target: "chrome120",
                 logLevel: "warning", nodePaths: [resolve("node_modules")] };
await esbuild.build({ ...common, entryPoints: [`${srcDir}/page.js`], outfile: `${outDir}/page.js` });
for (const worker of ["client", "opfs"]) {
  await esbuild.build({ ...common, entryPoints: [`${modules}/browser-sdk/dist/workers/${worker}.js`],
                        outfile: `${outDir}/workers/${worker}.js` });
}
copyFileSync(`${modules}/wasm-bindings/dist/bindings_wasm_bg.wasm`,
             `${outDir}/workers/bindings_wasm_bg.wasm`);
writeFileSync(`${outDir}/index.html`,
              '<!doctype html><meta charset="utf-8"><script type="module" src="/page.js"></script>');
