/**
 * Under `npm run test:mutation` each mutant reruns the tests that reach it: properties run fewer cases there (each
 * case is still random, and a mutant a property catches it catches within a few dozen of them).
 */
import fc from 'fast-check';

fc.configureGlobal({ numRuns: 25 });
