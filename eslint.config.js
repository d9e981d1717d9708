import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'data/', '.tmp/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        Buffer: 'readonly',
        URL: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'Read time from the injected clock (ctx.clock / deps.clock).',
        },
      ],
    },
  },
  {
    // The dashboard runs in the browser and sees the server only through src/api-types.ts (docs/decisions.md).
    // Its tsconfig has Node's types for the schema files behind that barrel, so these rules keep Node out of web/ itself.
    files: ['web/**'],
    rules: {
      'no-restricted-globals': ['error', 'process', 'Buffer', 'require', '__dirname', '__filename'],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'The dashboard runs in the browser.' },
            {
              group: ['**/src/**', '!**/src/api-types.ts'],
              message: "The dashboard imports the API's types from src/api-types.ts, nothing else of the server.",
            },
          ],
        },
      ],
    },
  },
  {
    // Tests, benchmarks and process plumbing measure real elapsed time.
    files: ['test/**', 'bench/**', '**/*.test.ts', 'src/platform/api-key-cache.ts', 'src/platform/jobs.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
