import type { Agentry } from '@agentry/client';
import { useState } from 'react';
import { messageOf, useClient } from '../api';

/** A file of the tenant, as a download names it. */
interface DownloadableFile {
  id: string;
  name: string;
}

/** Saves a file of the tenant: its bytes need the bearer credential, so they are fetched, then saved from a blob URL. */
async function saveFile(client: Agentry, file: DownloadableFile) {
  const blob = await client.files.content(file.id);
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = file.name.split('/').pop() || 'file';
  // Clicked in the document (a detached anchor's click did not always start the download in Chromium).
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A download button's behaviour: `download(file)` saves it; `failed` is why the last one could not be. */
export function useFileDownload() {
  const client = useClient();
  const [failed, setFailed] = useState<string | null>(null);
  const download = (file: DownloadableFile) => {
    saveFile(client, file).catch((err) => setFailed(messageOf(err)));
  };
  return { download, failed };
}
