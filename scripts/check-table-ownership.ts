// Each module owns its tables (docs/architecture.md, "Tables"): another module asks through the
// owner's service, never with SQL of its own. Run by `npm run lint`; test/module-walls.test.ts
// shows it failing. Usage: node --import tsx scripts/check-table-ownership.ts [repository root]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

/** The name each owner gives its list of tables: `export const OWNED_TABLES = [...] as const`. */
export const DECLARATION = 'OWNED_TABLES';

// SQL keywords are written in capitals in this codebase, so prose ("from the list") is not SQL.
const TABLE_AFTER_KEYWORD =
  /\b(?:FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES)\s+(?:ONLY\s+|IF\s+(?:NOT\s+)?EXISTS\s+)?(?:public\.)?"?([a-z_][a-z0-9_]*)"?/g;
const CREATE_TABLE = /\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(?:public\.)?"?([a-z_][a-z0-9_]*)"?/gi;
const DROP_TABLE = /\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:public\.)?"?([a-z_][a-z0-9_]*)"?/gi;

interface Declaration {
  owner: string;
  file: string;
  tables: string[];
}

interface TableUse {
  file: string;
  line: number;
  table: string;
}

/** Every table the migrations leave: created, and not dropped by a later one (they run in name order). */
export function migrationTables(root: string): Set<string> {
  const dir = join(root, 'migrations');
  const tables = new Set<string>();
  for (const file of readdirSync(dir)
    .filter((name) => name.endsWith('.sql'))
    .sort()) {
    const sql = readFileSync(join(dir, file), 'utf8');
    for (const match of sql.matchAll(CREATE_TABLE)) tables.add(match[1]!);
    for (const match of sql.matchAll(DROP_TABLE)) tables.delete(match[1]!);
  }
  return tables;
}

function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : typeScriptFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** The owner a file speaks for: its module, or platform; undefined for everything else in src/. */
function ownerOf(relativePath: string): string | undefined {
  const parts = relativePath.split(sep);
  if (parts[0] !== 'src') return undefined;
  if (parts[1] === 'platform') return 'platform';
  if (parts[1] === 'modules' && parts.length > 3) return parts[2];
  return undefined;
}

const stripAsConst = (node: ts.Expression): ts.Expression =>
  ts.isAsExpression(node) || ts.isSatisfiesExpression(node) ? stripAsConst(node.expression) : node;

/** The text of a string or template literal, with each `${…}` as a blank: a computed name is never read as a table. */
function literalText(node: ts.Node): string | undefined {
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTemplateExpression(node)) return node.head.text + node.templateSpans.map((span) => ' \u0000 ' + span.literal.text).join('');
  return undefined;
}

function scan(root: string, path: string, tables: Set<string>, declarations: Declaration[], uses: TableUse[]): void {
  const file = relative(root, path);
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.name.text === DECLARATION && node.initializer) {
      const list = stripAsConst(node.initializer);
      const names = ts.isArrayLiteralExpression(list) ? list.elements.map((element) => literalText(element)) : [undefined];
      if (names.some((name) => name === undefined)) throw new Error(`${file}: ${DECLARATION} must be an array of string literals`);
      declarations.push({ owner: ownerOf(file) ?? `(${file}, outside any module)`, file, tables: names as string[] });
      return;
    }
    if (ts.isTemplateExpression(node)) {
      // Each substitution is an expression of its own; visit them for nested SQL.
      node.templateSpans.forEach((span) => visit(span.expression));
    }
    const text = literalText(node);
    if (text !== undefined) {
      for (const match of text.matchAll(TABLE_AFTER_KEYWORD)) {
        const table = match[1]!;
        if (!tables.has(table)) continue;
        uses.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, table });
      }
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

/** Each problem as one sentence naming the file, the table and its owner; empty when every table is touched only by its owner. */
export function tableOwnershipProblems(root: string): string[] {
  const tables = migrationTables(root);
  const declarations: Declaration[] = [];
  const uses: TableUse[] = [];
  for (const path of typeScriptFiles(join(root, 'src'))) scan(root, path, tables, declarations, uses);

  const problems: string[] = [];
  const owners = new Map<string, string>();
  for (const { owner, file, tables: declared } of declarations) {
    for (const table of declared) {
      const other = owners.get(table);
      if (!tables.has(table)) problems.push(`${file}: ${DECLARATION} names "${table}", which no migration creates.`);
      else if (other && other !== owner)
        problems.push(`${file}: "${table}" is declared by both ${other} and ${owner}; a table has one owner.`);
      else owners.set(table, owner);
    }
  }
  const modulesDir = join(root, 'src', 'modules');
  for (const module of readdirSync(modulesDir).filter((name) => statSync(join(modulesDir, name)).isDirectory())) {
    const count = declarations.filter((declaration) => declaration.owner === module).length;
    if (count !== 1) {
      problems.push(`src/modules/${module} declares its tables ${count} times; declare them once, as ${DECLARATION} in its repo.ts.`);
    }
  }
  for (const table of tables) {
    if (!owners.has(table))
      problems.push(`Table "${table}" (migrations) has no owner; add it to the ${DECLARATION} of the module that owns it.`);
  }
  for (const { file, line, table } of uses) {
    const owner = owners.get(table);
    const user = ownerOf(file);
    if (owner === undefined || owner === user) continue;
    problems.push(
      `${file}:${line} uses table "${table}", owned by ${owner}; ${user ? `${user} must ask` : 'ask'} ${owner}'s service instead.`,
    );
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = tableOwnershipProblems(process.argv[2] ?? process.cwd());
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`✘ ${problems.length} table ownership problem(s): each module's SQL touches only the tables it declares.`);
    process.exit(1);
  }
}
