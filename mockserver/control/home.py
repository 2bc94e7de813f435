"""The page at `/`: where a new user lands, with links to everything else and a quick start.

JSON for programs and curl; a small HTML page when the client asks for HTML (a browser). The
links are relative to the sandbox prefix the page was asked under, so `/sandbox/team-a/` points
into that sandbox. The quick start names the tokens and the organization of the world it is
asked about, so it is right for custom fixtures too.
"""

import html

import orjson

from mockserver.core.version import __version__

README = "README.md, sections \"The two commands\" and \"Point a client at it\""


def links(prefix):
    return {
        "inspector": f"{prefix}/_mock/ui",
        "api_document": f"{prefix}/openapi.json",
        "api_document_yaml": f"{prefix}/openapi.yaml",
        "control_document": f"{prefix}/_mock/openapi.json",
        "health": "/_mock/health",
    }


def quick_start(base, tokens, org, reveal):
    """Three calls to make first, with a token and the organization of the fixtures. On a mock protected
    by a control token the tokens' values are not shown: they are what lets a caller make a sandbox."""
    ordered = sorted(tokens.values(), key=lambda token: ("Admin" not in token.scopes, token.name))
    token = ordered[0].value if ordered and reveal else "<token>"
    org = org or "<organization id>"
    auth = f"-H 'Authorization: Token {token}'"
    return {
        "tokens": {token.name: {"token": token.value if reveal else None, "scopes": list(token.scopes)}
                   for token in ordered},
        "organization": org,
        "try": [f"curl {auth} {base}/organization",
                f"curl {auth} {base}/organization/{org}/project",
                f"curl {base}/_mock/calls?limit=5"],
        "guide": README,
    }


def document(base, prefix, sandbox, tokens, org, reveal):
    return {"service": "IDP mock server", "version": __version__, "sandbox": sandbox, "base_url": base,
            "links": links(prefix), "quick_start": quick_start(base, tokens, org, reveal)}


def as_json(page):
    return orjson.dumps(page, option=orjson.OPT_INDENT_2)


def as_html(page):
    e = html.escape
    names = {"inspector": "Inspector (calls, deployments, state, scenarios, webhooks)",
             "api_document": "API document (OpenAPI JSON)", "api_document_yaml": "API document (YAML)",
             "control_document": "Control API document (/_mock)", "health": "Health"}
    items = "".join(f'<li><a href="{e(url)}">{e(names[key])}</a> <code>{e(url)}</code></li>'
                    for key, url in page["links"].items() if key in names)
    start = page["quick_start"]
    tokens = "".join(f"<tr><td>{e(name)}</td><td><code>{e(item['token'] or 'not shown')}</code></td>"
                     f"<td>{e(', '.join(item['scopes']))}</td></tr>" for name, item in start["tokens"].items())
    calls = "".join(f"<pre>{e(line)}</pre>" for line in start["try"])
    sandbox = f" — sandbox <code>{e(page['sandbox'])}</code>" if page["sandbox"] else ""
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>IDP mock server</title>"
            f"<meta name=\"viewport\" content=\"width=device-width\">"
            f"<style>body{{font:15px/1.5 system-ui,sans-serif;max-width:760px;margin:32px auto;padding:0 16px}}"
            f"pre,code{{font:13px ui-monospace,monospace}}pre{{background:#8881;padding:8px;overflow-x:auto}}"
            f"td{{padding:2px 12px 2px 0}}</style></head><body>"
            f"<h1>IDP mock server {e(page['version'])}{sandbox}</h1><p>Base URL <code>{e(page['base_url'])}</code></p>"
            f"<ul>{items}</ul><h2 id=\"quick-start\">Quick start</h2>"
            f"<p>Organization <code>{e(start['organization'])}</code>. Tokens (send "
            f"<code>Authorization: Token &lt;token&gt;</code>):</p><table>{tokens}</table>"
            f"<p>Try:</p>{calls}<p>The full guide: {e(start['guide'])}.</p></body></html>").encode()
