import { describe, expect, it } from 'vitest';
import { normaliseText } from '../../src/security/formAuditText.js';

const spaced = (text: string) => normaliseText(text).spaced.trim();

describe('form field text, normalised', () => {
  it.each([
    ['api_key', 'api key'],
    ['apiKey', 'api key'],
    ['api-key', 'api key'],
    ['API_KEY', 'api key'],
    ['X-Api-Key', 'x api key'],
    ['getAPIKey', 'get api key'],
    ['api.key', 'api key'],
    ['api key', 'api key'],
    ['api\tkey', 'api key'],
  ])('reads the separators and case of %j as words: %j', (text, words) => {
    expect(spaced(text)).toBe(words);
  });

  it('splits letters from a script written without spaces', () => {
    expect(spaced('CVV码')).toBe('cvv 码');
    expect(spaced('PINコード')).toBe('pin コード');
    expect(normaliseText('API密钥').compact).toBe('api密钥');
  });

  it('splits letters from digits, so cvv2 reads as cvv and 2FA as one spelling', () => {
    expect(spaced('cvv2')).toBe('cvv 2');
    expect(spaced('2FA code')).toBe('2 fa code');
    expect(spaced('2fa')).toBe(spaced('2FA'));
  });

  it.each([
    ['Contraseña', 'contrasena'],
    ['API-Schlüssel', 'api schlussel'],
    ['Código de verificação', 'codigo de verificacao'],
    ['clé privée', 'cle privee'],
    ['Straße', 'strasse'],
    ['İBAN', 'iban'],
    ['учётные данные', 'учетные данные'],
  ])('folds case and drops accents of %j: %j', (text, words) => {
    expect(spaced(text)).toBe(words);
  });

  it('keeps the marks of scripts that need them (パスワード keeps its voicing marks)', () => {
    expect(normaliseText('パスワード').compact).toBe('パスワード');
  });

  it.each([
    ['full-width', 'ＰＡＳＳＷＯＲＤ'],
    ['half-width katakana', 'ﾊﾟｽﾜｰﾄﾞ'],
    ['mathematical bold', '𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝'],
    ['circled', 'ⓟⓐⓢⓢⓦⓞⓡⓓ'],
  ])('reads %s forms as the plain letters', (_name, text) => {
    const plain = text === 'ﾊﾟｽﾜｰﾄﾞ' ? 'パスワード' : 'password';
    expect(normaliseText(text).compact).toBe(plain);
  });

  it('drops invisible characters inside a word instead of splitting it there', () => {
    expect(spaced('p\u200bi\u200dn')).toBe('pin');
    expect(spaced('pass\u00adword')).toBe('password');
    expect(spaced('to\u2060ken')).toBe('token');
  });

  it('reads letters spelled out one by one as the word they spell, but not a lone letter', () => {
    expect(spaced('P A S S W O R D')).toBe('password');
    expect(spaced('P.I.N.')).toBe('pin');
    expect(spaced('Is this a PIN')).toBe('is this a pin');
  });

  it('has a compact reading without separators and a leet reading with look-alike digits as letters', () => {
    expect(normaliseText('pass_word').compact).toBe('password');
    expect(normaliseText('pa55w0rd').compact).toBe('pa55w0rd');
    expect(normaliseText('pa55w0rd').leetCompact).toBe('password');
    expect(normaliseText('p@$$word').leetCompact).toBe('password');
    expect(normaliseText('70k3n').leetSpaced).toBe(' token ');
  });

  it('reads a word written wholly in a look-alike alphabet as its skeleton, in the case it was written', () => {
    expect(normaliseText('\u03a1\u0399\u039d code').lookalikeSpaced).toBe(' pln code '); // Greek capitals ΡΙΝ
    expect(normaliseText('\u03a4\u039f\u039a\u0395\u039d').lookalikeCompact).toBe('token'); // ΤΟΚΕΝ
    // A word of that alphabet whose skeleton is not plain Latin stays itself, as do words with no such letter.
    expect(normaliseText('Полное имя').lookalikeSpaced).toBe(' полное имя ');
    expect(normaliseText('Full name').lookalikeSpaced).toBe(' full name ');
  });

  it('tells a word mixing look-alike alphabets from words in one alphabet each', () => {
    expect(normaliseText('\u0440assword').mixedScript).toBe(true); // Cyrillic р
    expect(normaliseText('t\u03bfken').mixedScript).toBe(true); // Greek ο
    expect(normaliseText('пароль').mixedScript).toBe(false);
    expect(normaliseText('API ключ').mixedScript).toBe(false);
    expect(normaliseText('API密钥').mixedScript).toBe(false);
  });
});
