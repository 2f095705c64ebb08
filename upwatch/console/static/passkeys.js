// Passkeys (docs/passkeys.md). A form marked data-passkey stays hidden without this script
// (its note says why); with it, submitting the form asks the server for the ceremony's
// options, lets the browser make or use the passkey, and posts the browser's answer with the
// form, as an ordinary form post. Its texts are the page's, in the visitor's language: the
// form's data-waiting, data-checking, data-cancelled, data-failed (with "%(reason)s") and
// data-none attributes, and the note's data-unsupported.
(function () {
  "use strict";

  function bytes(text) {
    var padded = text.replace(/-/g, "+").replace(/_/g, "/");
    padded += "====".slice((padded.length + 3) % 4 + 1);
    var raw = atob(padded);
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) { out[i] = raw.charCodeAt(i); }
    return out.buffer;
  }

  function text(buffer) {
    if (!buffer) { return null; }
    var view = new Uint8Array(buffer);
    var raw = "";
    for (var i = 0; i < view.length; i++) { raw += String.fromCharCode(view[i]); }
    return btoa(raw).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function descriptors(list) {
    return (list || []).map(function (d) {
      return { type: d.type, id: bytes(d.id), transports: d.transports };
    });
  }

  function creation(options) {
    options.challenge = bytes(options.challenge);
    options.user.id = bytes(options.user.id);
    options.excludeCredentials = descriptors(options.excludeCredentials);
    return options;
  }

  function request(options) {
    options.challenge = bytes(options.challenge);
    options.allowCredentials = descriptors(options.allowCredentials);
    return options;
  }

  function answer(credential) {
    var r = credential.response;
    var response = { clientDataJSON: text(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = text(r.attestationObject);
      response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      response.authenticatorData = text(r.authenticatorData);
      response.signature = text(r.signature);
      response.userHandle = text(r.userHandle);
    }
    return {
      id: credential.id,
      rawId: text(credential.rawId),
      type: credential.type,
      response: response,
      clientExtensionResults: credential.getClientExtensionResults(),
      authenticatorAttachment: credential.authenticatorAttachment || null
    };
  }

  function options(form) {
    return fetch(form.getAttribute("data-options"), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "X-CSRF-Token": form.elements.csrf.value
      },
      body: "{}"
    }).then(function (response) {
      return response.json().then(function (body) {
        if (!response.ok) { throw new Error(body.detail || body.title || "HTTP " + response.status); }
        return body;
      });
    });
  }

  function ceremony(form, status) {
    var registering = form.getAttribute("data-passkey") === "register";
    status.textContent = form.dataset.waiting;
    options(form)
      .then(function (body) {
        return registering
          ? navigator.credentials.create({ publicKey: creation(body) })
          : navigator.credentials.get({ publicKey: request(body) });
      })
      .then(function (credential) {
        if (!credential) { throw new Error(form.dataset.none); }
        form.elements.credential.value = JSON.stringify(answer(credential));
        status.textContent = form.dataset.checking;
        form.submit();
      })
      .catch(function (error) {
        // NotAllowedError: the person closed the dialog, or it timed out.
        var reason = String(error && error.message ? error.message : error);
        status.textContent = error && error.name === "NotAllowedError"
          ? form.dataset.cancelled
          : form.dataset.failed.replace("%(reason)s", function () { return reason; });
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var supported = !!(window.PublicKeyCredential && navigator.credentials);
    Array.prototype.forEach.call(document.querySelectorAll("[data-passkey-note]"), function (note) {
      if (supported) { note.hidden = true; } else { note.textContent = note.dataset.unsupported; }
    });
    if (!supported) { return; }
    Array.prototype.forEach.call(document.querySelectorAll("form[data-passkey]"), function (form) {
      if (form.getAttribute("data-ready") === "true") { return; }  // the script included twice
      form.setAttribute("data-ready", "true");
      form.hidden = false;
      var status = form.querySelector("[data-passkey-status]");
      form.addEventListener("submit", function (event) {
        event.preventDefault();
        ceremony(form, status);
      });
    });
  });
})();
