import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

// The web interface: a single-page application built into dist/web, served by the server at `/`
// (src/server/plugins/web.ts). Hashed file names make every asset immutable; index.html is not.
export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    // The strict CSP allows no inline script or style: nothing is inlined, not even small assets.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: true,
    target: 'es2022',
  },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
