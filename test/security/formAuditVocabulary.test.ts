import { describe, expect, it } from 'vitest';
import { SECRET_TERMS, secretConcepts, termLanguages } from '../../src/security/formAuditTerms.js';
import { normaliseText } from '../../src/security/formAuditText.js';
import { findSecretTerm } from '../../src/security/formAuditVocabulary.js';

const concept = (text: string) => findSecretTerm(normaliseText(text))?.concept;

// One phrase per concept and language as a form would write it (not the table's spelling).
const PHRASES: Record<(typeof secretConcepts)[number], Record<(typeof termLanguages)[number], string>> = {
  password: {
    en: 'Your password',
    de: 'Ihr Passwort',
    fr: 'Votre mot de passe',
    es: 'Su contraseña',
    pt: 'Sua senha',
    it: "Parola d'ordine",
    nl: 'Uw wachtwoord',
    zh: '请输入密码',
    ja: 'パスワードを入力',
    ru: 'Введите пароль',
  },
  passcode: {
    en: 'One-time code',
    de: 'Bestätigungscode',
    fr: 'Code de vérification',
    es: 'Código de verificación',
    pt: 'Código de verificação',
    it: 'Codice di verifica',
    nl: 'Verificatiecode',
    zh: '短信验证码',
    ja: '認証コード',
    ru: 'Код подтверждения',
  },
  pin: {
    en: 'PIN',
    de: 'PIN-Nummer',
    fr: 'Code PIN',
    es: 'Código PIN',
    pt: 'Código PIN',
    it: 'Codice PIN',
    nl: 'Pincode',
    zh: '银行卡PIN码',
    ja: '暗証番号',
    ru: 'ПИН-код',
  },
  client_secret: {
    en: 'OAuth client secret',
    de: 'Client-Geheimnis',
    fr: 'Secret client',
    es: 'Secreto del cliente',
    pt: 'Segredo do cliente',
    it: 'Segreto del client',
    nl: 'Clientgeheim',
    zh: '客户端密钥',
    ja: 'クライアントシークレット',
    ru: 'Секрет клиента',
  },
  api_key: {
    en: 'OpenAI API key',
    de: 'API-Schlüssel',
    fr: 'Clé API',
    es: 'Clave API',
    pt: 'Chave de API',
    it: 'Chiave API',
    nl: 'API-sleutel',
    zh: 'API 密钥',
    ja: 'APIキー',
    ru: 'Ключ API',
  },
  private_key: {
    en: 'SSH private key',
    de: 'Privater Schlüssel',
    fr: 'Clé privée',
    es: 'Clave privada',
    pt: 'Chave privada',
    it: 'Chiave privata',
    nl: 'Privésleutel',
    zh: '钱包私钥',
    ja: '秘密鍵',
    ru: 'Закрытый ключ',
  },
  token: {
    en: 'Personal access token',
    de: 'Zugangstoken',
    fr: "Jeton d'accès",
    es: 'Token de acceso',
    pt: 'Token de acesso',
    it: 'Token di accesso',
    nl: 'Toegangstoken',
    zh: '访问令牌',
    ja: 'アクセストークン',
    ru: 'Токен доступа',
  },
  secret: {
    en: 'Webhook secret',
    de: 'Geheimnis',
    fr: 'Secret partagé',
    es: 'Secreto compartido',
    pt: 'Segredo compartilhado',
    it: 'Segreto condiviso',
    nl: 'Gedeeld geheim',
    zh: '签名秘钥',
    ja: 'Webhookのシークレット',
    ru: 'Общий секрет',
  },
  card_number: {
    en: 'Credit card number',
    de: 'Kreditkartennummer',
    fr: 'Numéro de carte',
    es: 'Número de tarjeta',
    pt: 'Número do cartão',
    it: 'Numero della carta',
    nl: 'Kaartnummer',
    zh: '信用卡卡号',
    ja: 'カード番号',
    ru: 'Номер карты',
  },
  cvv: {
    en: 'CVV',
    de: 'Kartenprüfnummer',
    fr: 'Cryptogramme visuel',
    es: 'Código de seguridad',
    pt: 'Código de segurança',
    it: 'Codice di sicurezza',
    nl: 'Beveiligingscode',
    zh: '安全码',
    ja: 'セキュリティコード',
    ru: 'Код безопасности',
  },
  iban: {
    en: 'IBAN',
    de: 'Kontonummer',
    fr: 'Numéro de compte',
    es: 'Número de cuenta',
    pt: 'Número da conta',
    it: 'Numero di conto',
    nl: 'Rekeningnummer',
    zh: '银行账号',
    ja: '口座番号',
    ru: 'Номер счёта',
  },
  ssn: {
    en: 'Social Security number',
    de: 'Sozialversicherungsnummer',
    fr: 'Numéro de sécurité sociale',
    es: 'Número de la Seguridad Social',
    pt: 'Número de Segurança Social',
    it: 'Codice fiscale',
    nl: 'Burgerservicenummer (BSN)',
    zh: '身份证号码',
    ja: 'マイナンバー',
    ru: 'СНИЛС',
  },
};

describe('the secret vocabulary', () => {
  it('has terms for every concept in every language', () => {
    for (const c of SECRET_TERMS)
      for (const language of termLanguages)
        expect(c.terms[language]?.length ?? 0, `${c.concept}/${language}`).toBeGreaterThan(0);
    expect(SECRET_TERMS.map((c) => c.concept)).toEqual(secretConcepts);
  });

  describe.each(Object.entries(PHRASES))('%s', (name, byLanguage) => {
    it.each(Object.entries(byLanguage))('is found in %s: %j', (_language, phrase) => {
      expect(concept(phrase)).toBe(name);
    });
  });

  it.each([
    ['apiKey', 'api_key'],
    ['x_api_key', 'api_key'],
    ['APIKEY', 'api_key'],
    ['userPassword', 'password'],
    ['Benutzerkennwort', 'password'],
    ['pass_word', 'password'],
    ['pa55w0rd', 'password'],
    ['PIN', 'pin'],
    ['cvv2', 'cvv'],
    ['2FA code', 'passcode'],
    ['mot_de_passe', 'password'],
    ['pass', 'password'],
    ['pwd', 'password'],
  ])('finds the term in the identifier %j', (text, expected) => {
    expect(concept(text)).toBe(expected);
  });

  it('reports the most specific concept a text names', () => {
    expect(concept('client_secret')).toBe('client_secret');
    expect(concept('Clave API')).toBe('api_key');
    expect(concept('secret key')).toBe('private_key');
    expect(concept('access token')).toBe('token');
    expect(concept('card security code')).toBe('cvv');
  });

  it.each([
    'Secretary',
    'Passport number',
    'Boarding pass',
    'Pinterest profile',
    'Spinning class',
    'Opinion',
    'Keyboard layout',
    'Sort key',
    'Tokyo office',
    'Escreva sua resenha',
    'Senhor ou senhora',
    'Caribbean island',
    'Ibanez guitar model',
    'Секретарь',
    'Ключевые слова',
    'Card title',
    'Kartenfarbe',
    'Compass heading',
  ])('does not read a secret into the ordinary %j', (text) => {
    expect(concept(text)).toBeUndefined();
  });

  it.each([
    'Maximum tokens',
    'max_tokens',
    'Token count',
    'Tokens per minute',
    'Design tokens',
    'Palabra clave',
    'Palabras clave de búsqueda',
    'Максимальное количество токенов',
    '最大トークン数',
  ])('excuses %j, a term in a reading that is not the secret', (text) => {
    expect(concept(text)).toBeUndefined();
  });

  it('does not let an excused reading cover another hit in the same text', () => {
    expect(concept('Max tokens, and your access token')).toBe('token');
    expect(concept('max_access_token')).toBe('token');
    expect(concept('Palabra clave o clave')).toBe('password');
  });

  it('finds a Latin term spelled wholly in Greek or Cyrillic look-alikes, and leaves real words of those alphabets alone', () => {
    expect(concept('\u03a1\u0399\u039d')).toBe('pin'); // ΡΙΝ
    expect(concept('\u03a4\u039f\u039a\u0395\u039d')).toBe('token'); // ΤΟΚΕΝ
    expect(concept('\u0399\u0392\u0391\u039d number')).toBe('iban'); // ΙΒΑΝ
    expect(concept('\u0421\u0412\u0412')).toBeUndefined(); // Cyrillic СВВ reads "CBB", not CVV
    for (const ordinary of ['Полное имя', 'Секретарь', 'Ключевые слова', 'Όνομα', 'Διεύθυνση'])
      expect(concept(ordinary), ordinary).toBeUndefined();
  });

  it('matches a whole-text term only as the whole text', () => {
    expect(concept('RIB')).toBe('iban');
    expect(concept('Prime rib or fish')).toBeUndefined();
  });
});
