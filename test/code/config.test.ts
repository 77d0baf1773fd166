import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

// The code execution settings (docs/code-execution.md, README's configuration table).
describe('CODE_* configuration', () => {
  test('defaults: on, one warm process per language, the documented maxima', () => {
    expect(loadConfig({}).code).toEqual({
      enabled: true,
      poolSize: 1,
      maxConcurrent: 2,
      maxima: {
        wallMs: 60_000,
        cpuMs: 30_000,
        memoryMb: 512,
        outputBytes: 1024 * 1024,
        maxOutputFiles: 20,
        maxOutputFileBytes: 10 * 1024 * 1024,
      },
    });
  });

  test('each key sets its value', () => {
    const code = loadConfig({
      CODE_EXECUTION: 'off',
      CODE_POOL_SIZE: '0',
      CODE_MAX_CONCURRENT: '8',
      CODE_MAX_WALL_SECONDS: '120',
      CODE_MAX_CPU_SECONDS: '90',
      CODE_MAX_MEMORY_MB: '1024',
      CODE_MAX_OUTPUT_BYTES: '4096',
      CODE_MAX_OUTPUT_FILES: '5',
      CODE_MAX_OUTPUT_FILE_BYTES: '2048',
    }).code;
    expect(code).toEqual({
      enabled: false,
      poolSize: 0,
      maxConcurrent: 8,
      maxima: { wallMs: 120_000, cpuMs: 90_000, memoryMb: 1024, outputBytes: 4096, maxOutputFiles: 5, maxOutputFileBytes: 2048 },
    });
  });

  test.each([
    ['CODE_EXECUTION', 'yes', /must be on or off/],
    ['CODE_POOL_SIZE', '-1', /must be a whole number/],
    ['CODE_POOL_SIZE', '33', /between 0 and 32/],
    ['CODE_MAX_CONCURRENT', '0', /between 1 and 256/],
    ['CODE_MAX_MEMORY_MB', '4096', /between 16 and 3072/],
    ['CODE_MAX_WALL_SECONDS', '0', /between 1 and 3600/],
  ])('%s=%s is refused, naming the variable', (name, value, message) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(name);
    expect((error as ConfigError).message).toMatch(message);
  });
});
