// The JavaScript kit, `@tessera/engine`. In this repository it is found by path (nothing is
// installed into the tree); an engine of its own imports '@tessera/engine' instead.
export * from '../../../sdk/javascript/src/index.js';
