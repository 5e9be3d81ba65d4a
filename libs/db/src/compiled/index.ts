/** The hot reads' path: queries compiled once, run straight on the pool, rows made by one function per column list. */
export { executeCompiled } from './execute';
export { rowMaker, type RowMaker } from './row-maker';
export { param, prepare, type Prepared, type PreparableQuery, type PrepareOptions } from './prepare';
export { isoTimestamp } from './fragments';
