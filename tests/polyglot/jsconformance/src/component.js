// The component entry of jsconformance: binds the kit to the WIT imports and exports `guest`.
// Only the component build reads this file (`cargo xtask build-engines`); `run_fake.js` drives
// `engine.js` through the test kit.
import { exportGuest } from '../../../../sdk/javascript/src/in-component.js';
import engine from './engine.js';

export const guest = exportGuest(engine);
