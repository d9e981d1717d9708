// The module walls (docs/architecture.md, "Rules"), checked by `npm run lint` and by
// test/module-walls.test.ts. Paths are relative to the repository root.

/**
 * The layering, lowest first. A module may import only modules of strictly lower layers, so no
 * two modules can ever import each other. docs/architecture.md explains each placement.
 */
export const LAYERS = [
  ['identity'],
  ['integrations', 'events', 'contacts'],
  ['knowledge', 'compliance'],
  ['agents'],
  ['calls'],
  ['campaigns'],
  ['messaging', 'analytics'],
  ['conversation'],
  ['media', 'rehearsals'],
  ['suites'],
];

// The composition root and the process entry points: they wire modules together, so only
// they may import a module's routes, jobs and services side by side.
const COMPOSITION = '^src/(app|jobs|runtime|gateway|demo|main|secrets-rotation)\\.ts$|^src/(cli|dashboard)/';

const layerRules = LAYERS.flatMap((layer, index) => {
  const notBelow = LAYERS.slice(index).flat();
  return layer.map((module) => ({
    name: `layering-${module}`,
    comment: `${module} may import only modules of lower layers, never ${notBelow.filter((other) => other !== module).join(', ')}.`,
    severity: 'error',
    from: { path: `^src/modules/${module}/` },
    to: { path: `^src/modules/(${notBelow.filter((other) => other !== module).join('|')})/` },
  }));
});

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Imports never form a cycle, between files or (through services) between modules.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'platform-and-providers-import-no-module',
      comment:
        "platform/ and providers/ are below every module and below config.ts (which reads providers' settings): they import only each other, types included.",
      severity: 'error',
      from: { path: '^src/(platform|providers)/' },
      to: { path: '^src/', pathNot: '^src/(platform|providers)/' },
    },
    {
      name: 'platform-below-providers',
      comment:
        'platform/ is below providers/ (providers use its audio, HTTP and errors): it imports nothing of theirs, types included (tsPreCompilationDeps), so the folders form no cycle.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/providers/' },
    },
    {
      name: 'modules-meet-through-services',
      comment: "A module reaches another module only through that module's service.ts (or, for types only, its schemas.ts).",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: {
        path: '^src/modules/',
        pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/service\\.ts$', '^src/modules/[^/]+/schemas\\.ts$'],
      },
    },
    {
      name: 'schemas-of-other-modules-type-only',
      comment: "Another module's schemas.ts gives types only; its values (the TypeBox schemas) stay its own contract.",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/(?!$1/)[^/]+/schemas\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'repo-private-to-its-module',
      comment: "A module's repo.ts (its SQL) is imported by that module only.",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/(?!$1/)[^/]+/repo\\.ts$' },
    },
    {
      name: 'repo-private-outside-modules',
      comment: "Nothing outside src/modules imports a module's repo.ts.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/modules/' },
      to: { path: '^src/modules/[^/]+/repo\\.ts$' },
    },
    {
      name: 'only-the-composition-root-wires-modules',
      comment: "Outside the modules, only the composition root and entry points import a module's files.",
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/modules/', '^src/api-types\\.ts$', COMPOSITION] },
      to: { path: '^src/modules/' },
    },
    {
      name: 'the-dashboard-barrel-carries-types-only',
      comment: "src/api-types.ts is the dashboard's window on the API: it re-exports the schemas' types and nothing else.",
      severity: 'error',
      from: { path: '^src/api-types\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/modules/[^/]+/schemas\\.ts$', '^src/platform/(schemas|pagination)\\.ts$'] },
    },
    {
      name: 'every-module-has-a-layer',
      comment: 'A module missing from LAYERS would escape the layering rules; give it its layer above.',
      severity: 'error',
      from: { path: `^src/modules/(?!(${LAYERS.flat().join('|')})/)[^/]+/` },
      to: { path: '^src/' },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.json'] },
  },
};
