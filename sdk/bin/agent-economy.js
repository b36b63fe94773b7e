#!/usr/bin/env node
// The agent-economy command. Installed from a registry (the package sits under node_modules), it runs the
// build, dist/cli.js. In the monorepo's own sdk/ folder it runs the TypeScript source through tsx, with
// the workspace packages resolved to their sources (the "ae-source" export condition): no build needed,
// and none goes stale.
import { existsSync, realpathSync } from 'node:fs';
import { register } from 'node:module';
import { fileURLToPath } from 'node:url';

const source = new URL('../src/cli/main.ts', import.meta.url);
const here = realpathSync(fileURLToPath(import.meta.url));
let cli;
if (!/[\\/]node_modules[\\/]/.test(here) && existsSync(source)) {
  let tsx;
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    // No tsx (not a development install): the build below.
  }
  if (tsx) {
    tsx.register();
    // Registered after tsx, so it runs first: adds the condition, then hands over to tsx's resolver.
    const hook = `export async function resolve(specifier, context, next) {
      return next(specifier, { ...context, conditions: [...new Set([...context.conditions, 'ae-source'])] });
    }`;
    register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
    cli = await import(source.href);
  }
}
cli ??= await import(new URL('../dist/cli.js', import.meta.url).href);
process.exitCode = await cli.run(process.argv.slice(2));
