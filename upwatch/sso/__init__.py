"""Single sign-on by OpenID Connect (docs/single-sign-on.md): the provider client, the
sign-in flow's cookie, and which account a signed-in person is."""
