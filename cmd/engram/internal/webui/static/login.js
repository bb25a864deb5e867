// login.js shows the "token not accepted" message after a failed login
// (the server redirects to /ui/login?failed=1) and focuses the token field.
// It is a separate file because the Content-Security-Policy forbids inline
// scripts.
"use strict";
(function () {
  var failed = new URLSearchParams(window.location.search).get("failed") === "1";
  var err = document.getElementById("login-error");
  if (err) {
    err.hidden = !failed;
  }
  var token = document.getElementById("token");
  if (token) {
    token.focus();
  }
})();
