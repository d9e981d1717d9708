import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ICruiseResult } from 'dependency-cruiser';
import { cruiseWithProjectRules, currentArchitectureDoc, DOC } from '../scripts/architecture-docs.ts';
import { tableOwnershipProblems } from '../scripts/check-table-ownership.ts';

const ROOT = new URL('..', import.meta.url).pathname;

// A small repository that breaks each wall once, checked with the project's own rules.
const FIXTURE: Record<string, string> = {
  'tsconfig.json': JSON.stringify({
    compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', allowImportingTsExtensions: true, noEmit: true },
  }),
  'migrations/001_tables.sql': 'CREATE TABLE contacts (id uuid);\nCREATE TABLE campaigns (id uuid);\nCREATE TABLE agents (id uuid);\n',
  'src/platform/context.ts': "import { countContacts } from '../modules/contacts/service.ts';\nexport const peek = countContacts;\n",
  'src/modules/contacts/repo.ts':
    "export const OWNED_TABLES = ['contacts'] as const;\nexport const count = 'SELECT count(*) FROM contacts WHERE list_id = $1';\n",
  'src/modules/contacts/schemas.ts': "export const ContactSchema = { type: 'object' };\nexport type ContactShape = { id: string };\n",
  'src/modules/contacts/service.ts': "import { count } from './repo.ts';\nexport const countContacts = () => count;\n",
  // Reaches into another module's repo.ts, and its schemas.ts for a value (a type would be fine).
  'src/modules/campaigns/service.ts':
    "import { count } from '../contacts/repo.ts';\nimport { ContactSchema } from '../contacts/schemas.ts';\nimport type { ContactShape } from '../contacts/schemas.ts';\nexport const start = (contact: ContactShape) => [count, ContactSchema, contact];\n",
  // Reads another module's table with its own SQL.
  'src/modules/campaigns/repo.ts':
    "export const OWNED_TABLES = ['campaigns'] as const;\nexport const snapshot = `INSERT INTO campaigns (id) SELECT id FROM contacts WHERE list_id = $1`;\n",
  // A new cycle between two modules: knowledge sits below agents and imports it.
  'src/modules/agents/repo.ts': "export const OWNED_TABLES = ['agents'] as const;\n",
  'src/modules/agents/service.ts': "import { search } from '../knowledge/service.ts';\nexport const agentSearch = () => search;\n",
  'src/modules/knowledge/repo.ts': 'export const OWNED_TABLES = [] as const;\n',
  'src/modules/knowledge/service.ts':
    "import { agentSearch } from '../agents/service.ts';\nexport const search = () => 'search';\nexport const agents = () => agentSearch;\n",
};

const violationsOf = (result: ICruiseResult) =>
  result.summary.violations.map((violation) => ({ rule: violation.rule.name, from: violation.from, to: violation.to }));

describe('module walls', () => {
  let fixture: string;
  let fixtureResult: ICruiseResult;
  let realResult: ICruiseResult;

  beforeAll(async () => {
    fixture = mkdtempSync(join(tmpdir(), 'callforge-walls-'));
    for (const [path, text] of Object.entries(FIXTURE)) {
      mkdirSync(dirname(join(fixture, path)), { recursive: true });
      writeFileSync(join(fixture, path), text);
    }
    [fixtureResult, realResult] = [await cruiseWithProjectRules(fixture), await cruiseWithProjectRules(ROOT)];
  });
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  it('reports a new cycle between modules, and the import against the layering that closes it', () => {
    const violations = violationsOf(fixtureResult);
    const cycles = violations.filter((violation) => violation.rule === 'no-circular');
    expect(cycles).toHaveLength(1);
    expect([cycles[0]!.from, cycles[0]!.to].sort()).toEqual(['src/modules/agents/service.ts', 'src/modules/knowledge/service.ts']);
    expect(violations).toContainEqual({
      rule: 'layering-knowledge',
      from: 'src/modules/knowledge/service.ts',
      to: 'src/modules/agents/service.ts',
    });
    // The downward half of the cycle is no layering violation of its own.
    expect(violations).not.toContainEqual(expect.objectContaining({ rule: 'layering-agents' }));
  });

  it('reports platform importing a module', () => {
    expect(violationsOf(fixtureResult)).toContainEqual({
      rule: 'platform-and-providers-import-no-module',
      from: 'src/platform/context.ts',
      to: 'src/modules/contacts/service.ts',
    });
  });

  it("reports a module importing another module's repo.ts, and its schemas.ts for a value but not for a type", () => {
    const violations = violationsOf(fixtureResult);
    expect(violations).toContainEqual({
      rule: 'repo-private-to-its-module',
      from: 'src/modules/campaigns/service.ts',
      to: 'src/modules/contacts/repo.ts',
    });
    expect(violations).toContainEqual({
      rule: 'modules-meet-through-services',
      from: 'src/modules/campaigns/service.ts',
      to: 'src/modules/contacts/repo.ts',
    });
    expect(violations.filter((violation) => violation.to === 'src/modules/contacts/schemas.ts')).toEqual([
      { rule: 'schemas-of-other-modules-type-only', from: 'src/modules/campaigns/service.ts', to: 'src/modules/contacts/schemas.ts' },
    ]);
  });

  it("reports a module's SQL reading another module's table, naming the file, the table and its owner", () => {
    expect(tableOwnershipProblems(fixture)).toEqual([
      'src/modules/campaigns/repo.ts:2 uses table "contacts", owned by contacts; campaigns must ask contacts\'s service instead.',
    ]);
  });

  it('passes both checks on src/', () => {
    expect(violationsOf(realResult)).toEqual([]);
    expect(tableOwnershipProblems(ROOT)).toEqual([]);
  });

  it('keeps docs/architecture.md generated and up to date (npm run docs:architecture)', async () => {
    expect(readFileSync(DOC, 'utf8')).toBe(await currentArchitectureDoc());
  });
});
