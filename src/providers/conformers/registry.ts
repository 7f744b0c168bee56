import type { Conformer } from './conformer.js';
import { github } from './github.js';
import { microsoft } from './microsoft.js';
import { notion } from './notion.js';
import { salesforce } from './salesforce.js';
import { slack, slackBot } from './slack.js';
import { standard } from './standard.js';

// The one table of token-response conformers: a provider entry names one of
// these, and the OAuth client runs it on every token-endpoint answer.
const conformers = {
  standard,
  github,
  slack,
  'slack-bot': slackBot,
  notion,
  salesforce,
  microsoft,
} as const satisfies Record<string, Conformer>;

export type ConformerName = keyof typeof conformers;

export const conformerNames = Object.keys(conformers) as readonly ConformerName[];

export function isConformerName(name: string): name is ConformerName {
  return Object.hasOwn(conformers, name);
}

export function conformerFor(name: ConformerName): Conformer {
  return conformers[name];
}
