// What a form field may not ask for, by concept and language: the words that
// name a secret in a field's name, title or description. MCP 2026-07-28,
// client/elicitation.mdx: "Servers MUST NOT use form mode elicitation to
// request sensitive information such as passwords, API keys, access tokens, or
// payment credentials", meaning "secrets and credentials that grant access or
// authorize transactions". One table, longer than a module should be, because
// it is data: a reader checks a language by reading its column of terms.
//
// How a term matches (formAuditVocabulary.ts compiles them; terms are
// normalised as the text is, so write them as people do: "API-Schlüssel"):
//   "api key"   these words, in a row ("x-api-key", "apiKey", "API Key")
//   "парол*"    a word that begins so (пароль, пароля, паролем)
//   "#password" the letters anywhere, inside a compound or across separators
//               ("userpassword", "Benutzerpasswort", "pass_word", "pa55w0rd");
//               a term in a script written without spaces (Chinese, Japanese) always matches so
//   "=pass"     the whole text is this ("pass", "Pass", not "boarding pass")
// `except` lists readings that are not the secret: a hit inside one of them
// (the LLM's "max tokens", Spanish "palabra clave", keyword) does not count.

export const secretConcepts = [
  'password',
  'passcode',
  'pin',
  'client_secret',
  'api_key',
  'private_key',
  'token',
  'secret',
  'card_number',
  'cvv',
  'iban',
  'ssn',
] as const;
export type SecretConcept = (typeof secretConcepts)[number];

export const termLanguages = ['en', 'de', 'fr', 'es', 'pt', 'it', 'nl', 'zh', 'ja', 'ru'] as const;
export type TermLanguage = (typeof termLanguages)[number];

export interface ConceptTerms {
  concept: SecretConcept;
  /** How the refusal names it: "asks for {label}". */
  label: string;
  terms: Readonly<Partial<Record<TermLanguage, readonly string[]>>>;
  except?: readonly string[];
}

/** In order: a field that names several is reported by the first (a "client secret" is not just "a secret"). */
export const SECRET_TERMS: readonly ConceptTerms[] = [
  {
    concept: 'password',
    label: 'a password',
    terms: {
      en: ['#password', '#passwd', 'pwd', '=pw', '=pass', '#passphrase'],
      de: ['#passwort', '#kennwort', '#losungswort'],
      fr: ['#motdepasse', 'mots de passe', 'mdp'],
      es: ['#contraseña', 'clave', 'claves'],
      pt: ['senha', 'senhas', '#palavrapasse'],
      it: ["parola d'ordine", "parole d'ordine"],
      nl: ['#wachtwoord', '#paswoord'],
      zh: ['密码', '密碼', '口令'],
      ja: ['パスワード', 'パスフレーズ'],
      ru: ['парол*'],
    },
    except: ['palabra* clave*', 'clave* de busqueda'],
  },
  {
    concept: 'passcode',
    label: 'a passcode or one-time code',
    terms: {
      en: [
        '#passcode',
        'one time code',
        'one time password',
        'otp',
        'totp',
        '2fa',
        'mfa code',
        'verification code',
        'authentication code',
        'authenticator code',
        'access code',
        'recovery code*',
        'backup code*',
        'digit code',
      ],
      de: ['#zugangscode', '#bestatigungscode', '#einmalcode', '#freischaltcode', '#verifizierungscode'],
      fr: ['code de verification', "code d'acces", 'code a usage unique', 'code unique'],
      es: ['codigo de verificacion', 'codigo de acceso', 'codigo de un solo uso'],
      pt: ['codigo de verificacao', 'codigo de acesso', 'codigo de uso unico'],
      it: ['codice di verifica', 'codice di accesso', 'codice monouso'],
      nl: ['#verificatiecode', '#toegangscode', 'eenmalige code'],
      zh: ['验证码', '驗證碼', '动态码', '校验码'],
      ja: ['認証コード', '確認コード', 'ワンタイムコード'],
      ru: ['код* подтвержден*', 'одноразов* код*', 'код* доступа'],
    },
  },
  {
    concept: 'pin',
    label: 'a PIN',
    terms: {
      en: ['pin', 'pins', 'pin code', 'pin number'],
      de: ['#pinnummer', '#pincode', '#geheimzahl'],
      fr: ['code pin', 'code confidentiel'],
      es: ['codigo pin', 'numero pin'],
      pt: ['codigo pin', 'numero pin'],
      it: ['codice pin', 'numero pin'],
      nl: ['#pinnummer', '#pincode'],
      zh: ['PIN码', '个人识别码', '取款密码'],
      ja: ['暗証番号', 'PINコード'],
      ru: ['пин', '#пинкод', 'пин код*'],
    },
  },
  {
    concept: 'client_secret',
    label: 'a client secret',
    terms: {
      en: ['#clientsecret', 'app secret', 'consumer secret', 'api secret'],
      de: ['client geheimnis'],
      fr: ['secret client', 'secret du client', "secret de l'application"],
      es: ['secreto de cliente', 'secreto del cliente'],
      pt: ['segredo do cliente', 'segredo de cliente'],
      it: ['segreto client', 'segreto del client'],
      nl: ['#clientgeheim'],
      zh: ['客户端密钥', '應用程式密鑰'],
      ja: ['クライアントシークレット'],
      ru: ['секрет* клиент*'],
    },
  },
  {
    concept: 'api_key',
    label: 'an API key',
    terms: {
      en: ['#apikey', 'access key', 'consumer key', 'subscription key', 'developer key', 'license key'],
      de: ['#apischlussel', '#zugangsschlussel', '#zugriffsschlussel', '#lizenzschlussel'],
      fr: ['cle api', "cle d'api", 'clef api', "cle d'acces", 'cle de licence'],
      es: ['clave api', 'clave de api', 'clave de acceso', 'clave de licencia'],
      pt: ['chave api', 'chave de api', 'chave da api', 'chave de acesso', 'chave de licenca'],
      it: ['chiave api', "chiave dell'api", 'chiave di accesso', "chiave d'accesso", 'chiave di licenza'],
      nl: ['#apisleutel', '#toegangssleutel', '#licentiesleutel'],
      zh: ['API密钥', 'API金鑰', '访问密钥', '许可证密钥', '激活码'],
      ja: ['APIキー', 'アクセスキー', 'ライセンスキー'],
      ru: ['ключ* api', 'api ключ*', 'ключ* доступа', 'лицензионн* ключ*'],
    },
  },
  {
    concept: 'private_key',
    label: 'a private key',
    terms: {
      en: [
        '#privatekey',
        '#secretkey',
        'ssh key*',
        'pgp key*',
        'gpg key*',
        'signing key*',
        'encryption key*',
        'master key*',
        'seed phrase',
        'recovery phrase',
        'mnemonic phrase',
      ],
      de: [
        'ssh schlussel*',
        'privat* schlussel*',
        '#privatschlussel',
        '#geheimschlussel',
        'geheim* schlussel*',
        '#signaturschlussel',
      ],
      fr: ['cle privee', 'clef privee', 'cle secrete', 'phrase de recuperation'],
      es: ['clave privada', 'clave secreta', 'frase semilla', 'frase de recuperacion'],
      pt: ['chave privada', 'chave secreta', 'frase de recuperacao'],
      it: ['chiave privata', 'chiave segreta', 'frase di recupero'],
      nl: ['#privesleutel', 'prive sleutel', 'geheime sleutel', '#herstelzin'],
      zh: ['私钥', '私鑰', '助记词', '助記詞'],
      ja: ['秘密鍵', 'プライベートキー', '秘密キー'],
      ru: ['закрыт* ключ*', 'приватн* ключ*', 'секретн* ключ*', 'сид фраз*'],
    },
  },
  {
    concept: 'token',
    label: 'an access token',
    terms: {
      // A session cookie (or its id) is the signed-in session itself: a token by another name.
      en: [
        'token',
        'tokens',
        '#accesstoken',
        '#authtoken',
        '#bearertoken',
        '#refreshtoken',
        'bearer',
        'jwt',
        'session cookie*',
        '#sessioncookie',
        'auth* cookie*',
        'cookie value*',
        'session id',
        '#sessionid',
      ],
      de: ['#zugangstoken', '#zugriffstoken', '#sitzungstoken'],
      fr: ['jeton', 'jetons'],
      es: ['token de acceso', 'ficha de acceso'],
      pt: ['token de acesso', 'ficha de acesso'],
      it: ['token di accesso', 'gettone di accesso'],
      nl: ['#toegangstoken'],
      zh: ['令牌', '訪問令牌'],
      ja: ['トークン'],
      ru: ['токен*'],
    },
    // The model's tokens of text (a limit or a count), and a design system's tokens, are not credentials.
    except: [
      'max* token*',
      'min* token*',
      'number of token*',
      'many token*',
      'token* count*',
      'token* limit*',
      'token* budget*',
      'token* usage',
      'token* per',
      'output token*',
      'input token*',
      'context token*',
      'completion token*',
      'prompt token*',
      'design token*',
      'nombre de jeton*',
      'количеств* токен*',
      'максимальн* токен*',
      'лимит* токен*',
      'トークン数',
      '最大トークン',
    ],
  },
  {
    concept: 'secret',
    label: 'a secret or credentials',
    terms: {
      // A security question's answer and a maiden name are asked to prove who someone is: credentials too.
      en: ['secret', 'secrets', 'credential', 'credentials', 'security question*', 'security answer*', 'maiden name'],
      de: ['geheimnis*', '#zugangsdaten', '#anmeldedaten', '#sicherheitsfrage', 'geburtsname der mutter'],
      fr: ['secret', 'secrete', 'secrets', 'identifiants de connexion', 'question de securite', 'nom de jeune fille'],
      es: ['secreto', 'secreta', 'secretos', 'credenciales', 'pregunta de seguridad', 'apellido de soltera'],
      pt: ['segredo', 'segredos', 'credenciais', 'pergunta de seguranca', 'nome de solteira'],
      it: ['segreto', 'segreti', 'credenziali', 'domanda di sicurezza', 'cognome da nubile'],
      nl: ['geheim', '#inloggegevens', '#beveiligingsvraag', 'meisjesnaam'],
      zh: ['密钥', '密鑰', '秘钥', '凭证', '凭据', '憑證', '安全问题', '密保'],
      ja: ['シークレット', '認証情報', '秘密の質問'],
      ru: ['секрет', 'секрета', 'секреты', 'секретн*', 'учетн* данн*', 'контрольн* вопрос*', 'девичь* фамили*'],
    },
  },
  {
    concept: 'card_number',
    label: 'a payment card number',
    terms: {
      en: [
        'card number*',
        '#cardnumber',
        'card no',
        'card num',
        '#creditcard',
        '#debitcard',
        'payment card',
        'cc number',
      ],
      de: ['#kartennummer', '#kreditkarte', '#debitkarte', 'ec karte'],
      fr: ['numero de carte', 'numero de la carte', 'carte bancaire', 'carte de credit', 'carte de debit'],
      es: ['numero de tarjeta', 'numero de la tarjeta', 'tarjeta de credito', 'tarjeta de debito'],
      pt: ['numero do cartao', 'numero de cartao', 'cartao de credito', 'cartao de debito'],
      it: ['numero di carta', 'numero della carta', 'carta di credito', 'carta di debito'],
      nl: ['#kaartnummer', '#creditcard', '#bankpas', '#pasnummer'],
      zh: ['卡号', '卡號', '信用卡', '银行卡', '借记卡'],
      ja: ['カード番号', 'クレジットカード', 'デビットカード'],
      ru: ['номер* карт*', 'кредитн* карт*', 'банковск* карт*', 'дебетов* карт*'],
    },
  },
  {
    concept: 'cvv',
    label: 'a card security code',
    terms: {
      en: ['cvv', 'cvc', 'cvn', 'card verification', 'security code'],
      de: ['#prufnummer', '#prufziffer', '#sicherheitscode'],
      fr: ['cryptogramme', 'code de securite'],
      es: ['codigo de seguridad'],
      pt: ['codigo de seguranca'],
      it: ['codice di sicurezza'],
      nl: ['#beveiligingscode'],
      zh: ['安全码', '安全碼'],
      ja: ['セキュリティコード'],
      ru: ['код* безопасност*'],
    },
  },
  {
    concept: 'iban',
    label: 'a bank account number',
    terms: {
      en: ['iban', 'bank account', 'bank account number', 'routing number', 'sort code'],
      de: ['#kontonummer', '#bankverbindung', '#bankleitzahl'],
      fr: ['=rib', "releve d'identite bancaire", 'numero de compte', 'compte bancaire'],
      es: ['numero de cuenta', 'cuenta bancaria', 'clabe'],
      pt: ['numero da conta', 'numero de conta', 'conta bancaria', '=nib'],
      it: ['numero di conto', 'conto corrente', 'conto bancario'],
      nl: ['#rekeningnummer', '#bankrekening'],
      zh: ['银行账号', '银行帐号', '银行账户', '銀行帳號'],
      ja: ['口座番号', '銀行口座'],
      ru: ['номер* счет*', 'расчетн* счет*', 'банковск* счет*'],
    },
  },
  {
    concept: 'ssn',
    label: 'a social security or national identity number',
    terms: {
      en: ['ssn', 'social security*', 'national insurance number', 'national id number', 'tax identification number'],
      de: ['#sozialversicherungsnummer', '#steueridentifikationsnummer', 'steuer id', '#personalausweisnummer'],
      fr: ['securite sociale', '=nir'],
      es: ['seguridad social', 'nss'],
      pt: ['seguranca social', 'cpf', 'niss'],
      it: ['codice fiscale', 'previdenza sociale'],
      nl: ['bsn', '#burgerservicenummer', '#sofinummer'],
      zh: ['社会保障号', '社保号', '身份证号', '身份證號'],
      ja: ['マイナンバー', '個人番号', '社会保障番号'],
      ru: ['снилс', 'социальн* страхован*'],
    },
  },
];
