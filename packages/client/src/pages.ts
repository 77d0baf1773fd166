/** One page of a paged list: its items under their own name, and the total over all pages. */
interface Paged {
  total: number;
  page: number;
  limit: number;
}

/**
 * The items of a paged list endpoint across every page, fetched one page at a time as iteration
 * reaches them; `pages()` gives the pages themselves.
 */
export class PageIterator<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchPage: (page: number) => Promise<Paged & Record<string, unknown>>,
    private readonly itemsKey: string,
  ) {}

  async *pages(): AsyncGenerator<{ items: T[]; total: number; page: number; limit: number }> {
    for (let page = 1; ; page++) {
      const answer = await this.fetchPage(page);
      const items = answer[this.itemsKey] as T[];
      yield { items, total: answer.total, page: answer.page, limit: answer.limit };
      if (items.length === 0 || answer.page * answer.limit >= answer.total) return;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for await (const { items } of this.pages()) yield* items;
  }

  /** Every item in one array (mind the size of the list). */
  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}
