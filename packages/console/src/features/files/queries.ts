import type { Agentry } from '@agentry/client';
import { queryOptions } from '@tanstack/react-query';

export const fileKeys = {
  all: ['files'] as const,
  detail: (fileId: string) => [...fileKeys.all, fileId] as const,
};

/** A file's name, size and type; they never change, so it is read once. */
export const fileQuery = (client: Agentry, fileId: string) =>
  queryOptions({ queryKey: fileKeys.detail(fileId), staleTime: Number.POSITIVE_INFINITY, queryFn: () => client.files.get(fileId) });
