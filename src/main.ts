import { prepareModuleLoading } from './lib/module-loading.ts';

// V8's compiled code for every module loaded from here on is kept on disk, and drizzle-orm's
// modules are resolved without re-reading its package.json each time (lib/module-loading.ts):
// together more than half of the start-up's CPU. Static imports would load before this line
// runs, hence the dynamic import.
prepareModuleLoading();
await import('./server.ts');
