/**
 * Redaction before anything leaves a run (R5.3: an admitted scenario): each kind of secret and personal data is
 * replaced by a numbered placeholder, listed with where it was found; words, ids and structure are left alone.
 */
import { describe, expect, it } from 'vitest';
import { redactDeep, Redactor } from '../src/eval/redact.js';

async function redact(text: string) {
  const redactor = new Redactor();
  return { out: await redactor.redact(text, 'task'), redactions: redactor.redactions };
}

describe('R5.3 redaction', () => {
  it.each([
    ['private key', '-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----'],
    ['aws access key id', 'AKIAABCDEFGHIJKLMNOP'],
    ['github token', `ghp_${'a1B2c3D4e5'.repeat(4)}`],
    ['jwt', 'eyJhbGciOi.eyJzdWIiOiIx.SflKxwRJSMeKKF2QT4fw'],
    ['api key', 'sk-abcdefghijklmnop1234'],
    ['bearer token', 'Bearer abcdefghij0123456789'],
    ['url credentials', 'postgres://admin:hunter2@db.internal/app'],
    ['email address', 'jane.doe@example.com'],
    ['phone number', '+44 20 7946 0958'],
    ['card number', '4111 1111 1111 1111'],
    ['IBAN', 'GB82WEST12345698765432'],
    ['high-entropy token', 'x9Fq2LmZ7pR4tY8wK3vB6nD1'],
  ])('R5.3 a %s is replaced by a placeholder and listed', async (kind, secret) => {
    const { out, redactions } = await redact(`before ${secret} after`);
    expect(out.startsWith('before [')).toBe(true);
    expect(out.endsWith('] after')).toBe(true);
    expect(out).not.toContain(secret.includes('://') ? 'hunter2' : secret);
    expect(redactions.length).toBeGreaterThan(0);
    expect(redactions.every((r) => r.where === 'task' && /^\[[a-z0-9-]+-\d+\]$/i.test(r.placeholder))).toBe(true);
    // The patterns below secretlint's rules name the kind; secretlint's own findings name its rule.
    if (!['private key', 'github token', 'url credentials'].includes(kind)) {
      expect(redactions.map((r) => r.kind)).toContain(kind);
    }
  });

  it('R5.3 the same value gets the same placeholder; numbers count up per value; placeholders are not redacted again', async () => {
    const redactor = new Redactor();
    const out = await redactor.redact('a@example.com, b@example.com, a@example.com', 'task');
    expect(out).toBe('[email-address-1], [email-address-2], [email-address-1]');
    expect(redactor.redactions).toEqual([
      { kind: 'email address', placeholder: '[email-address-1]', where: 'task' },
      { kind: 'email address', placeholder: '[email-address-2]', where: 'task' },
      { kind: 'email address', placeholder: '[email-address-1]', where: 'task' },
    ]);
    expect(await redactor.redact(out, 'again')).toBe(out);
  });

  it('R5.3 words, ids and amounts are left alone', async () => {
    const text =
      'Tax is 8% on $39.90; order 2026-11-30 #12345; internationalization_and_localization_guide; run-42/tax-rate-1';
    const { out, redactions } = await redact(text);
    expect(out).toBe(text);
    expect(redactions).toEqual([]);
  });

  it('R5.3 a long token is a secret only when it mixes letters and digits and is random enough', async () => {
    expect((await redact('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1')).out).toBe('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1');
    expect((await redact('abcdefghijklmnopqrstuvwxyzabcdef')).out).toBe('abcdefghijklmnopqrstuvwxyzabcdef');
    expect((await redact('Zx8Qw2Er5Ty7Ui1Op3As9Df4')).out).toBe('[high-entropy-token-1]');
  });

  it('R5.3 every string of a structure is redacted with its path; structural fields are kept as written', async () => {
    const redactor = new Redactor();
    const out = await redactDeep(
      {
        type: 'message/user',
        at: '2026-11-30T10:00:00.000Z',
        status: 'jane@example.com',
        content: 'mail jane@example.com',
        events: [{ text: 'call +44 20 7946 0958' }, 7, null, true],
      },
      redactor,
    );
    expect(out).toEqual({
      type: 'message/user',
      at: '2026-11-30T10:00:00.000Z',
      status: 'jane@example.com',
      content: 'mail [email-address-1]',
      events: [{ text: 'call [phone-number-2]' }, 7, null, true],
    });
    expect(redactor.redactions.map((r) => r.where)).toEqual(['content', 'events[0].text']);
    expect(await redactDeep('sk-abcdefghijklmnop1234', new Redactor())).toBe('[api-key-1]');
  });

  it("49.7 a run's own ids are kept wherever they appear; an id built from personal data is not", async () => {
    const own = 'run-6f1e2d3c-4b5a-4987-8a6b-5c4d3e2f1a0b';
    const child = `${own}/research-1`;
    const chosen = 'alice@example.com-run';
    const redactor = await Redactor.keeping([own, child, chosen]);
    const text = `${child} asked ${chosen} for sk-abcdefghijklmnop1234 on behalf of ${own}`;
    const out = await redactor.redact(text, 'task');
    expect(out).toBe(`${child} asked [email-address-2]-run for [api-key-1] on behalf of ${own}`);
    // Without it, the UUID's digits read as a phone number and the whole id as a high-entropy token.
    expect(await new Redactor().redact(own, 'id')).not.toContain(own);
  });
});
