/**
 * The signed-in credential (an API key or an OAuth access token) lives in this tab's sessionStorage
 * only: never localStorage, never a cookie. Closing the tab or signing out forgets it.
 */
const CREDENTIAL = 'agentry.credential';

/** Where the API is: the page's own base (the server's <base href>, PUBLIC_BASE_URL's path), without a trailing slash. */
export function apiBaseUrl(doc: Pick<Document, 'baseURI'> = document): string {
  return doc.baseURI.replace(/[?#].*$/, '').replace(/\/+$/, '');
}

/** The router's base path: the path of the page's base, '' at the root. */
export function routerBasePath(doc: Pick<Document, 'baseURI'> = document): string {
  return new URL(doc.baseURI).pathname.replace(/\/+$/, '');
}

export function loadCredential(storage: Storage = sessionStorage): string | null {
  return storage.getItem(CREDENTIAL);
}

export function saveCredential(credential: string, storage: Storage = sessionStorage) {
  storage.setItem(CREDENTIAL, credential.trim());
}

export function forgetCredential(storage: Storage = sessionStorage) {
  storage.clear();
}
