import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// "Now" comes from the injected clock (ctx.clock / deps.clock), so tests can move time.
const dateNow = {
  selector: "MemberExpression[object.name='Date'][property.name='now']",
  message: 'Read time from the injected clock (ctx.clock / deps.clock).',
};
const newDateNow = {
  selector: "NewExpression[callee.name='Date'][arguments.length=0]",
  message: 'new Date() is "now": read it from the injected clock (ctx.clock / deps.clock).',
};
// Codes and sentences come from src/platform/error-catalogue.ts.
const handMadeError = {
  selector: "NewExpression[callee.name='AppError']",
  message: "Throw appError('CODE', params): the code, status and sentence are declared in src/platform/error-catalogue.ts.",
};

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
      'no-restricted-syntax': ['error', dateNow, newDateNow, handMadeError],
    },
  },
  {
    // The browser dashboard has no injected clock; its date pickers start from the visitor's today.
    files: ['web/**'],
    rules: { 'no-restricted-syntax': ['error', dateNow, handMadeError] },
  },
  {
    // The clock itself, tests, the providers' fake servers, benchmarks and process plumbing read real time.
    files: [
      'src/platform/clock.ts',
      'test/**',
      'bench/**',
      '**/*.test.ts',
      'src/providers/**/fake*.ts',
      'src/platform/api-key-cache.ts',
      'src/platform/jobs.ts',
    ],
    rules: { 'no-restricted-syntax': ['error', handMadeError] },
  },
  {
    // errors.ts builds them for appError.
    files: ['src/platform/errors.ts'],
    rules: { 'no-restricted-syntax': ['error', dateNow, newDateNow] },
  },
  {
    // The dashboard runs in the browser and sees the server only through src/api-types.ts (docs/decisions/0025-dashboard-imports-api-types.md).
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
);
