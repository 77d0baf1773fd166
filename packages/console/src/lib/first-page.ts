import type { PageIterator } from '@agentry/client';

/** A paged list's first page and its total over all pages: a page lists one page of the server's, not the whole list. */
export async function firstPage<T>(list: PageIterator<T>): Promise<{ items: T[]; total: number }> {
  const first = await list.pages().next();
  return first.done ? { items: [], total: 0 } : { items: first.value.items, total: first.value.total };
}
