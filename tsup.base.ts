import { defineConfig } from 'tsup';

/** Build of a publishable workspace package: ESM and CommonJS with declarations, from src/index.ts. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'es2022',
  tsconfig: 'tsconfig.build.json',
});
