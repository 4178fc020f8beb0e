/**
 * The floors of the house, bottom up: `src/contract` (the wire contract) → `src/rules` (pure) → `src/config`,
 * `src/codec`, `src/ops` (what both sides of a worker read) → `workflows` | `activities` → `src/worker`,
 * `src/client`, `src/testing` → `src/cli`, `src/demo`, `src/web`, `src/eval`, `src/index.ts`. An import may go down
 * or stay on its floor, never up; no module imports itself back through others, type imports included.
 * Run by `npm run lint` (`depcruise`).
 */
const above = (...rooms) => `^(${rooms.join('|')})`;
const TOP = ['src/cli/', 'src/demo/', 'src/web/', 'src/eval/', 'src/index\\.ts$'];
const HOSTS = ['src/worker/', 'src/client/', 'src/testing/'];
const RUNS = ['workflows/', 'activities/'];
const SUPPORT = ['src/config/', 'src/codec/', 'src/ops/'];

const floor = (name, from, forbidden, extra = {}) => ({
  name,
  severity: 'error',
  comment: `${from} imports only what sits on its own floor or below`,
  from: { path: `^${from}` },
  to: { path: above(...forbidden), ...extra },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'a circle of imports (type imports included) means two rooms are one concept, or one is misplaced',
      from: {},
      to: { circular: true },
    },
    floor('contract-is-the-ground-floor', 'src/contract/', ['src/(?!contract/)', ...RUNS]),
    floor('rules-stand-on-the-contract', 'src/rules/', [...SUPPORT, ...RUNS, ...HOSTS, ...TOP]),
    floor('support-stands-on-rules', 'src/(config|codec|ops)/', [...RUNS, ...HOSTS, ...TOP]),
    floor('workflows-see-activities-as-types', 'workflows/', ['activities/'], { dependencyTypesNot: ['type-only'] }),
    floor('workflows-stand-on-support', 'workflows/', [...HOSTS, ...TOP]),
    floor('activities-stand-on-support', 'activities/', ['workflows/', ...HOSTS, ...TOP]),
    floor('hosts-stand-on-runs', 'src/(worker|client|testing)/', TOP),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist|\\.deputy)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
