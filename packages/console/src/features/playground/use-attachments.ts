import type { FileInfo } from '@agentry/client';
import { useQueryClient } from '@tanstack/react-query';
import { type DragEvent, useRef, useState } from 'react';
import { messageOf, useClient } from '../../api';
import { fileKeys } from '../files/queries';

/** The server's limit on a message's attachments (the execute body's `attachments`, maxItems). */
export const MAX_ATTACHMENTS = 20;

/**
 * The files uploaded for the next message (named by id when it is sent): chosen or dropped while
 * `canAttach`, each uploaded at once; what the server refuses (413, the count) is said per file through
 * `onProblem` (null when an attempt starts).
 */
export function useAttachments(canAttach: boolean, onProblem: (problem: string | null) => void) {
  const client = useClient();
  const queryClient = useQueryClient();
  const [attached, setAttached] = useState<FileInfo[]>([]);
  const [uploading, setUploading] = useState(0);
  // Attached plus uploading, counted when an upload starts: a drop during an upload sees the slots it took.
  const taken = useRef(0);
  const [dragging, setDragging] = useState(false);

  async function attach(files: File[]) {
    if (!canAttach || !files.length) return;
    onProblem(null);
    const room = Math.max(MAX_ATTACHMENTS - taken.current, 0);
    const accepted = files.slice(0, room);
    taken.current += accepted.length;
    const problems: string[] = [];
    if (files.length > room) problems.push(`a message takes at most ${MAX_ATTACHMENTS} attachments: ${files.length - room} not attached`);
    setUploading((n) => n + accepted.length);
    await Promise.all(
      accepted.map(async (file) => {
        try {
          const uploaded = await client.files.upload(file);
          queryClient.setQueryData(fileKeys.detail(uploaded.id), uploaded);
          setAttached((list) => [...list, uploaded]);
        } catch (err) {
          taken.current -= 1;
          problems.push(`${file.name}: ${messageOf(err)}`);
        } finally {
          setUploading((n) => n - 1);
        }
      }),
    );
    if (problems.length) onProblem(problems.join('; '));
  }

  /** Removed before sending: nothing names it yet, so it goes from the server too. */
  function remove(file: FileInfo) {
    taken.current -= 1;
    setAttached((list) => list.filter((x) => x.id !== file.id));
    // One that could not be deleted harms nothing, and the tenant's retention removes it.
    client.files.delete(file.id).catch(() => {});
  }

  /** The message naming `files` started its run: they are its own now. */
  function sent(files: FileInfo[]) {
    taken.current -= files.length;
    setAttached([]);
  }

  /** A message the server refused keeps its attachments to try again (unless others were attached since). */
  function restore(files: FileInfo[]) {
    setAttached((list) => (list.length ? list : files));
  }

  const dropZone = {
    onDragOver: (e: DragEvent) => {
      if (!canAttach || !e.dataTransfer.types.includes('Files')) return;
      e.preventDefault();
      setDragging(true);
    },
    onDragLeave: (e: DragEvent) => {
      if (!e.currentTarget.contains(e.relatedTarget as Node | null)) setDragging(false);
    },
    onDrop: (e: DragEvent) => {
      e.preventDefault();
      setDragging(false);
      void attach([...e.dataTransfer.files]);
    },
  };

  return { attached, uploading, dragging, attach, remove, sent, restore, dropZone };
}
