import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';

/** The process logger, writing into memory. */
function capturedLogger() {
  let out = '';
  const sink = new Writable({
    write(chunk, _encoding, done) {
      out += chunk;
      done();
    },
  });
  const logger = createLogger(loadConfig({ LOG_LEVEL: 'trace', DATA_DIR: '/tmp/unused' }), sink);
  return { logger, output: () => out };
}

describe('log redaction is a rule over every line, not a list of call sites', () => {
  it('replaces credentials by member name at any depth, in any logger, and by their look in any text', () => {
    const { logger, output } = capturedLogger();
    const apiKey = `agk_${'0a'.repeat(16)}_Qw3rTy7uIoPaSdFgHjKlZxCvBnM1234567890abcde`;
    const jwt = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg';
    const secrets = {
      nestedHeader: 'Bearer-secret-A1b2C3d4',
      clientSecret: 'client-secret-E5f6G7h8',
      assertion: 'assertion-I9j0K1l2',
      subjectToken: 'subject-token-M3n4O5p6',
      cookie: 'session=cookie-Q7r8S9t0',
      password: 'password-U1v2W3x4',
      xApiKey: 'x-api-key-Y5z6A7b8',
      jwkD: 'private-d-C9d0E1f2G3h4',
      webhookSecret: 'whsec_H5i6J7k8L9m0N1o2P3q4',
      pem: 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
    };
    const child = logger.child({ plugin: 'anything' }).child({ deeper: true });
    child.trace(
      { options: { headers: { authorization: secrets.nestedHeader, 'content-type': 'multipart/form-data' } } },
      'a plugin logs its options',
    );
    logger.info(
      { body: { grant_type: 'client_credentials', client_secret: secrets.clientSecret, client_assertion: secrets.assertion } },
      'token request',
    );
    logger.warn({ form: [{ subject_token: secrets.subjectToken, actor_token: secrets.subjectToken }] }, 'exchange');
    logger.debug({ req: { headers: { Cookie: secrets.cookie, 'X-Api-Key': secrets.xApiKey } }, user: { password: secrets.password } });
    logger.error({ key: { kty: 'EC', crv: 'P-256', x: 'public-x', d: secrets.jwkD } }, 'key problem');
    logger.error({ err: new Error(`refused ${apiKey} and ${jwt} for ${secrets.webhookSecret}`) }, 'failed');
    logger.info(`a message naming ${apiKey} and Basic ${Buffer.from(`id:${apiKey}`).toString('base64')}`);
    logger.info({ url: `/hook?signature=abc&token=${jwt}&access_token=tok-R5s6T7u8` }, 'url');
    logger.info({ text: `-----BEGIN PRIVATE KEY-----\n${secrets.pem}\n-----END PRIVATE KEY-----` }, 'pem');
    // What is not a credential stays: counts named like tokens, the content type, public key members.
    logger.info({ usage: { inputTokens: 12, outputTokens: 34 }, tokenType: 'Bearer' }, 'usage');

    const lines = output().trim().split('\n');
    expect(lines).toHaveLength(10);
    for (const line of lines) JSON.parse(line);
    const text = output();
    const found = [
      ...Object.entries(secrets),
      ['apiKey', apiKey.slice(37)],
      ['jwt', jwt],
      ['basic', Buffer.from(`id:${apiKey}`).toString('base64')],
      ['query token', 'tok-R5s6T7u8'],
    ]
      .filter(([, secret]) => text.includes(secret))
      .map(([what]) => what);
    expect(found).toEqual([]);
    expect(text).toContain('"content-type":"multipart/form-data"');
    expect(text).toContain('"x":"public-x"');
    expect(text).toContain('"inputTokens":12');
    expect(text).toContain('"tokenType":"Bearer"');
    expect(text).toContain('"plugin":"anything"');
    expect(text).toContain('[redacted]');
  });
});
