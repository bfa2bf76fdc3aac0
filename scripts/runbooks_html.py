#!/usr/bin/env python3
"""docs/runbooks.md -> the HTML page the agent serves at GET /runbooks.

Run by the build (api/CMakeLists.txt): python3-markdown (Debian's
python3-markdown) with tables and fenced code; every heading gets GitHub's
anchor (lower case, punctuation other than - and _ dropped, spaces to -), so
a rule's runbook_url (#<alert name in lower case>) opens the same section
here, on GitHub and in the installed doc.
Usage: runbooks_html.py IN.md OUT.html
"""
import html
import re
import sys

import markdown


def github_slug(value, separator="-"):
    return re.sub(r"[^\w\- ]", "", value.strip().lower()).replace(" ", separator)


def main():
    src, out = sys.argv[1], sys.argv[2]
    text = open(src, encoding="utf-8").read()
    body = markdown.markdown(
        text,
        extensions=["tables", "fenced_code", "toc"],
        extension_configs={"toc": {"slugify": github_slug, "permalink": False}},
    )
    title = html.escape(text.splitlines()[0].lstrip("# ").strip() or "sysobs runbooks")
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<title>{title}</title>\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52em;margin:1em auto;"
        "padding:0 1em;color:#222}code,pre{font:13px ui-monospace,monospace;"
        "background:#f4f4f4}pre{padding:.6em;overflow-x:auto}h3{border-top:1px solid #ddd;"
        "padding-top:.6em}:target{background:#fff6d0}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.2em .5em}</style>\n"
        "</head><body>\n" + body + "\n</body></html>\n"
    )
    with open(out, "w", encoding="utf-8") as f:
        f.write(page)


if __name__ == "__main__":
    main()
