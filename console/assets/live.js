// Live changes: the shell feeds each workspace.updated it hears to the screens listening.
const listeners = new Set();

export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export function emit(detail) {
  listeners.forEach((fn) => fn(detail));
}
