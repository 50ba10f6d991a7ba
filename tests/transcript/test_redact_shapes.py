"""Today's key shapes (learnt from gitleaks' and detect-secrets' rule sets): Stripe (keys,
webhook secrets), Slack (app tokens, webhooks), Google (OAuth tokens, client secrets), npm,
PyPI, Hugging Face, SendGrid, Databricks, Twilio, Mailgun, Shopify, DigitalOcean, Doppler,
Anthropic, OpenAI, GitHub, GitLab, Atlassian, Linear, Vercel, Supabase, Sentry, Grafana,
Postman, New Relic, Discord and Telegram bots; the signatures of pre-signed URLs (AWS, GCS,
Azure SAS); a kubeconfig's ``client-key-data`` and ``token:``; a secret under ``_meta.auth``;
a percent-encoded bearer token. And what looks like one and is none: prose ("Bearer
authentication", "sk-learn-compatible", "key-value store"), placeholders (``Bearer <token>``).

The fake keys are made here, at run time, from a seeded generator: this file holds nothing a
secret scanner would take for a key."""

from __future__ import annotations

import base64
import random
import re
import string
from typing import Any

import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.wire import WireModel
from acp_proxy.transcript.hiding import _KEY_SHAPES
from acp_proxy.transcript.redact import Redactor
from acp_proxy.transcript.secrets import KEY_SHAPES

T = "2026-01-01T00:00:00.000000Z"
_RANDOM = random.Random(57)
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"


def made(prefix: str, length: int, alphabet: str = ALNUM) -> str:
    """A fake key: ``prefix`` and ``length`` characters drawn from ``alphabet``, with a digit,
    a capital and a small letter among them (as a real key has; those of the alphabet)."""
    kinds = [[c for c in alphabet if c in kind]
             for kind in (string.digits, string.ascii_uppercase, string.ascii_lowercase)]  # fmt: skip
    some = [_RANDOM.choice(kind) for kind in kinds if kind]
    body = [_RANDOM.choice(alphabet) for _ in range(length - len(some))] + some
    _RANDOM.shuffle(body)
    return prefix + "".join(body)


def fake_keys() -> dict[str, str]:
    """One fake key of each shape, its name: each beginning joined from two pieces."""
    return {
        "stripe secret": made("sk" + "_live_", 24),
        "stripe restricted": made("rk" + "_live_", 99),
        "stripe test": made("sk" + "_test_", 24),
        "slack app": "xa"
        + "pp-1-"
        + made("A0", 9, string.ascii_uppercase + string.digits)
        + "-"
        + "".join(_RANDOM.choice(string.digits) for _ in range(13))
        + "-"
        + made("", 64, string.hexdigits.lower()),
        "google oauth": made("ya" + "29.a0", 150, URLSAFE),
        "google client secret": made("GOC" + "SPX-", 28, URLSAFE),
        "npm": made("npm" + "_", 36),
        "pypi": made("pypi" + "-AgEIcHlwaS5vcmc", 120, URLSAFE),
        "hugging face": made("hf" + "_", 34),
        "sendgrid": made("SG" + ".", 22, URLSAFE) + made(".", 43, URLSAFE),
        "stripe webhook": made("wh" + "sec_", 32),
        "databricks": made("da" + "pi", 32, HEX),
        "twilio": made("S" + "K", 32, HEX),
        "mailgun": made("key" + "-", 32, HEX),
        **{
            f"shopify {kind}": made("shp" + kind + "_", 32, HEX)
            for kind in ("at", "ss", "ca", "pa")
        },
        **{f"digitalocean {kind}": made("do" + kind + "_v1_", 64, HEX) for kind in "por"},
        "doppler": made("dp" + ".pt.", 43),
        "anthropic": made("sk-" + "ant-api03-", 93, URLSAFE) + "AA",
        "openai project": made("sk-" + "proj-", 156, URLSAFE),
        "openai service account": made("sk-" + "svcacct-", 156, URLSAFE),
        **{f"github {kind}": made("gh" + kind + "_", 36) for kind in "psour"},
        "gitlab": made("gl" + "pat-", 20, URLSAFE),
        "atlassian": made("ATA" + "TT3", 180, URLSAFE + "="),
        "linear": made("lin" + "_api_", 40),
        **{f"vercel {kind}": made("vc" + kind + "_", 56, URLSAFE) for kind in "piark"},
        "supabase": made("sb" + "p_", 40, HEX),
        "supabase secret": made("sb" + "_secret_", 31, URLSAFE),
        "sentry org": made("sntr" + "ys_eyJ", 150, ALNUM + "+/") + made("_", 43, ALNUM + "+/"),
        "sentry user": made("sntr" + "yu_", 64, HEX),
        "grafana service account": made("gl" + "sa_", 32) + made("_", 8, HEX),
        "grafana cloud": made("gl" + "c_", 60, ALNUM + "+/") + "=",
        "postman": made("PM" + "AK-", 24, HEX) + made("-", 34, HEX),
        "new relic": made("NR" + "AK-", 27, string.ascii_uppercase + string.digits),
        "discord bot": discord_token(),
        "telegram bot": "".join(_RANDOM.choice(string.digits[1:]) for _ in range(10))
        + ":A"
        + made("A", 33, URLSAFE),
    }


def discord_token() -> str:
    """A Discord bot token's shape: its user id (18 digits) in base64, a dot, 6, a dot, 38."""
    user = "".join(_RANDOM.choice(string.digits[1:]) for _ in range(18))
    head = base64.b64encode(user.encode()).decode().rstrip("=")
    return head + made(".", 6, URLSAFE) + made(".", 38, URLSAFE)


def frame(redactor: Redactor, value: dict[str, Any]) -> bytes:
    """A frame as a redaction stores it."""
    raw = orjson.dumps(value)
    stored, _ = redactor.frame(WireModel().feed("agent", parse_frame(raw), 1, T))
    return stored.raw


def said(text: str) -> dict[str, Any]:
    """An agent's message chunk saying ``text``."""
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": update}}  # fmt: skip


def test_todays_key_shapes_are_hidden_in_text_stderr_fields_and_urls() -> None:
    """Each shape: in a message, in the agent's stderr, as a JSON field's value (whatever its
    name), in a command, after ``=`` and in quotes; the words around it kept."""
    redactor = Redactor()
    for name, key in fake_keys().items():
        for text in (f"your key is {key} ok", f"export TOKEN_X={key}", f'config = "{key}"',
                     f"curl -d 'k={key}' https://x"):  # fmt: skip
            hidden = redactor.string(text)
            assert key not in hidden and "[redacted:" in hidden, (name, text)
            assert hidden.startswith(text[:6]), (name, hidden)
            assert key.encode() not in redactor.text(text.encode()), (name, text)
        stored = frame(redactor, said(f"here: {key}"))
        assert key.encode() not in stored and b"here: [redacted:" in stored, name
        stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"data": key}})
        assert key.encode() not in stored, name


def test_a_slack_webhook_keeps_its_host_and_hides_its_path() -> None:
    redactor = Redactor()
    path = "/".join((made("T", 10, string.ascii_uppercase + string.digits),
                     made("B", 10, string.ascii_uppercase + string.digits), made("", 24)))  # fmt: skip
    url = f"https://hooks.slack.com/services/{path}"
    for text in (f"posting to {url} now", url):
        hidden = redactor.string(text)
        assert path not in hidden and "https://hooks.slack.com/services/[redacted:" in hidden
    stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"url": url}})
    assert path.encode() not in stored, stored


def test_the_signatures_of_pre_signed_urls_are_hidden() -> None:
    """AWS (X-Amz-Signature), GCS (X-Goog-Signature), S3's older Signature, an Azure SAS's
    sig: in a url field, in a message, in stderr; the rest of the URL (where it points, when
    it expires) kept."""
    redactor = Redactor()
    hex_signature = made("", 64, "0123456789abcdef")
    azure_signature = made("", 43, ALNUM + "+/") + "="
    urls = {
        f"https://b.s3.amazonaws.com/k.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260101T000000Z"
        f"&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={hex_signature}": hex_signature,
        f"https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=900"
        f"&X-Goog-Signature={hex_signature[::-1]}": hex_signature[::-1],
        f"https://b.s3.amazonaws.com/k?Expires=1700000000&Signature={azure_signature}": azure_signature,
        f"https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2026-01-02T00%3A00%3A00Z"
        f"&sr=b&sp=r&sig={azure_signature.replace('+', '%2B').replace('/', '%2F').replace('=', '%3D')}":
        azure_signature.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
    }  # fmt: skip
    for url, signature in urls.items():
        for hidden in (redactor.url(url), redactor.string(f"fetch {url} then"),
                       redactor.text(f"GET {url} 200".encode()).decode()):  # fmt: skip
            assert signature not in hidden and "redacted-" in hidden, hidden
            assert ("X-Amz-Expires=3600" in hidden) == ("X-Amz-Expires=3600" in url), hidden
            assert ("sp=r&" in hidden) == ("sp=r&" in url), hidden
        stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"uri": url}})
        assert signature.encode() not in stored, url
    for kept in ("see https://example.com/design?sig_version=2 and ?signal=on",
                 "https://x/?designsig=abc"):  # fmt: skip
        assert redactor.string(kept) == kept


def test_a_kubeconfig_client_key_and_a_secret_under_meta_auth_are_hidden() -> None:
    """A kubeconfig read by the agent: its ``client-key-data`` (base64 of a private key) and
    ``token:`` lines; ``_meta.auth`` (a string or an object) but not the protocol's
    ``clientCapabilities.auth`` nor a ``_meta`` opt-in flag."""
    redactor = Redactor()
    pem = ("-----BEGIN RSA " + "PRIVATE KEY-----\n" + made("MIIE", 60, ALNUM + "+/") + "\n"
           "-----END RSA " + "PRIVATE KEY-----\n")  # fmt: skip
    key_data = base64.b64encode(pem.encode()).decode()
    user_token = made("", 40)
    kubeconfig = (
        "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n"
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n"
        f"    client-key-data: {key_data}\n"
        "- name: ci\n  user:\n"
        f"    token_file: /var/run/token\n    auth_token: {user_token}\n"
    )
    result = {"content": kubeconfig}
    stored = frame(redactor, {"jsonrpc": "2.0", "id": 3, "result": result})
    assert key_data[:40].encode() not in stored and user_token.encode() not in stored, stored
    assert b"client-key-data: [redacted:" in stored and b"token_file: /var/run/token" in stored
    secret = made("", 32)
    for meta in ({"auth": secret}, {"auth": {"kind": "basic", "value": secret}},
                 {"vendor": {"_auth": secret}}):  # fmt: skip
        params: dict[str, Any] = {"sessionId": "s", "prompt": [], "_meta": meta}
        request = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}
        assert secret.encode() not in frame(redactor, request), meta
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True},
                                                     "_meta": {"terminal-auth": True}}}}  # fmt: skip
    stored = frame(redactor, initialize)
    assert b'"auth":{"terminal":true}' in stored and b'"terminal-auth":true' in stored


def test_a_percent_encoded_bearer_token_is_hidden() -> None:
    redactor = Redactor()
    token = made("", 32, URLSAFE)
    for text in (f"GET /cb?header=Bearer%20{token} HTTP/1.1",
                 f"https://x/?h=Authorization%3A%20Bearer%20{token}&x=1"):  # fmt: skip
        hidden = redactor.string(text)
        assert token not in hidden and "Bearer%20[redacted:" in hidden, hidden
        assert token.encode() not in redactor.text(text.encode())


def test_prose_that_only_looks_like_a_key_is_kept() -> None:
    """What people write about keys is no key: kept as it is, in a message and in stderr."""
    redactor = Redactor()
    for text in (
        "Bearer authentication is described in RFC 6750.",
        "Use Bearer authentication, or Bearer tokens.",
        "Send it as a Bearer token-based header; bearer e.g. a JWT.",
        "The model is sk-learn-compatible and sk-learn-friendly.",
        "the task_live_updates flag, a disk-backed-cache, npm_config_cache, hf_hub_download",
        "SG.stop() then hooks.slack.com is documented",
        "see ya29.html; the signature of foo(a, b) is short",
    ):
        assert redactor.string(text) == text, text
        assert redactor.text(text.encode()) == text.encode(), text
    stored = frame(redactor, {"jsonrpc": "2.0", "id": 1, "result": {"signature": "def f(a)"}})
    assert b'"signature":"def f(a)"' in stored


def test_a_kubeconfig_token_line_is_hidden_in_a_message_and_prose_about_tokens_is_kept() -> None:
    """A config file's one-word key (``token:``, ``password:``) first on its line, its value
    made (letters and digits, 16 or more): hidden in a message, as in stderr. The same words
    in prose, or with a value that is written (a count, words), are kept."""
    redactor = Redactor()
    token, password = made("", 40), made("", 24, URLSAFE)
    kubeconfig = ("apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user:\n"
                  f"    token: {token}\n- name: db\n  user:\n    password: \"{password}\"\n")  # fmt: skip
    for text in (kubeconfig, f"Here is the file:\n```yaml\n{kubeconfig}```\n"):
        stored = frame(redactor, said(text))
        assert token.encode() not in stored and password.encode() not in stored, stored
        assert b"    token: [redacted:" in stored and b"- name: ci" in stored, stored
    for kept in (
        "token: 5 (count)",
        "Token: see below",
        "Password: at least 12 characters, with a digit",
        "key: value\nsecret: <your secret>\ntoken: ${TOKEN}\npassword: changeme",
        "token: gpt-4o-mini",
        "the token: 0123456789abcdefABCDEF (inline, in a sentence)",
        "tokens: 128000",
    ):
        assert redactor.string(kept) == kept, kept


def test_documentation_placeholders_are_kept_where_a_credential_would_be_hidden() -> None:
    """``Bearer <token>``, ``$TOKEN``, ``${TOKEN}``, ``YOUR_TOKEN``, ``xxx...``: after an
    authorization header (in a message, in stderr, in a curl command, as an argument), after
    a secret name, and as a key shape's body. The real thing beside them is hidden."""
    redactor = Redactor()
    for placeholder in ("<token>", "<YOUR_API_KEY>", "$TOKEN", "${TOKEN}", "YOUR_TOKEN",
                        "your-token-here", "xxx...", "xxxxxxxxxxxxxxxxxxxx", "***"):  # fmt: skip
        for text in (f"Authorization: Bearer {placeholder}",
                     f"send `Authorization: Bearer {placeholder}` with each call",
                     f"curl -H \"Authorization: Bearer {placeholder}\" https://api.example/v1",
                     f"X-Api-Key: {placeholder}", f"export API_TOKEN={placeholder}",
                     f"Authorization: Basic {placeholder}"):  # fmt: skip
            assert redactor.string(text) == text, text
            assert redactor.text(text.encode()) == text.encode(), text
        argv = ["curl", "-H", f"Authorization: Bearer {placeholder}", "https://api.example"]
        assert redactor.argv(argv) == (argv, []), placeholder
    for text in ("OPENAI_API_KEY is sk-" + "proj-xxxxxxxxxxxxxxxxxxxx, set it",
                 "use Bearer YOUR_ACCESS_TOKEN or Bearer xxxxxxxxxxxxxxxxxxxxxxxx",
                 "ghp_" + "x" * 36 + " stands for a token"):  # fmt: skip
        assert redactor.string(text) == text, text
    real = made("", 32, URLSAFE)
    for text in (f"Authorization: Bearer {real}", f"curl -H 'Authorization: Bearer {real}' x"):
        hidden = redactor.string(text)
        assert real not in hidden and "Bearer [redacted:" in hidden, hidden


def test_a_scheme_before_a_secret_named_value_is_kept_and_the_token_after_it_hidden() -> None:
    """``token: Bearer X`` in stderr, ``X-Api-Token: Bearer X`` in a message: the token is
    the secret, not the scheme (the scheme alone was hidden, and the token kept)."""
    redactor = Redactor()
    token = made("", 24, URLSAFE)
    for text in (f"token: Bearer {token}", f"X-Api-Token: Bearer {token}",
                 f"Authorization: Bearer {token}", f"proxy_auth_token = Basic {token}"):  # fmt: skip
        for hidden in (redactor.string(text), redactor.text(text.encode()).decode()):
            assert token not in hidden and "[redacted:" in hidden, hidden
            assert " Bearer [redacted:" in hidden or " Basic [redacted:" in hidden, hidden


def test_prose_near_the_new_key_shapes_is_kept() -> None:
    """What people write near each shape is no key: its prefix named alone, words that begin
    the same, hex that is no key (a hash), times and ratios, capitals."""
    redactor = Redactor()
    digest = made("", 32, HEX)
    for text in (
        "a key-value store; the key-based lookup; hotkey-" + digest,
        "a dapi-like name, the dapi prefix, dapiVersion=2",
        "SKU1234567890ABCDEF1234567890ABCDEF, SKILL.md, the SK prefix, TASK" + digest,
        "the whsec_ prefix; shpat_ and shpss_ tokens; dop_v1_ tokens; dp.pt. tokens",
        "glc_ and glsa_ tokens, sbp_ keys, lin_api_ keys, PMAK- and NRAK- keys",
        "ATATT3 tokens, vcp_ tokens, sntrys_ tokens",
        f"md5 {digest}, sha1 {made('', 40, HEX)}, commit {made('', 40, HEX)[:12]}",
        "NOTE: MTU.md and ND.TXT; OTOH; meet at 12:00:00; ratio 123456:AAB; port 8080:AA",
    ):
        assert redactor.string(text) == text, text
        assert redactor.text(text.encode()) == text.encode(), text


def test_the_key_shapes_pattern_finds_what_each_shape_finds_in_their_order() -> None:
    """The one pattern (a tree of the shapes' beginnings) finds what the shapes' patterns,
    one after the other, find: the same spans over every fake key and example, in prose."""
    flat = re.compile("|".join(shape.pattern() for shape in KEY_SHAPES))
    text = " and ".join([*fake_keys().values(), *(shape.example for shape in KEY_SHAPES),
                         "Bearer abcdefg1", "sk-ant-" + "x" * 20, "sk-" + "A" * 12])  # fmt: skip
    tree = [match.span() for match in _KEY_SHAPES.finditer(text)]
    assert tree == [match.span() for match in flat.finditer(text)]
    assert len(tree) >= len(KEY_SHAPES) + len(fake_keys()), tree
