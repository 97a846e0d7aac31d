import { enableCompileCache } from 'node:module';

// `npm run worker`: as src/main.ts, V8's compiled code is cached on disk before the worker
// module (and its ~1,000 dependencies) loads, hence the dynamic import.
enableCompileCache();
await import('./worker-process.ts');
