import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// House rules: each one is a review catch made mechanical.
const restrictedEnv = {
  selector: "MemberExpression[object.name='process'][property.name='env']",
  message: 'Read configuration through src/config/config.ts (loadConfig), not process.env.',
};
const noInsecureRequests = {
  selector: "Identifier[name='allowInsecureRequests']",
  message: 'TLS and https are never switched off: trust the CA instead (TLS_CA_FILE).',
};

// One source for navigation states: outside the state machine's module, code names a
// state through its exports (State.EXPIRED, openStates, …) and SQL takes states as parameters, so no
// list typed elsewhere can miss a state the table gains. The names are read from the module itself.
export const navigationStatesModule = 'src/flow/navigationStates.ts';

/** The exported string array `name` of `module`, as written there. */
function readStringArray(module, name) {
  const { ast } = tseslint.parser.parseForESLint(readFileSync(new URL(module, import.meta.url), 'utf8'), {
    sourceType: 'module',
  });
  for (const statement of ast.body) {
    const declarator =
      statement.type === 'ExportNamedDeclaration'
        ? statement.declaration?.declarations?.find((d) => d.id.name === name)
        : undefined;
    const list = declarator?.init?.type === 'TSAsExpression' ? declarator.init.expression : declarator?.init;
    if (
      list?.type === 'ArrayExpression' &&
      list.elements.every((e) => e?.type === 'Literal' && typeof e.value === 'string')
    )
      return list.elements.map((e) => e.value);
  }
  throw new Error(`eslint.config.js: no ${name} array of string literals in ${module}`);
}

const statePattern = new RegExp(
  `\\b(${readStringArray(navigationStatesModule, 'navigationStates').join('|')})\\b`,
  'g',
);
const noStateLiterals = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      stateLiteral:
        '{{state}} is a navigation state: name it through src/flow/navigationStates.ts (State.{{state}}, or a derived set such as openStates) and pass it to SQL as a parameter.',
    },
  },
  create(context) {
    const check = (node, text) => {
      for (const state of new Set(Array.from(text.matchAll(statePattern), (m) => m[1])))
        context.report({ node, messageId: 'stateLiteral', data: { state } });
    };
    return {
      Literal: (node) => typeof node.value === 'string' && check(node, node.value),
      TemplateElement: (node) => check(node, node.value.raw),
    };
  },
};

// The same for connection states (src/secrets/connectionStates.ts). Their names are ordinary words
// ('active', 'revoked'), so only their uses as states are refused: a `.state` compared with one, and
// one written into SQL against a `state` column.
export const connectionStatesModule = 'src/secrets/connectionStates.ts';
const connectionStateNames = readStringArray(connectionStatesModule, 'connectionStates');
const connectionStateAlternatives = connectionStateNames.join('|');
const sqlConnectionState = new RegExp(
  `\\bstate\\s*(?:=|<>|!=)\\s*'(${connectionStateAlternatives})'|\\bstate\\s+(?:NOT\\s+)?IN\\s*\\(([^)]*)\\)`,
  'gi',
);
const noConnectionStateLiterals = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      connectionState:
        "'{{state}}' is a connection state: name it through src/secrets/connectionStates.ts (usableStates, toStateOf, …) and pass it to SQL as a parameter.",
    },
  },
  create(context) {
    const report = (node, state) => context.report({ node, messageId: 'connectionState', data: { state } });
    const isStateMember = (node) =>
      node?.type === 'MemberExpression' &&
      !node.computed &&
      node.property.type === 'Identifier' &&
      node.property.name === 'state';
    const checkSql = (node, text) => {
      for (const m of text.matchAll(sqlConnectionState)) {
        if (m[1]) report(node, m[1]);
        for (const listed of (m[2] ?? '').matchAll(/'([^']*)'/g))
          if (connectionStateNames.includes(listed[1])) report(node, listed[1]);
      }
    };
    return {
      BinaryExpression(node) {
        if (!['===', '!==', '==', '!='].includes(node.operator)) return;
        for (const [member, other] of [
          [node.left, node.right],
          [node.right, node.left],
        ])
          if (isStateMember(member) && other.type === 'Literal' && connectionStateNames.includes(other.value))
            report(other, other.value);
      },
      Literal: (node) => typeof node.value === 'string' && checkSql(node, node.value),
      TemplateElement: (node) => checkSql(node, node.value.raw),
    };
  },
};

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.data/', 'coverage/', 'scratch/'] },
  // Tool configuration that must be CommonJS (.dependency-cruiser.cjs).
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
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
            {
              name: 'openid-client',
              message: 'Only src/oauth/oauthClient.ts and oauthErrors.ts import openid-client.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/db/**/*.ts', 'src/**/*Repo.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'openid-client', message: 'Only src/oauth/ imports openid-client.' }] },
      ],
    },
  },
  {
    files: ['src/oauth/oauthClient.ts', 'src/oauth/oauthErrors.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [{ name: 'pg', message: 'SQL lives in repo modules.' }] }] },
  },
  {
    files: ['src/**/*.ts'],
    plugins: {
      broker: {
        rules: { 'no-state-literals': noStateLiterals, 'no-connection-state-literals': noConnectionStateLiterals },
      },
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: [navigationStatesModule],
    rules: { 'broker/no-state-literals': 'error' },
  },
  {
    files: ['src/**/*.ts'],
    ignores: [connectionStatesModule],
    rules: { 'broker/no-connection-state-literals': 'error' },
  },
  {
    // Configuration and test harness are where the environment is read; so is an example host, its own.
    files: ['src/config/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts', 'vitest.config.ts'],
    rules: { 'no-restricted-syntax': ['error', noInsecureRequests] },
  },
  {
    // Build and container tooling, outside the service: the image build passes the host's environment
    // to its steps; the health check reads the broker's settings without loading the service.
    files: ['scripts/**/*.mjs', 'bin/healthcheck.js'],
    rules: { 'no-restricted-syntax': ['error', noInsecureRequests] },
  },
);
