// Package webui serves Engram's memory inspector: a small web application,
// built into the binary, where the person whose memory it is (or a
// developer debugging an answer) sees, searches, corrects and erases what
// the store holds, runs a Recall and reads its trace, and browses the
// knowledge graph.
//
// The application is static HTML, CSS and one plain JavaScript module
// (static/), with no framework and nothing fetched from another origin. It
// works through the HTTP API (package httpapi), so every action has the
// API's validation and tenant isolation: the browser calls /ui/api/v1/...,
// which this package hands to the API as /v1/... with the bearer token of
// the signed-in session. The admin routes (/v1/admin/...: store-wide
// backup, export, stats, compaction and flushes) are not handed on: they
// answer 403 admin_route, so a browser signed in with an admin token
// reaches only its tenant's data, as with any other token.
//
// Signing in: the login form posts a bearer token once. The server keeps
// it, with a random session id in an HttpOnly, SameSite=Strict cookie and a
// CSRF token the page reads from /ui/session, in memory: the token never
// appears in a URL, a log or the page, and a restart signs everyone out.
// Every request that changes state must carry the CSRF token in a header
// and, when the browser names one, a same-origin Origin. Every response has
// a strict Content-Security-Policy (scripts and styles from this origin
// only, no inline code), so text from the store can never run as code
// even if a view mishandled it.
package webui
