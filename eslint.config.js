import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// House rules (style.md B2.8): each one is a review catch made mechanical.
const restrictedEnv = {
  selector: "MemberExpression[object.name='process'][property.name='env']",
  message: 'Read configuration through src/config/config.ts (loadConfig), not process.env.',
};
const noInsecureRequests = {
  selector: "Identifier[name='allowInsecureRequests']",
  message: 'TLS and https are never switched off (design §9).',
};

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', 'coverage/', 'scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', Buffer: 'readonly' } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', restrictedEnv, noInsecureRequests],
      'no-restricted-imports': [
        'error',
        {
          paths: [
            { name: 'pg', message: 'SQL lives in src/db/ and *Repo.ts modules.' },
            { name: 'openid-client', message: 'Only src/oauth/oauthClient.ts and oauthErrors.ts import openid-client.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/db/**/*.ts', 'src/**/*Repo.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'openid-client', message: 'Only src/oauth/ imports openid-client.' }] }],
    },
  },
  {
    files: ['src/oauth/oauthClient.ts', 'src/oauth/oauthErrors.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'pg', message: 'SQL lives in repo modules.' }] }] },
  },
  {
    // Configuration and test harness are where the environment is read.
    files: ['src/config/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'vitest.config.ts'],
    rules: { 'no-restricted-syntax': ['error', noInsecureRequests] },
  },
);
