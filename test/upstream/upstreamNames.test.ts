import { describe, expect, it } from 'vitest';
import { parseProviders } from '../../src/providers/providerConfig.js';
import { canonicalJson, prefixCollisions, servedName } from '../../src/upstream/upstreamNames.js';
import { parseToolSnapshot } from '../../src/upstream/toolSnapshot.js';
import { TEST_SELF } from '../support/brokerSelf.js';

const upstream = (id: string, prefix: string) => ({
  id,
  kind: 'mcp',
  url: `https://${id}.example.com/mcp`,
  prefix,
  registration: 'auto',
});

describe('upstream tool names', () => {
  it('serves <prefix>_<tool> in lower case, other characters as _, at most 64', () => {
    expect(servedName('linear', 'list_issues')).toBe('linear_list_issues');
    expect(servedName('atl', 'getJiraIssue')).toBe('atl_getjiraissue');
    expect(servedName('n', 'notion.search-v2')).toBe('n_notion_search-v2');
    expect(servedName('p', 'x'.repeat(62))).toBe(`p_${'x'.repeat(62)}`);
    expect(servedName('p', 'x'.repeat(63))).toBeUndefined();
  });

  it("refuses a prefix that is the first word of one of the broker's own tools", () => {
    const providers = parseProviders([upstream('one', 'notes'), upstream('two', 'linear')], {
      allowLoopback: false,
      self: TEST_SELF,
    });
    expect(prefixCollisions(['notes_delete', 'notes_list', 'reports_create'], providers)).toEqual([
      "one: prefix notes would serve names beside the broker's own notes_delete, notes_list: choose another prefix",
    ]);
  });

  it('digests arguments by value, whatever the order of their keys', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}',
    );
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  });
});

describe('tool snapshots', () => {
  const tool = { name: 'create_note', inputSchema: { type: 'object' } };

  it('takes a tools/list result or its array, keeping the members the broker serves', () => {
    expect(parseToolSnapshot({ tools: [{ ...tool, description: 'd', extra: 1 }] })).toEqual({
      tools: [{ name: 'create_note', description: 'd', inputSchema: { type: 'object' } }],
    });
    expect(parseToolSnapshot([tool])).toEqual({ tools: [tool] });
  });

  it('names every problem: a bad name, a schema that is not an object, a name twice, none at all', () => {
    expect(
      parseToolSnapshot({
        tools: [
          { ...tool, name: 'bad name' },
          { name: 'x', inputSchema: { type: 'array' } },
        ],
      }),
    ).toEqual({
      problems: [
        'tools[0][name]: must be 1 to 128 of A-Z a-z 0-9 _ . -',
        'tools[1][inputSchema][type]: Invalid input: expected "object"',
      ],
    });
    expect(parseToolSnapshot([tool, tool])).toEqual({ problems: ['tools: create_note listed more than once'] });
    expect('problems' in parseToolSnapshot({ tools: [] })).toBe(true);
    expect('problems' in parseToolSnapshot('nope')).toBe(true);
  });
});
