import { describe, expect, it } from 'vitest';
import { createModulePaths } from './module-paths.ts';

describe('module paths', () => {
  it('TypeScript and JavaScript: relative specifiers with the extensions and index files Node tries', () => {
    const paths = createModulePaths(['src/a.ts', 'src/lib/index.ts', 'src/util.js', 'src/view.tsx']);
    expect(paths.resolve('src/main.ts', 'typescript', './a.ts')).toEqual(['src/a.ts']);
    expect(paths.resolve('src/main.ts', 'typescript', './a.js')).toEqual(['src/a.ts']);
    expect(paths.resolve('src/main.ts', 'typescript', './a')).toEqual(['src/a.ts']);
    expect(paths.resolve('src/main.ts', 'typescript', './lib')).toEqual(['src/lib/index.ts']);
    expect(paths.resolve('src/lib/index.ts', 'typescript', '../util')).toEqual(['src/util.js']);
    expect(paths.resolve('src/main.ts', 'tsx', './view')).toEqual(['src/view.tsx']);
    expect(paths.resolve('src/main.ts', 'typescript', 'react')).toEqual([]);
    expect(paths.resolve('src/main.ts', 'typescript', './missing')).toEqual([]);
  });

  it('Python: relative modules from the package, absolute ones from the root or one source folder', () => {
    const paths = createModulePaths([
      'src/shop/__init__.py',
      'src/shop/cart.py',
      'src/shop/sub/x.py',
      'tool.py',
    ]);
    expect(paths.resolve('src/shop/cart.py', 'python', '.')).toEqual(['src/shop/__init__.py']);
    expect(paths.resolve('src/shop/sub/x.py', 'python', '..cart')).toEqual(['src/shop/cart.py']);
    expect(paths.resolve('tool.py', 'python', 'shop.cart')).toEqual(['src/shop/cart.py']);
    expect(paths.resolve('tool.py', 'python', 'shop')).toEqual(['src/shop/__init__.py']);
    expect(paths.resolve('tool.py', 'python', 'os.path')).toEqual([]);
  });

  it('Python: a name found in two folders is ambiguous, unless one is at the root', () => {
    const paths = createModulePaths(['a/util.py', 'b/util.py', 'c.py']);
    expect(paths.resolve('c.py', 'python', 'util')).toEqual([]);
    expect(createModulePaths(['util.py', 'b/util.py']).resolve('c.py', 'python', 'util')).toEqual([
      'util.py',
    ]);
  });

  it('Go: the package folder matching the import path’s longest tail; the standard library is outside', () => {
    const paths = createModulePaths([
      'internal/store/a.go',
      'internal/store/b.go',
      'internal/store/doc.md',
      'errors/e.go',
    ]);
    expect(paths.resolve('main.go', 'go', 'github.com/acme/shop/internal/store')).toEqual([
      'internal/store/a.go',
      'internal/store/b.go',
    ]);
    expect(paths.resolve('main.go', 'go', 'errors')).toEqual([]);
    expect(paths.siblings('internal/store/a.go')).toEqual(['internal/store/a.go', 'internal/store/b.go']);
  });

  it('Java: classes and packages under any source folder', () => {
    const paths = createModulePaths([
      'src/main/java/com/acme/A.java',
      'src/main/java/com/acme/B.java',
      'src/main/java/com/acme/util/U.java',
    ]);
    expect(paths.resolve('X.java', 'java', 'com.acme.A')).toEqual(['src/main/java/com/acme/A.java']);
    expect(paths.resolve('X.java', 'java', 'com.acme')).toEqual([
      'src/main/java/com/acme/A.java',
      'src/main/java/com/acme/B.java',
    ]);
    expect(paths.resolve('X.java', 'java', 'java.util')).toEqual([]);
  });
});
