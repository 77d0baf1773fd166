import { Alert, Badge, Button, Code, Group, Stack, Text } from '@mantine/core';
import { useFileDownload } from './lib/use-file-download';

/**
 * A code tool call (code_run, skill_script_run: docs/code-execution.md) as the run view and the
 * playground show it: the code or the script it ran, its output, exit and the files it made, each a
 * download. Any other tool call keeps the plain arguments and result.
 */

const CODE_TOOLS = new Set(['code_run', 'skill_script_run']);
export const isCodeCall = (name: string) => CODE_TOOLS.has(name);

export const sizeOf = (bytes: number) =>
  bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KiB` : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

interface MadeFile {
  id: string;
  name: string;
  size: number;
  mediaType: string;
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');
const record = (value: unknown) => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {});

function MadeFileButton({ file }: { file: MadeFile }) {
  const { download, failed } = useFileDownload();
  return (
    <Button
      size="compact-xs"
      variant="light"
      data-testid="code-file"
      color={failed ? 'red' : undefined}
      title={failed ?? `Download ${file.name} (${file.mediaType})`}
      onClick={() => download(file)}
    >
      {file.name} · {sizeOf(file.size)}
    </Button>
  );
}

function Output({ label, value, truncated }: { label: string; value: string; truncated: boolean }) {
  if (!value) return null;
  return (
    <>
      <Text size="xs" fw={600}>
        {label}
        {truncated && ' (truncated)'}
      </Text>
      <Code block data-testid={`code-${label}`}>
        {value}
      </Code>
    </>
  );
}

/** The call's code (code_run) or script and arguments (skill_script_run), then, once it ended, what it gave. */
export function CodeCall({ name, input, result }: { name: string; input: unknown; result?: Record<string, unknown> }) {
  const args = record(input);
  const error = result && record(result.error);
  const files = Array.isArray(result?.files) ? (result.files as MadeFile[]) : [];
  return (
    <Stack gap={4} data-testid="code-call">
      {name === 'code_run' ? (
        <>
          <Group gap="xs">
            <Badge variant="outline" size="sm">
              {text(args.language) || 'code'}
            </Badge>
          </Group>
          <Code block data-testid="code-source">
            {text(args.code)}
          </Code>
        </>
      ) : (
        <Text size="sm" ff="monospace" data-testid="code-source">
          {text(args.script)} {Array.isArray(args.args) ? (args.args as unknown[]).map(String).join(' ') : ''} (skill {text(args.skillId)})
        </Text>
      )}
      {error && Object.keys(error).length > 0 && (
        <Alert color="red" title={text(error.code)} data-testid="code-error">
          <Text size="sm" style={{ whiteSpace: 'pre-wrap' }}>
            {text(error.message)}
          </Text>
        </Alert>
      )}
      {result && !result.error && (
        <>
          <Text size="xs" c="dimmed" data-testid="code-exit">
            exit {String(result.exitCode)}
            {result.exception ? ` · ${text(result.exception)}` : ''}
            {typeof result.durationMs === 'number' ? ` · ${result.durationMs} ms` : ''}
          </Text>
          <Output label="stdout" value={text(result.stdout)} truncated={result.stdoutTruncated === true} />
          <Output label="stderr" value={text(result.stderr)} truncated={result.stderrTruncated === true} />
          {files.length > 0 && (
            <Group gap={4}>
              {files.map((f) => (
                <MadeFileButton key={f.id} file={f} />
              ))}
            </Group>
          )}
        </>
      )}
    </Stack>
  );
}
