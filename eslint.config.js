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
    // Tests, benchmarks and process plumbing measure real elapsed time.
    files: ['test/**', 'bench/**', '**/*.test.ts', 'src/platform/api-key-cache.ts', 'src/platform/jobs.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
