// @ts-check
import tseslint from 'typescript-eslint';

// Lint: the rules that catch bugs the type checker does not (untyped escape hatches, promises nobody awaits), with
// type information from tsconfig.json. Layout is Prettier's (npm run format); max-len covers what it cannot wrap.
export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '.data/**',
      'openapi/**',
      'coverage/**',
      'servers/src/services/education/curriculum/**',
      'sdk/bin/**',
      '**/tsup.config.ts',
    ],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-non-null-assertion': 'warn',
      'max-len': [
        'error',
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true },
      ],
    },
  },
  {
    // Tests build malformed inputs and read raw bodies on purpose: an explicit any there is a choice, not a gap.
    files: ['tests/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
