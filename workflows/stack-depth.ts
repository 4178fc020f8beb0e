/**
 * Temporal's worker records a stack trace for every promise workflow code makes (for the stack trace query), and
 * each frame it records costs: mapped through the bundle's source map, formatted, cut. Plain async code makes a
 * promise per call, so each one records the innermost six frames, not V8's ten: where a run waits still shows, and a
 * tree replays in about a tenth less CPU (docs/performance.md). A workflow failure's stack shows six frames too.
 *
 * Loaded once into a worker's shared workflow context before Temporal freezes its globals (the bundle's preloaded
 * modules); a service bundling Deputy's workflows into its own keeps its own setting.
 */
Error.stackTraceLimit = 6;

export {};
