/// <reference types="vite/client" />

declare module 'virtual:request-schemas' {
  const bodies: Record<string, unknown>;
  export default bodies;
}
