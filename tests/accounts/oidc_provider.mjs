// A real OpenID provider for the single sign-on tests: panva's oidc-provider (an OpenID
// Certified implementation, an npm devDependency in package.json), on 127.0.0.1.
//
//   node tests/accounts/oidc_provider.mjs PORT CLIENT_ID CLIENT_SECRET REDIRECT_URI[,...]
//
// One confidential client (client_secret_basic), PKCE required. Its built-in development
// login form takes any login name with any password; the name decides the person:
//   - the subject is the name, the e-mail is the part before any "~" at example.com
//     ("dave~2" is another subject with dave@example.com);
//   - a name starting with "unverified" has email_verified false;
//   - a name starting with "admin" is in the group "upwatch-admins" (scope "groups").
// Consent is taken as given (a first-party client), so the login form is the only page.
// Its signing key is made at each start, so a restart is a key rotation.
// Prints "ready ISSUER" once it listens; the test waits for that line.

import { generateKeyPairSync, randomUUID } from 'node:crypto';

import Provider from 'oidc-provider';

const [port, clientId, clientSecret, redirectUris] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

function claimsOf(login) {
  return {
    sub: login,
    email: `${login.split('~')[0]}@example.com`,
    email_verified: !login.startsWith('unverified'),
    given_name: login.split('~')[0],
    family_name: 'Tester',
    groups: login.startsWith('admin') ? ['upwatch-admins', 'staff'] : ['staff'],
  };
}

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: redirectUris.split(','),
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    email: ['email', 'email_verified'],
    profile: ['given_name', 'family_name'],
    groups: ['groups'],
  },
  async findAccount(ctx, id) {
    return { accountId: id, async claims() { return claimsOf(id); } };
  },
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope(ctx.oidc.params.scope);
    await grant.save();
    return grant;
  },
  cookies: { keys: ['upwatch-test-provider-cookie-key'] },
  features: { devInteractions: { enabled: true } },
});

// What went wrong, for the test's report (never a secret: error codes and descriptions).
for (const event of ['grant.error', 'authorization.error', 'server_error', 'userinfo.error']) {
  provider.on(event, (ctx, error) => {
    console.log(`${event}: ${error.error ?? ''} ${error.error_description ?? error.message} ${error.error_detail ?? ""}`);
  });
}

const server = provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
