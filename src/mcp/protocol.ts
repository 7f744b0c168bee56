// Wire constants and shapes of MCP 2026-07-28 (schema/2026-07-28/schema.ts). Only what
// the broker speaks; the SDK's types stay the reference in tests.

export const MODERN_VERSION = '2026-07-28';
export const LEGACY_VERSION = '2025-11-25';
/** What server/discover and -32022 name: the modern wire, and the legacy one through initialize. */
export const SUPPORTED_VERSIONS: readonly string[] = [MODERN_VERSION, LEGACY_VERSION];

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

export type RequestId = string | number;

export interface ClientCapabilities {
  elicitation?: { form?: object; url?: object };
  [key: string]: unknown;
}

/** The modes of elicitation this request's capabilities allow (MCP 2026-07-28, Elicitation, Capabilities: `{}` means form). */
export function elicitationModes(capabilities: ClientCapabilities): { form: boolean; url: boolean } {
  const elicitation = capabilities.elicitation;
  if (elicitation === undefined || elicitation === null || typeof elicitation !== 'object')
    return { form: false, url: false };
  const form = 'form' in elicitation;
  const url = 'url' in elicitation;
  return { form: form || !url, url };
}

export interface TextContent {
  type: 'text';
  text: string;
}

export interface CallToolResult {
  resultType: 'complete';
  content: TextContent[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

export interface ElicitFormRequest {
  method: 'elicitation/create';
  params: { mode: 'form'; message: string; requestedSchema: FormSchema };
}

export interface FormSchema {
  type: 'object';
  properties: Record<string, FormProperty>;
  required?: string[];
}

export type FormProperty =
  | {
      type: 'string';
      title?: string;
      description?: string;
      enum?: string[];
      minLength?: number;
      maxLength?: number;
      default?: string;
    }
  | { type: 'boolean'; title?: string; description?: string; default?: boolean }
  | {
      type: 'number' | 'integer';
      title?: string;
      description?: string;
      minimum?: number;
      maximum?: number;
      default?: number;
    };

/** URL mode, 2026-07-28: no elicitationId (MCP 2026-07-28 changelog: removed with notifications/elicitation/complete). */
export interface ElicitUrlRequest {
  method: 'elicitation/create';
  params: { mode: 'url'; message: string; url: string };
}

export interface InputRequiredResult {
  resultType: 'input_required';
  inputRequests?: Record<string, ElicitFormRequest | ElicitUrlRequest>;
  requestState?: string;
  _meta?: Record<string, unknown>;
}

export type ToolCallResult = CallToolResult | InputRequiredResult;
