import { prepareModuleLoading } from './lib/module-loading.ts';

// `npm run worker`: as src/main.ts, module loading is prepared (lib/module-loading.ts) before
// the worker module and its ~1,000 dependencies load, hence the dynamic import.
prepareModuleLoading();
await import('./worker-process.ts');
