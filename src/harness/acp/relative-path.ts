/** A relative path that stays below its root: no absolute paths, no `..`, no backslashes or NUL. */
export function isSafeRelativePath(path: string): boolean {
  if (path.length === 0 || path.startsWith('/') || path.includes('\\') || path.includes('\0')) return false;
  return path.split('/').every((segment) => segment !== '..' && segment !== '');
}
