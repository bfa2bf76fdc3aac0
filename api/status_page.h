/* SPDX-License-Identifier: MIT */
/*
 * The status page served at GET /: api/status_page.html, embedded in the
 * binary at build time, with the agent's version and host name filled in.
 * The page draws itself from the JSON API in the browser
 * (docs/status_page.md says why it is not rendered here).
 */
#ifndef SYSOBS_STATUS_PAGE_H
#define SYSOBS_STATUS_PAGE_H

struct buf;

/* Appends the page to b, @VERSION@ and @HOST@ replaced by version and
 * hostname (HTML-escaped; NULL reads as ""). Out of memory sets b->oom. */
void status_page_render(struct buf *b, const char *version, const char *hostname);

#endif
