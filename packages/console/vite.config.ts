import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// base './': asset URLs relative to the page, which the server's <base href> (PUBLIC_BASE_URL's path)
// anchors, so one build works at / and behind any path prefix.
export default defineConfig({
  base: './',
  plugins: [react()],
  build: { outDir: 'dist', assetsDir: 'assets', emptyOutDir: true, chunkSizeWarningLimit: 2000 },
  server: { proxy: { '/api': 'http://127.0.0.1:8080' } },
});
