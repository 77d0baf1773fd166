import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { execute } from '../helpers/execute.js';

/** The OTel variables as config.ts reads them, and an app without an endpoint tracing nothing. */

const config = (env: Record<string, string>) => loadConfig({ DATA_DIR: '/tmp/agentry-settings-test', ...env });

describe('tracing settings', () => {
  it('reads the standard OTel variables', () => {
    expect(config({}).tracing.endpoint).toBeUndefined();
    const c = config({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20s3cret,x-team=ops',
      OTEL_SERVICE_NAME: 'agentry-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'service.instance.id=a,deployment.environment.name=prod',
    });
    expect(c.tracing).toMatchObject({
      endpoint: 'https://collector.example:4318/v1/traces',
      serviceName: 'agentry-eu',
      resourceAttributes: { 'service.instance.id': 'a', 'deployment.environment.name': 'prod' },
      captureContent: false,
      dbSpans: false,
    });
    expect(c.tracing.headers.reveal()).toEqual({ authorization: 'Bearer s3cret', 'x-team': 'ops' });
    // The export headers (a collector's credential) never show in the configuration printed or serialized.
    expect(JSON.stringify(c)).not.toContain('s3cret');
    expect(
      config({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1' }).tracing
        .endpoint,
    ).toBe('http://127.0.0.1:4318/custom');
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1', OTEL_SDK_DISABLED: 'true' }).tracing.endpoint).toBeUndefined();
    expect(config({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1', OTEL_TRACES_EXPORTER: 'none' }).tracing.endpoint).toBeUndefined();
  });

  it('refuses malformed values, naming the variable', () => {
    const refused = (env: Record<string, string>, variable: string) => {
      let err: unknown;
      try {
        config(env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).variable).toBe(variable);
    };
    refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    refused({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://collector' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
    refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x:1', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL');
    refused({ OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign' }, 'OTEL_EXPORTER_OTLP_HEADERS');
    refused({ OTEL_GENAI_CAPTURE_CONTENT: 'yes' }, 'OTEL_GENAI_CAPTURE_CONTENT');
    refused({ OTEL_AGENTRY_DB_SPANS: 'maybe' }, 'OTEL_AGENTRY_DB_SPANS');
  });
});

describe('without an endpoint', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('has no tracer and stores no trace context', async () => {
    expect(t.services.tracing).toBeUndefined();
    const { key } = await t.tenant();
    const agent = await t.agent(key);
    const { data, response } = await execute(
      t,
      key,
      agent.id,
      { message: 'hi' },
      { headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } },
    );
    expect(response.status).toBe(200);
    const row = await t.db.kysely.selectFrom('runs').select('traceparent').where('id', '=', data!.runId).executeTakeFirstOrThrow();
    expect(row.traceparent).toBeNull();
  });
});
